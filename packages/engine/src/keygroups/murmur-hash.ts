/** Murmur3's 32-bit finalizer (Flink's `MathUtils.bitMix`), on int32. */
export function bitMix(value: number): number {
  let h = value | 0;
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  h ^= h >>> 16;
  return h;
}

/**
 * Flink's `MathUtils.murmurHash(int)`: one Murmur3 round of an int32 and the finalizer, made non-negative
 * (`Integer.MIN_VALUE` → 0). Returns an integer in [0, 2^31).
 */
export function murmurHash(code: number): number {
  let h = Math.imul(code | 0, 0xcc9e2d51);
  h = (h << 15) | (h >>> 17);
  h = Math.imul(h, 0x1b873593);
  h = (h << 13) | (h >>> 19);
  h = (Math.imul(h, 5) + 0xe6546b64) | 0;
  h ^= 4;
  h = bitMix(h);
  if (h >= 0) return h;
  return h === -2147483648 ? 0 : -h;
}

/** Flink's `MathUtils.roundUpToPowerOfTwo(int)` for x in [1, 2^30]. */
export function roundUpToPowerOfTwo(x: number): number {
  let v = (x - 1) | 0;
  v |= v >> 1;
  v |= v >> 2;
  v |= v >> 4;
  v |= v >> 8;
  v |= v >> 16;
  return v + 1;
}
