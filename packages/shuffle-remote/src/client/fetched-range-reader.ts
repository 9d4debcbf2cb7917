import { ShuffleError } from '@weft/shuffle-api';
import { type IndexLocation, decodeIndexEntries, indexEntriesRange } from '../format/partition-index.js';
import { type Extent, planExtents } from '../protocol/fetch-layout.js';
import type { BlobReader } from '../storage/blob-store.js';
import { ChunkCursor } from '../storage/chunk-cursor.js';

export interface FetchedRangeReaderOptions {
  /** The fetch response body. */
  readonly body: AsyncIterable<Uint8Array> & { destroy(error?: Error): unknown };
  readonly location: IndexLocation;
  readonly start: number;
  readonly end: number;
  readonly partitionId: string;
}

/**
 * A BlobReader over one fetch response, for a SubpartitionRangeReader: the stream carries the range's
 * index entries and then its extents (protocol/fetch-layout.ts), which is exactly the sequence of reads
 * a SubpartitionRangeReader makes. Each `read(offset, length, into?)` is checked against that sequence
 * and served from the stream: copied into `into` when given (the reader recycles its buffers), else a
 * view into the received chunk when it lies inside one, else one copy.
 * A stream that ends early, or runs on after the last extent, is SHF_ERR_DATA_CORRUPTED.
 */
export class FetchedRangeReader implements BlobReader {
  private readonly cursor: ChunkCursor;
  private extents: Extent[] | undefined;
  private extentIndex = 0;
  private extentDone = 0;
  private pending: Promise<unknown> = Promise.resolve();
  private ended = false;

  constructor(private readonly options: FetchedRangeReaderOptions) {
    this.cursor = new ChunkCursor(
      options.body,
      () =>
        new ShuffleError('SHF_ERR_DATA_CORRUPTED', `the fetch of partition ${options.partitionId} ended before its data did`, {
          context: { partitionId: options.partitionId },
        }),
    );
  }

  read(offset: number, length: number, into?: Uint8Array): Promise<Uint8Array> {
    const next = this.pending.then(() => this.readInOrder(offset, length, into));
    this.pending = next.catch(() => undefined);
    return next;
  }

  /** True when every byte of the stream was read and nothing followed. */
  async finished(): Promise<boolean> {
    await this.pending;
    return this.cursor.atEnd();
  }

  async close(): Promise<void> {
    if (this.ended) return;
    this.ended = true;
    this.options.body.destroy();
  }

  private async readInOrder(offset: number, length: number, into: Uint8Array | undefined): Promise<Uint8Array> {
    const { location, start, end, partitionId } = this.options;
    if (this.extents === undefined) {
      const range = indexEntriesRange(location, start, end);
      if (offset !== range.offset || length !== range.length) throw this.outOfOrder(offset, length);
      const entries = await this.cursor.take(length, into);
      this.extents = planExtents(decodeIndexEntries(entries, location, start, end), location, partitionId);
      return entries;
    }
    let extent = this.extents[this.extentIndex];
    if (extent !== undefined && this.extentDone === extent.length) {
      this.extentIndex++;
      this.extentDone = 0;
      extent = this.extents[this.extentIndex];
    }
    if (extent === undefined || offset !== extent.offset + this.extentDone || length > extent.length - this.extentDone) throw this.outOfOrder(offset, length);
    const bytes = await this.cursor.take(length, into);
    this.extentDone += length;
    return bytes;
  }

  private outOfOrder(offset: number, length: number): ShuffleError {
    return new ShuffleError('SHF_ERR_DATA_CORRUPTED', `partition ${this.options.partitionId}: a read of ${length} bytes at ${offset} is not the next range of its fetch`, {
      context: { partitionId: this.options.partitionId, block: offset },
    });
  }
}
