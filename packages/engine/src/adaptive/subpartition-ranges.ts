import type { IndexRange } from './parallelism-and-input-infos.js';

/**
 * Flink's `computeSubpartitionRanges`: cuts `bytesBySubpartition` into consecutive ranges, greedily,
 * closing a range when adding the next subpartition would pass `limit` bytes or `maxRangeSize`
 * subpartitions. A range always takes at least one subpartition, so one above `limit` stands alone.
 */
export function computeSubpartitionRanges(bytesBySubpartition: readonly number[], limit: number, maxRangeSize: number): IndexRange[] {
  const ranges: IndexRange[] = [];
  let sum = 0;
  let start = 0;
  bytesBySubpartition.forEach((bytes, i) => {
    if (i === start || (sum + bytes <= limit && i - start + 1 <= maxRangeSize)) {
      sum += bytes;
    } else {
      ranges.push({ start, end: i - 1 });
      start = i;
      sum = bytes;
    }
  });
  ranges.push({ start, end: bytesBySubpartition.length - 1 });
  return ranges;
}

/** Flink's `computeParallelism`: how many ranges `computeSubpartitionRanges` would cut, without building them. */
export function countSubpartitionRanges(bytesBySubpartition: readonly number[], limit: number, maxRangeSize: number): number {
  let sum = 0;
  let start = 0;
  let count = 1;
  bytesBySubpartition.forEach((bytes, i) => {
    if (i === start || (sum + bytes <= limit && i - start + 1 <= maxRangeSize)) {
      sum += bytes;
    } else {
      start = i;
      sum = bytes;
      count += 1;
    }
  });
  return count;
}
