import { crc32c as nativeCrc32c } from '@node-rs/crc32';

/**
 * CRC32C (Castagnoli) of `bytes`, continuing from `initial` (0 to start). Native (SSE4.2 / ARMv8 CRC
 * instructions through @node-rs/crc32, shipped as per-platform npm binaries): about 5 GB/s on one core.
 */
export function crc32c(bytes: Uint8Array, initial = 0): number {
  return nativeCrc32c(bytes as Buffer, initial) >>> 0;
}

/** CRC32C's reflected polynomial. */
const POLYNOMIAL = 0x82f63b78;

function gf2Times(matrix: Uint32Array, vector: number): number {
  let sum = 0;
  for (let i = 0; vector !== 0; i++, vector >>>= 1) if ((vector & 1) !== 0) sum ^= matrix[i]!;
  return sum >>> 0;
}

function gf2Square(square: Uint32Array, matrix: Uint32Array): void {
  for (let n = 0; n < 32; n++) square[n] = gf2Times(matrix, matrix[n]!);
}

/**
 * The CRC32C of A followed by B, from `crcA = crc32c(A)`, `crcB = crc32c(B)` and B's length (zlib's
 * crc32_combine, over CRC32C's polynomial): lets a writer checksum B before it knows what precedes it.
 */
export function crc32cCombine(crcA: number, crcB: number, lengthB: number): number {
  if (lengthB <= 0) return crcA >>> 0;
  const even = new Uint32Array(32);
  const odd = new Uint32Array(32);
  odd[0] = POLYNOMIAL;
  for (let n = 1, row = 1; n < 32; n++, row <<= 1) odd[n] = row >>> 0;
  gf2Square(even, odd); // two zero bits
  gf2Square(odd, even); // four zero bits
  let crc = crcA >>> 0;
  let length = lengthB;
  for (;;) {
    gf2Square(even, odd); // first pass: one zero byte
    if (length % 2 === 1) crc = gf2Times(even, crc);
    length = Math.floor(length / 2);
    if (length === 0) break;
    gf2Square(odd, even);
    if (length % 2 === 1) crc = gf2Times(odd, crc);
    length = Math.floor(length / 2);
    if (length === 0) break;
  }
  return (crc ^ crcB) >>> 0;
}
