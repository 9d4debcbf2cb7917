import type { DistributionPattern } from '@weft/shuffle-api';
import { invalidEngineArgument } from '../errors/engine-error.js';
import { UPPER_BOUND_MAX_PARALLELISM } from '../keygroups/key-group-range-assignment.js';
import type { ParallelismAndInputInfosRequest } from './parallelism-and-input-infos.js';

/** An input after validation: `broadcast` resolved. */
export interface ResolvedInput {
  readonly distribution: DistributionPattern;
  readonly broadcast: boolean;
  readonly bytes: readonly (readonly number[])[];
}

/** A request after validation: every default resolved, every invariant the decider relies on checked. */
export interface ResolvedParallelismRequest {
  readonly inputs: readonly ResolvedInput[];
  readonly minParallelism: number;
  readonly maxParallelism: number;
  readonly dataVolumePerTaskBytes: number;
  readonly initialParallelism: number | undefined;
  readonly defaultSourceParallelism: number;
}

const REQUEST_KEYS = new Set(['inputs', 'minParallelism', 'maxParallelism', 'dataVolumePerTaskBytes', 'initialParallelism', 'defaultSourceParallelism']);
const INPUT_KEYS = new Set(['distribution', 'broadcast', 'bytes']);
const DISTRIBUTIONS: readonly string[] = ['ALL_TO_ALL', 'POINTWISE'];

/**
 * Checks a `decideParallelismAndInputInfos` request once, before anything is decided. Throws
 * `WEFT_ERR_INVALID_ARGUMENT` whose `context.field` names the offending field, e.g. `request.maxParallelism`
 * or `request.inputs[1].bytes[0][3]`. Unknown keys are refused.
 */
export function validateParallelismRequest(request: ParallelismAndInputInfosRequest): ResolvedParallelismRequest {
  const record = checkRecord('request', request, REQUEST_KEYS);
  const minParallelism = checkInteger('request.minParallelism', record['minParallelism'], 1, UPPER_BOUND_MAX_PARALLELISM);
  const maxParallelism = checkInteger('request.maxParallelism', record['maxParallelism'], 1, UPPER_BOUND_MAX_PARALLELISM);
  if (maxParallelism < minParallelism) {
    throw invalidEngineArgument('request.maxParallelism', `${maxParallelism} is below request.minParallelism ${minParallelism}`);
  }
  const dataVolumePerTaskBytes = checkInteger('request.dataVolumePerTaskBytes', record['dataVolumePerTaskBytes'], 1, Number.MAX_SAFE_INTEGER);
  const initialParallelism =
    record['initialParallelism'] === undefined
      ? undefined
      : checkInteger('request.initialParallelism', record['initialParallelism'], 1, UPPER_BOUND_MAX_PARALLELISM);
  const defaultSourceParallelism =
    record['defaultSourceParallelism'] === undefined
      ? maxParallelism
      : checkInteger('request.defaultSourceParallelism', record['defaultSourceParallelism'], 1, UPPER_BOUND_MAX_PARALLELISM);

  const rawInputs = record['inputs'];
  if (!Array.isArray(rawInputs)) throw invalidEngineArgument('request.inputs', `expected an array (empty for a source vertex), got ${describe(rawInputs)}`);
  const inputs = rawInputs.map((raw: unknown, i) => checkInput(`request.inputs[${i}]`, raw));
  checkSharedSubpartitionCount(inputs);
  checkTotalBytes(inputs);
  return { inputs, minParallelism, maxParallelism, dataVolumePerTaskBytes, initialParallelism, defaultSourceParallelism };
}

