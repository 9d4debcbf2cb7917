import {
  type IntermediateResultId,
  type ResultPartitionId,
  validateId,
  validateInteger,
} from './ids.js';
import { isResultPartitionType, type ResultPartitionType } from './result-partition-type.js';
import { invalidArgument } from './shuffle-error.js';

/** Most subpartitions one partition may have (one per consumer subtask). */
export const MAX_SUBPARTITIONS = 32_768;

/**
 * What the engine knows of a result partition before it exists (Flink's PartitionDescriptor). Plain JSON:
 * it crosses process boundaries.
 */
export interface PartitionDescriptor {
  /** The intermediate result (job edge) this partition belongs to. */
  readonly resultId: IntermediateResultId;
  /** `"<resultId>#<partitionIndex>"`. */
  readonly partitionId: ResultPartitionId;
  /** The producer subtask index. */
  readonly partitionIndex: number;
  readonly partitionType: ResultPartitionType;
  /** One per consumer subtask (or per key-group slice for adaptive consumers); at least 1. */
  readonly numberOfSubpartitions: number;
}

/**
 * Checks an untrusted value field by field; throws SHF_ERR_INVALID_ARGUMENT naming the first bad field.
 * `partitionId` must be exactly `"<resultId>#<partitionIndex>"` (docs/DESIGN.md's result partition naming).
 */
export function validatePartitionDescriptor(value: unknown, field = 'partition'): PartitionDescriptor {
  if (typeof value !== 'object' || value === null) throw invalidArgument(field, 'expected an object');
  const v = value as Record<string, unknown>;
  validateId(`${field}.resultId`, v['resultId']);
  validateId(`${field}.partitionId`, v['partitionId']);
  validateInteger(`${field}.partitionIndex`, v['partitionIndex'], 0, 2 ** 31 - 1);
  const expectedId = `${v['resultId'] as string}#${v['partitionIndex'] as number}`;
  if (v['partitionId'] !== expectedId) {
    throw invalidArgument(
      `${field}.partitionId`,
      `${JSON.stringify(v['partitionId'])} does not name partition ${v['partitionIndex'] as number} of ${JSON.stringify(v['resultId'])}; expected ${JSON.stringify(expectedId)} ("<resultId>#<partitionIndex>")`,
    );
  }
  if (!isResultPartitionType(v['partitionType'])) {
    throw invalidArgument(`${field}.partitionType`, `unknown result partition type ${JSON.stringify(v['partitionType'])}`);
  }
  validateInteger(`${field}.numberOfSubpartitions`, v['numberOfSubpartitions'], 1, MAX_SUBPARTITIONS);
  return value as PartitionDescriptor;
}
