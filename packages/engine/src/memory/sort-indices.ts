/** Runs shorter than this are sorted by insertion before the merge passes. */
const INSERTION_RUN = 16;

/**
 * Sorts `order[0..n)` (record indices) by `compare`, stable, in place — a bottom-up merge sort through
 * `scratch` (at least `n` long), so the caller keeps both arrays from one sort to the next: V8's own
 * `TypedArray.prototype.sort(compare)` allocates two work arrays of `n` elements (8 bytes each) on the
 * JS heap per call, which a sort spilling run after run leaves as large-object garbage. Returns the
 * array that holds the result (`order` or `scratch`).
 */
export function sortIndices(order: Uint32Array, scratch: Uint32Array, n: number, compare: (a: number, b: number) => number): Uint32Array {
  for (let lo = 0; lo < n; lo += INSERTION_RUN) {
    const hi = Math.min(n, lo + INSERTION_RUN);
    for (let i = lo + 1; i < hi; i++) {
      const item = order[i] as number;
      let j = i - 1;
      while (j >= lo && compare(order[j] as number, item) > 0) {
        order[j + 1] = order[j] as number;
        j--;
      }
      order[j + 1] = item;
    }
  }
  let from = order;
  let to = scratch;
  for (let width = INSERTION_RUN; width < n; width *= 2) {
    for (let lo = 0; lo < n; lo += 2 * width) {
      const mid = Math.min(n, lo + width);
      const hi = Math.min(n, lo + 2 * width);
      let i = lo;
      let j = mid;
      let k = lo;
      if (mid >= hi || compare(from[mid - 1] as number, from[mid] as number) <= 0) {
        // already in order (or a lone run): copy
        to.set(from.subarray(lo, hi), lo);
        continue;
      }
      while (i < mid && j < hi) to[k++] = compare(from[j] as number, from[i] as number) < 0 ? (from[j++] as number) : (from[i++] as number);
      while (i < mid) to[k++] = from[i++] as number;
      while (j < hi) to[k++] = from[j++] as number;
    }
    const t = from;
    from = to;
    to = t;
  }
  return from;
}