function checkInput(field: string, raw: unknown): ResolvedInput {
  const record = checkRecord(field, raw, INPUT_KEYS);
  const distribution = record['distribution'];
  if (typeof distribution !== 'string' || !DISTRIBUTIONS.includes(distribution)) {
    throw invalidEngineArgument(`${field}.distribution`, `expected one of ${DISTRIBUTIONS.join(', ')}, got ${describe(distribution)}`);
  }
  const broadcast = record['broadcast'] ?? false;
  if (typeof broadcast !== 'boolean') throw invalidEngineArgument(`${field}.broadcast`, `expected a boolean, got ${describe(broadcast)}`);
  if (broadcast && distribution === 'POINTWISE') {
    throw invalidEngineArgument(`${field}.broadcast`, 'a POINTWISE input cannot be broadcast (Flink broadcasts over ALL_TO_ALL edges only)');
  }
  const bytes = record['bytes'];
  if (!Array.isArray(bytes) || bytes.length === 0) {
    throw invalidEngineArgument(`${field}.bytes`, `expected a non-empty array of partitions (bytes[p][s]), got ${describe(bytes)}`);
  }
  if (bytes.length > UPPER_BOUND_MAX_PARALLELISM) {
    throw invalidEngineArgument(`${field}.bytes`, `${bytes.length} partitions; at most ${UPPER_BOUND_MAX_PARALLELISM} (a producer's parallelism)`);
  }
  bytes.forEach((partition: unknown, p) => checkPartition(`${field}.bytes[${p}]`, partition));
  const checked = bytes as readonly (readonly number[])[];
  if (broadcast) {
    checked.forEach((partition, p) => {
      if (partition.length !== 1) {
        throw invalidEngineArgument(`${field}.bytes[${p}]`, `a broadcast partition has exactly one subpartition, got ${partition.length}`);
      }
    });
  } else if (distribution === 'ALL_TO_ALL') {
    const count = checked[0]?.length ?? 0;
    checked.forEach((partition, p) => {
      if (partition.length !== count) {
        throw invalidEngineArgument(`${field}.bytes[${p}]`, `has ${partition.length} subpartitions, partition 0 has ${count}: every partition of an ALL_TO_ALL input has the same number`);
      }
    });
  }
  return { distribution: distribution as DistributionPattern, broadcast, bytes: checked };
}

function checkPartition(field: string, partition: unknown): void {
  if (!Array.isArray(partition) || partition.length === 0) {
    throw invalidEngineArgument(field, `expected a non-empty array of subpartition byte counts, got ${describe(partition)}`);
  }
  if (partition.length > UPPER_BOUND_MAX_PARALLELISM) {
    throw invalidEngineArgument(field, `${partition.length} subpartitions; at most ${UPPER_BOUND_MAX_PARALLELISM} (a consumer's max parallelism)`);
  }
  partition.forEach((value: unknown, s) => {
    if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 0) {
      throw invalidEngineArgument(`${field}[${s}]`, `expected a byte count (a safe integer >= 0), got ${describe(value)}`);
    }
  });
}

/** The non-broadcast ALL_TO_ALL inputs are read range by range together: one subpartition count for all. */
function checkSharedSubpartitionCount(inputs: readonly ResolvedInput[]): void {
  let first: { index: number; count: number } | undefined;
  inputs.forEach((input, i) => {
    if (input.broadcast || input.distribution !== 'ALL_TO_ALL') return;
    const count = input.bytes[0]?.length ?? 0;
    if (first === undefined) first = { index: i, count };
    else if (count !== first.count) {
      throw invalidEngineArgument(
        `request.inputs[${i}].bytes`,
        `has ${count} subpartitions per partition, request.inputs[${first.index}] has ${first.count}: the non-broadcast ALL_TO_ALL inputs of a vertex have the same number`,
      );
    }
  });
}

/** Sums stay exact: the bytes of all inputs together are at most 2^53 - 1. */
function checkTotalBytes(inputs: readonly ResolvedInput[]): void {
  let total = 0;
  for (const input of inputs) {
    for (const partition of input.bytes) for (const value of partition) total += value;
    if (!Number.isSafeInteger(total)) throw invalidEngineArgument('request.inputs', 'the bytes of all inputs add up to more than 2^53 - 1');
  }
}

function checkRecord(field: string, value: unknown, keys: ReadonlySet<string>): Record<string, unknown> {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) throw invalidEngineArgument(field, `expected an object, got ${describe(value)}`);
  for (const key of Object.keys(value)) {
    if (!keys.has(key)) throw invalidEngineArgument(`${field}.${key}`, `unknown key; expected one of ${[...keys].join(', ')}`);
  }
  return value as Record<string, unknown>;
}

function checkInteger(field: string, value: unknown, min: number, max: number): number {
  if (typeof value !== 'number' || !Number.isSafeInteger(value)) throw invalidEngineArgument(field, `expected an integer, got ${describe(value)}`);
  if (value < min || value > max) throw invalidEngineArgument(field, `${value} is outside [${min}, ${max}]`);
  return value;
}

function describe(value: unknown): string {
  if (Array.isArray(value)) return value.length === 0 ? 'an empty array' : 'an array';
  if (value === null) return 'null';
  if (typeof value === 'string') return JSON.stringify(value);
  if (typeof value === 'object') return 'an object';
  return String(value);
}
