/**
 * The hashes of a hybrid hash join, over a key's bytes from the default serializer (equal keys, equal
 * bytes): `joinKeyHash` once per record, FNV-1a finished with murmur3's fmix32; `joinPartitionOf` the hash
 * partition at recursion `level`, the hash mixed again after adding a per-level seed, so each level splits
 * a partition of the level above anew (keys of one hash stay together at every level). Independent of key
 * groups, which hash the JS key (Java's hashCode): the records of one subtask would otherwise share
 * their low bits.
 */
export function joinKeyHash(bytes: Uint8Array): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < bytes.length; i++) h = Math.imul(h ^ (bytes[i] as number), 0x01000193);
  return fmix32(h);
}

export function joinPartitionOf(hash: number, partitions: number, level: number): number {
  return (fmix32((hash + Math.imul(level + 1, 0x9e3779b9)) | 0) >>> 0) % partitions;
}

function fmix32(h: number): number {
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  return h ^ (h >>> 16);
}
