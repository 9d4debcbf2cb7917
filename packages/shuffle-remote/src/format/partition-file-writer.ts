import type { BlobWriter } from '../storage/blob-store.js';
import {
  BLOCK_HEADER_BYTES,
  BLOCK_KIND_DATA,
  type BlockKind,
  type Compression,
  compressBlockAsync,
  readU32,
  writeBlockHeader,
} from './block-codec.js';
import { type IndexEntry, type IndexLocation, PartitionIndexBuilder, entryChecksum } from './partition-index.js';

/** One buffer of a subpartition, in order: framed records (data) or one encoded event. */
export interface RegionEntry {
  readonly kind: BlockKind;
  /** The valid bytes. */
  readonly bytes: Uint8Array;
  /** The pooled array behind `bytes`, handed to `recycle` once encoded. */
  readonly buffer?: Uint8Array;
}

/** What a producer's sort buffer held when it spilled: `subpartitions[s]` in order, undefined when empty. */
export interface Region {
  readonly subpartitions: readonly (readonly RegionEntry[] | undefined)[];
  /** Sum of the entries' byte lengths. */
  readonly rawBytes: number;
  readonly blocks: number;
}

export interface PartitionFileWriterOptions {
  readonly blob: BlobWriter;
  readonly numberOfSubpartitions: number;
  readonly compression: Compression;
  /** Receives each entry's pooled buffer once its block is encoded. */
  readonly recycle?: (buffer: Uint8Array) => void;
}

export interface PartitionFileSummary {
  readonly location: IndexLocation;
  /** The whole object: data blocks, index, footer. */
  readonly objectBytes: number;
  /** Data blocks as stored (headers included). */
  readonly storedBytes: number;
}

/** Data blocks smaller than this are never worth compressing. */
const MIN_COMPRESS_BYTES = 128;
/** A region whose blocks shrank less than this is treated as incompressible... */
const POOR_RATIO = 0.92;
/** ...and the next region tries only this many blocks before deciding. */
const PROBE_BLOCKS = 4;

/**
 * Writes one sort-merge partition data object (see partition-index.ts for the layout): each region's
 * blocks clustered by subpartition, then the index and the footer. Regions are encoded one at a time;
 * `writeRegion` calls queue behind each other.
 *
 * Compression runs on the libuv thread pool, all blocks of a region at once, so it overlaps the producer.
 * A region of incompressible data makes the next one probe a few blocks first and skip LZ4 when they do
 * not shrink (blocks are kept raw where compression does not help, whatever happens).
 */
export class PartitionFileWriter {
  private readonly index: PartitionIndexBuilder;
  /** Compressed payloads and headers of the region being appended. */
  private inFlightBytes = 0;
  private queue: Promise<void> = Promise.resolve();
  private storedBytes = 0;
  private pendingCompressionBytes = 0;
  private lastRatio = 0;
  private aborted = false;

  constructor(private readonly options: PartitionFileWriterOptions) {
    this.index = new PartitionIndexBuilder(options.numberOfSubpartitions);
  }

  /** Memory this writer holds: its encode buffer, pending compression output, the blob's tail and the index. */
  get bufferedBytes(): number {
    return this.inFlightBytes + this.pendingCompressionBytes + this.options.blob.bufferedBytes + this.index.bufferedBytes;
  }

  get numberOfRegions(): number {
    return this.index.numberOfRegions;
  }

  /** Encodes and appends `region`; resolves once its bytes are handed to the blob store. */
  writeRegion(region: Region): Promise<void> {
    const compressed = this.startCompression(region);
    const next = this.queue.then(() => this.encode(region, compressed));
    this.queue = next.catch(() => undefined);
    return next;
  }

  /** Appends index and footer and completes the object. */
  async finish(): Promise<PartitionFileSummary> {
    await this.queue;
    const indexOffset = this.options.blob.bytesWritten;
    const { index, location } = this.index.encode(indexOffset);
    await this.options.blob.append([index]);
    const objectBytes = await this.options.blob.complete();
    return { location, objectBytes, storedBytes: this.storedBytes };
  }

  /** Drops the object. Idempotent. */
  async abort(): Promise<void> {
    this.aborted = true;
    await this.queue;
    await this.options.blob.abort();
  }

  /** Starts LZ4 on the thread pool for every data block worth it; index i is the region's i-th entry. */
  private startCompression(region: Region): (Promise<Uint8Array> | undefined)[] | undefined {
    if (this.options.compression !== 'lz4') return undefined;
    const probing = this.lastRatio > POOR_RATIO;
    const out: (Promise<Uint8Array> | undefined)[] = [];
    let launched = 0;
    for (const entries of region.subpartitions) {
      for (const entry of entries ?? []) {
        if (entry.kind === BLOCK_KIND_DATA && entry.bytes.length >= MIN_COMPRESS_BYTES && (!probing || launched < PROBE_BLOCKS)) {
          this.pendingCompressionBytes += entry.bytes.length;
          const promise = compressBlockAsync(entry.bytes);
          promise.catch(() => undefined);
          out.push(promise);
          launched++;
        } else {
          out.push(undefined);
        }
      }
    }
    return out;
  }

  private async encode(region: Region, compressed: (Promise<Uint8Array> | undefined)[] | undefined): Promise<void> {
    const headers = new Uint8Array(region.blocks * BLOCK_HEADER_BYTES);
    const chunks: Uint8Array[] = [];
    const pooled: Uint8Array[] = [];
    const regionOffset = this.options.blob.bytesWritten;
    const entries: IndexEntry[] = [];
    const checksums: number[] = [];
    let position = 0;
    let index = 0;
    let block = 0;
    let compressibleRaw = 0;
    let compressibleStored = 0;
    let held = headers.length;
    this.inFlightBytes += held;
    try {
      for (const list of region.subpartitions) {
        const start = position;
        checksums.length = 0;
        for (const entry of list ?? []) {
          const pending = compressed?.[index++];
          let lz4: Uint8Array | undefined;
          if (pending !== undefined) {
            lz4 = await pending;
            this.pendingCompressionBytes -= entry.bytes.length;
            compressibleRaw += entry.bytes.length;
            compressibleStored += Math.min(lz4.length, entry.bytes.length);
          }
          if (this.aborted) throw new Error('partition file writer aborted');
          const at = block++ * BLOCK_HEADER_BYTES;
          const stored = writeBlockHeader(headers, at, entry.kind, entry.bytes, lz4);
          if (stored !== entry.bytes) {
            this.inFlightBytes += stored.length;
            held += stored.length;
          }
          checksums.push(readU32(headers, at));
          chunks.push(headers.subarray(at, at + BLOCK_HEADER_BYTES), stored);
          position += BLOCK_HEADER_BYTES + stored.length;
          if (entry.buffer !== undefined) pooled.push(entry.buffer);
        }
        const length = position - start;
        const offset = regionOffset + start;
        entries.push({ offset, length, checksum: entryChecksum(offset, length, checksums) });
      }
      if (compressibleRaw > 0) this.lastRatio = compressibleStored / compressibleRaw;
      if (position > 0xffff_ffff) throw new Error(`region of ${position} bytes is larger than the format's 4 GiB`);
      await this.options.blob.append(chunks);
    } finally {
      this.inFlightBytes -= held;
      // the raw blocks were referenced by the append until now
      for (const buffer of pooled) this.options.recycle?.(buffer);
    }
    this.storedBytes += position;
    this.index.addRegion(entries);
  }
}
