import type { Region, RegionEntry } from '../format/partition-file-writer.js';

/** Bytes an entry takes in memory: its pooled block's capacity, or its bytes (an event). */
export function entryCapacity(entry: RegionEntry): number {
  return entry.buffer?.length ?? entry.bytes.length;
}

/**
 * Cuts `region` into consecutive regions of at most `maxBytes` (entry capacity; an entry larger than
 * that gets a region of its own), walking its entries subpartition after subpartition. Each
 * subpartition's entries keep their order across the pieces, and a reader reads a subpartition's
 * extents region after region, so the pieces read back exactly as the whole region would.
 */
export function splitRegion(region: Region, maxBytes: number): Region[] {
  const pieces: Region[] = [];
  const n = region.subpartitions.length;
  let lists = new Array<RegionEntry[] | undefined>(n);
  let capacity = 0;
  let rawBytes = 0;
  let blocks = 0;
  const cut = (): void => {
    if (blocks > 0) pieces.push({ subpartitions: lists, rawBytes, blocks });
    lists = new Array<RegionEntry[] | undefined>(n);
    capacity = 0;
    rawBytes = 0;
    blocks = 0;
  };
  for (let s = 0; s < n; s++) {
    for (const entry of region.subpartitions[s] ?? []) {
      const size = entryCapacity(entry);
      if (blocks > 0 && capacity + size > maxBytes) cut();
      let list = lists[s];
      if (list === undefined) lists[s] = list = [];
      list.push(entry);
      capacity += size;
      rawBytes += entry.bytes.length;
      blocks++;
    }
  }
  cut();
  return pieces;
}
