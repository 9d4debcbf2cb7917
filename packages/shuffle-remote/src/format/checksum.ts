import { crc32c as nativeCrc32c } from '@node-rs/crc32';

/**
 * CRC32C (Castagnoli) of `bytes`, continuing from `initial` (0 to start). Native (SSE4.2 / ARMv8 CRC
 * instructions through @node-rs/crc32, shipped as per-platform npm binaries): about 5 GB/s on one core.
 */
export function crc32c(bytes: Uint8Array, initial = 0): number {
  return nativeCrc32c(bytes as Buffer, initial) >>> 0;
}
