import type { KeyValue } from '../api/functions.js';
import { keyHashCode } from '../runtime/key-hash.js';

/**
 * The hash partition of `key` among `partitions` at recursion `level` of a hybrid hash join: its
 * Java-style hash code, mixed with murmur3's fmix32 after adding a per-level seed, so partitions are
 * independent of key groups (which use the same hash code) and each level splits a partition of the
 * level above anew. Keys with equal hash codes stay together at every level.
 */
export function joinPartitionOf(key: KeyValue, partitions: number, level = 0): number {
  let h = (keyHashCode(key) + Math.imul(level, 0x9e3779b9)) | 0;
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  h ^= h >>> 16;
  return (h >>> 0) % partitions;
}
