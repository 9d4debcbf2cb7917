import { findMaxLegalValue, findMinLegalValue } from './bisection-search.js';
import type { IndexRange } from './parallelism-and-input-infos.js';

/** What `adjustToClosestLegalParallelism` searches over. */
export interface LegalParallelismSearch {
  /** The data-volume limit that gave `currentParallelism`. */
  readonly currentLimit: number;
  readonly currentParallelism: number;
  readonly minParallelism: number;
  readonly maxParallelism: number;
  /** Smallest limit tried: the smallest subpartition's bytes. */
  readonly minLimit: number;
  /** Largest limit tried: all bytes. */
  readonly maxLimit: number;
  /** The parallelism (range count) a limit gives. */
  readonly parallelismOf: (limit: number) => number;
  /** The ranges a limit gives. */
  readonly rangesOf: (limit: number) => IndexRange[];
}

/**
 * Flink's `adjustToClosestLegalParallelism`: when the ranges cut at the data volume per task give a
 * parallelism outside [min, max], bisect the limit. Below min: the largest limit still giving at least
 * min subtasks, then the smallest limit giving that same parallelism (the smaller the limit, the more
 * even the ranges). Above max: the smallest limit giving at most max subtasks. `undefined` when no limit
 * gives a legal parallelism (the caller then falls back to evenly distributed subpartitions).
 */
export function adjustToClosestLegalParallelism(search: LegalParallelismSearch): IndexRange[] | undefined {
  const { currentLimit, currentParallelism, minParallelism, maxParallelism, minLimit, maxLimit, parallelismOf } = search;
  let limit = currentLimit;
  if (currentParallelism < minParallelism) {
    limit = findMaxLegalValue((value) => parallelismOf(value) >= minParallelism, minLimit, currentLimit);
    const closest = parallelismOf(limit);
    limit = findMinLegalValue((value) => parallelismOf(value) === closest, minLimit, limit);
  } else if (currentParallelism > maxParallelism) {
    limit = findMinLegalValue((value) => parallelismOf(value) <= maxParallelism, currentLimit, maxLimit);
  }
  const parallelism = parallelismOf(limit);
  return parallelism >= minParallelism && parallelism <= maxParallelism ? search.rangesOf(limit) : undefined;
}
