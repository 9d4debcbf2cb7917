import { validateInteger } from './ids.js';
import { invalidArgument } from './shuffle-error.js';

/**
 * An inclusive range of subpartition indexes `[start, end]`. A consumer subtask reads the same range
 * of every partition of its input (one subpartition normally; several when adaptive parallelism merged
 * consumers).
 */
export interface SubpartitionRange {
  readonly start: number;
  readonly end: number;
}

export function singleSubpartition(index: number): SubpartitionRange {
  return { start: index, end: index };
}

export function subpartitionRangeLength(range: SubpartitionRange): number {
  return range.end - range.start + 1;
}

/** Checks `range` against a partition of `numberOfSubpartitions`; throws SHF_ERR_INVALID_ARGUMENT. */
export function validateSubpartitionRange(
  range: unknown,
  numberOfSubpartitions: number,
  field = 'subpartitions',
): SubpartitionRange {
  if (typeof range !== 'object' || range === null) throw invalidArgument(field, 'expected {start, end}');
  const r = range as Record<string, unknown>;
  const start = validateInteger(`${field}.start`, r['start'], 0, numberOfSubpartitions - 1);
  const end = validateInteger(`${field}.end`, r['end'], 0, numberOfSubpartitions - 1);
  if (end < start) throw invalidArgument(field, `end ${end} is before start ${start}`);
  return { start, end };
}
