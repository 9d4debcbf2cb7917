/**
 * Flink's `BisectionSearchUtils`: the smallest (or largest) integer in `[low, high]` that `isLegal`
 * accepts, for a predicate that is monotone on that range; -1 when the end that should be legal is not.
 * Used by the decider to find the data-volume limit whose subpartition ranges give a legal parallelism.
 */
export function findMinLegalValue(isLegal: (value: number) => boolean, low: number, high: number): number {
  if (!isLegal(high)) return -1;
  while (low <= high) {
    const mid = midpoint(low, high);
    if (isLegal(mid)) high = mid - 1;
    else low = mid + 1;
  }
  return high + 1;
}

/** The largest integer in `[low, high]` that `isLegal` accepts (monotone, legal at `low`); -1 when `low` is not. */
export function findMaxLegalValue(isLegal: (value: number) => boolean, low: number, high: number): number {
  if (!isLegal(low)) return -1;
  while (low <= high) {
    const mid = midpoint(low, high);
    if (isLegal(mid)) low = mid + 1;
    else high = mid - 1;
  }
  return low - 1;
}

/** Java's `(low + high) / 2` on non-negative longs, without leaving the safe-integer range. */
function midpoint(low: number, high: number): number {
  return low + Math.floor((high - low) / 2);
}
