import { ShuffleError } from '@weft/shuffle-api';
import type { IndexEntry, IndexLocation } from '../format/partition-index.js';

/**
 * The body of a fetch (`GET …/partitions/<p>/data?start=&end=`): the index entries of subpartitions
 * [start, end] exactly as stored (subpartition-major, 16 bytes each, `regions` per subpartition), then
 * the extents of the data object that hold those subpartitions' blocks, in file order — per region the
 * bytes from the range's first non-empty entry to the end of its last, adjacent extents merged. That is
 * the order in which a SubpartitionRangeReader reads them, so a client decodes the stream with one.
 * The response headers below carry the index location; Content-Length covers the whole body.
 */
export const FetchHeader = {
  ATTEMPT: 'x-weft-attempt',
  SUBPARTITIONS: 'x-weft-subpartitions',
  REGIONS: 'x-weft-regions',
  INDEX_OFFSET: 'x-weft-index-offset',
  INDEX_LENGTH: 'x-weft-index-length',
} as const;

/** A contiguous byte range of a data object. */
export interface Extent {
  readonly offset: number;
  readonly length: number;
}

/**
 * The extents holding subpartitions [start, end]: `entries[s - start][region]` as decoded from the index.
 * Throws SHF_ERR_DATA_CORRUPTED when an entry points past the data (`location.indexOffset`).
 */
export function planExtents(entries: readonly (readonly IndexEntry[])[], location: IndexLocation, partitionId: string): Extent[] {
  const extents: Extent[] = [];
  const regions = location.numberOfRegions;
  for (let region = 0; region < regions; region++) {
    let first: IndexEntry | undefined;
    let last: IndexEntry | undefined;
    for (const row of entries) {
      const entry = row[region]!;
      if (entry.length === 0) continue;
      if (entry.offset + entry.length > location.indexOffset) {
        throw new ShuffleError('SHF_ERR_DATA_CORRUPTED', `partition ${partitionId}: an index entry of region ${region} points past the data`, {
          context: { partitionId, region },
        });
      }
      first ??= entry;
      last = entry;
    }
    if (first === undefined || last === undefined) continue;
    const extent = { offset: first.offset, length: last.offset + last.length - first.offset };
    const previous = extents[extents.length - 1];
    if (previous !== undefined && previous.offset + previous.length === extent.offset) {
      extents[extents.length - 1] = { offset: previous.offset, length: previous.length + extent.length };
    } else {
      extents.push(extent);
    }
  }
  return extents;
}
