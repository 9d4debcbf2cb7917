import type { BlobReader, BlobWriter } from '../storage/blob-store.js';
import {
  BLOCK_HEADER_BYTES,
  BLOCK_KIND_DATA,
  type BlockKind,
  type Compression,
  compressBlockAsync,
  headerChecksum,
  writeBlockFields,
  writeU32,
} from './block-codec.js';
import { crc32c } from './checksum.js';
import { type ChecksumSpan, ChecksumWorker } from './checksum-worker.js';
import { MERGE_READ_BYTES, MergedLayout, SubpartitionChecksums } from './merged-layout.js';
import { type IndexEntry, type IndexLocation, PartitionIndexBuilder, entryChecksum } from './partition-index.js';

/** One buffer of a subpartition, in order: framed records (data) or one encoded event. */
export interface RegionEntry {
  readonly kind: BlockKind;
  /** The valid bytes. */
  readonly bytes: Uint8Array;
  /** The pooled array behind `bytes`, handed to `recycle` once encoded. */
  readonly buffer?: Uint8Array;
  /** The block's checksum if stored raw (`rawBlockChecksum`), when the producer computed it already. */
  readonly rawChecksum?: number;
}

/** What a producer's sort buffer held when it spilled: `subpartitions[s]` in order, undefined when empty. */
export interface Region {
  readonly subpartitions: readonly (readonly RegionEntry[] | undefined)[];
  /** Sum of the entries' byte lengths. */
  readonly rawBytes: number;
  readonly blocks: number;
}

export interface PartitionFileWriterOptions {
  /** Where the data object goes. */
  readonly blob: BlobWriter;
  readonly numberOfSubpartitions: number;
  readonly compression: Compression;
  /** Receives each entry's pooled buffer once its block is written. */
  readonly recycle?: (buffer: Uint8Array) => void;
  /**
   * A local scratch file: when given, regions are appended there, and `finish()` writes the object to
   * `blob` in one go (`blob.writeWhole`, which it must have), merged subpartition after subpartition
   * (MergedLayout). The writer closes it.
   */
  readonly spill?: BlobWriter & BlobReader & { close(): Promise<void> };
}

/** A region being prepared: its headers (CRCs written last), chunks, and the CRCs known or still to compute (by block). */
interface EncodedRegion {
  readonly headers: Uint8Array;
  readonly chunks: Uint8Array[];
  readonly pooled: Uint8Array[];
  readonly spans: ChecksumSpan[];
  readonly crcs: Uint32Array;
  readonly toCompute: number[];
  /** Per subpartition (and one past the last): its first block and where its blocks start in the region. */
  readonly firstBlock: number[];
  readonly startAt: number[];
  /** Bytes counted in `inFlightBytes` for it: headers and LZ4 outputs. */
  held: number;
}

/** A region encoded and waiting for its turn to be appended. */
interface PreparedRegion {
  readonly chunks: Uint8Array[];
  readonly pooled: Uint8Array[];
  readonly heldBytes: number;
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
/** ...and the next one is not compressed: LZ4 only compresses samples of this many of its blocks... */
const PROBE_BLOCKS = 4;
/** ...of this many bytes each, to decide about the region after it. */
const PROBE_SAMPLE_BYTES = 16 * 1024;

/** The LZ4 work of one region: outputs of whole blocks (by entry index), or only samples to learn whether LZ4 pays. */
interface RegionCompression {
  readonly blocks: (Promise<Uint8Array> | undefined)[];
  readonly samples: { readonly rawBytes: number; readonly output: Promise<Uint8Array> }[];
}

/**
 * Writes one sort-merge partition data object (see partition-index.ts for the layout): each region's
 * blocks clustered by subpartition, then the index and the footer. A region goes through two steps, each
 * in region order: prepare (await its LZ4 output, CRC32C every block, make the index entries) and append
 * (hand the chunks to the blob writer, no concatenation). Region N+1 is prepared while region N is being
 * appended, so the blob's I/O does not wait for the checksums.
 *
 * Compression runs on the libuv thread pool, all blocks of a region at once, so it overlaps the producer.
 * A region of incompressible data makes the next one skip LZ4 but for a few small samples, which decide
 * about the region after it (blocks are kept raw where compression does not help, whatever happens).
 *
 * With a `spill`, regions go to the spill and `finish()` writes the merged object (MergedLayout).
 */
export class PartitionFileWriter {
  private readonly index: PartitionIndexBuilder;
  private readonly target: BlobWriter;
  private readonly checksums: SubpartitionChecksums | undefined;
  /** Compressed payloads and headers of regions prepared and not yet appended; spill bytes being merged. */
  private inFlightBytes = 0;
  private preparing: Promise<unknown> = Promise.resolve();
  /** Regions being prepared asynchronously (LZ4, worker CRCs): a region may be prepared at once only when none is. */
  private asyncPrepares = 0;
  private appending: Promise<unknown> = Promise.resolve();
  /** Where the next prepared region starts. */
  private nextOffset = 0;
  private storedBytes = 0;
  private pendingCompressionBytes = 0;
  private lastRatio = 0;
  private aborted = false;
  /** The upload of the merged object, once `finish()` started it. */
  private merging: Promise<PartitionFileSummary> | undefined;

  constructor(private readonly options: PartitionFileWriterOptions) {
    this.index = new PartitionIndexBuilder(options.numberOfSubpartitions);
    this.target = options.spill ?? options.blob;
    this.checksums = options.spill === undefined ? undefined : new SubpartitionChecksums(options.numberOfSubpartitions);
    if (options.spill !== undefined && options.blob.writeWhole === undefined) {
      throw new Error(`blob writer of ${options.blob.key} cannot write a whole object: it cannot take a spill`);
    }
  }

  /** Memory this writer holds: encoded regions not yet appended, pending compression output, the blob's tail and the index. */
  get bufferedBytes(): number {
    return this.inFlightBytes + this.pendingCompressionBytes + this.target.bufferedBytes + this.index.bufferedBytes;
  }

  get numberOfRegions(): number {
    return this.index.numberOfRegions;
  }

  /**
   * Encodes and appends `region`; resolves once its bytes are handed to the blob store. A region with
   * nothing to wait for (no LZ4, every CRC computable here) behind no region still being prepared is
   * encoded before this returns, and — when the blob takes concurrent appends (a local file) — its
   * write is started before this returns too: a producer that does not yield until its memory is full
   * (a synchronous emit loop) still has every full region being written meanwhile.
   */
  writeRegion(region: Region): Promise<void> {
    const compression = this.startCompression(region);
    const concurrent = this.target.concurrentAppends === true;
    if (compression === undefined && this.asyncPrepares === 0 && !this.aborted) {
      let ready: PreparedRegion | undefined;
      try {
        ready = this.prepareNow(region);
      } catch (error) {
        return Promise.reject(error as Error);
      }
      if (ready !== undefined) return this.track(concurrent ? this.append(ready) : this.appending.then(() => this.append(ready)));
    }
    this.asyncPrepares++;
    const prepared = this.preparing.then(() => this.prepare(region, compression));
    this.preparing = prepared.catch(() => undefined);
    // appends are called in region order (a concurrent blob takes its offsets from that order), each
    // once its region is prepared; a failed append does not hold up the next
    const before = concurrent ? undefined : this.appending;
    const appended = prepared.then(
      async (ready) => {
        this.asyncPrepares--;
        if (before !== undefined) await before;
        return this.append(ready);
      },
      (error: unknown) => {
        this.asyncPrepares--;
        throw error;
      },
    );
    return this.track(appended);
  }

  private track(appended: Promise<void>): Promise<void> {
    this.appending = Promise.all([this.appending, appended.catch(() => undefined)]);
    return appended;
  }

  /** Appends index and footer and completes the object (or, with a spill, writes the merged object). */
  async finish(): Promise<PartitionFileSummary> {
    await this.preparing;
    await this.appending;
    if (this.options.spill !== undefined) return this.finishMerged(this.options.spill);
    const indexOffset = this.nextOffset;
    const { index, location } = this.index.encode(indexOffset);
    await this.options.blob.append([index]);
    const objectBytes = await this.options.blob.complete();
    return { location, objectBytes, storedBytes: this.storedBytes };
  }

  /** Drops the object (and the spill). Idempotent. An upload of the merged object in progress is cut short first. */
  async abort(): Promise<void> {
    this.aborted = true;
    await this.preparing;
    await this.appending;
    await this.merging?.catch(() => undefined);
    try {
      await this.options.blob.abort();
    } finally {
      await this.options.spill?.close();
    }
  }

  private finishMerged(spill: BlobReader & { close(): Promise<void> }): Promise<PartitionFileSummary> {
    this.merging = (async () => {
      const layout = new MergedLayout(this.index, this.checksums!);
      // the read ahead and the piece being sent
      this.inFlightBytes += 2 * MERGE_READ_BYTES;
      try {
        await this.options.blob.writeWhole!(layout.length, (start, end) => layout.body(spill, start, end, () => this.aborted));
      } finally {
        this.inFlightBytes -= 2 * MERGE_READ_BYTES;
        await spill.close();
      }
      return { location: layout.location, objectBytes: layout.length, storedBytes: layout.dataBytes };
    })();
    return this.merging;
  }

  /**
   * Starts LZ4 on the thread pool for every data block worth it (index i is the region's i-th entry) —
   * or, after a region that did not compress, only for a few samples: a region of incompressible data
   * then costs LZ4 about 64 KiB, and the first compressible region after it turns compression back on.
   */
  private startCompression(region: Region): RegionCompression | undefined {
    if (this.options.compression !== 'lz4') return undefined;
    const probing = this.lastRatio > POOR_RATIO;
    const blocks: (Promise<Uint8Array> | undefined)[] = [];
    const samples: RegionCompression['samples'][number][] = [];
    for (const entries of region.subpartitions) {
      for (const entry of entries ?? []) {
        const worth = entry.kind === BLOCK_KIND_DATA && entry.bytes.length >= MIN_COMPRESS_BYTES;
        if (worth && !probing) {
          this.pendingCompressionBytes += entry.bytes.length;
          const promise = compressBlockAsync(entry.bytes);
          promise.catch(() => undefined);
          blocks.push(promise);
          continue;
        }
        blocks.push(undefined);
        if (worth && samples.length < PROBE_BLOCKS) {
          const sample = entry.bytes.subarray(0, PROBE_SAMPLE_BYTES);
          const output = compressBlockAsync(sample);
          output.catch(() => undefined);
          samples.push({ rawBytes: sample.length, output });
        }
      }
    }
    return { blocks, samples };
  }

  /** Prepares a region whose LZ4 outputs are awaited first (in block order), its CRCs computed where ChecksumWorker says. */
  private async prepare(region: Region, compression: RegionCompression | undefined): Promise<PreparedRegion> {
    const outputs: (Uint8Array | undefined)[] = [];
    let failure: unknown;
    for (const pending of compression?.blocks ?? []) {
      // every output is awaited, so none is left unaccounted for when one fails
      outputs.push(pending === undefined ? undefined : await pending.catch((error: unknown) => void (failure ??= error)) ?? undefined);
    }
    const sampled: number[] = [];
    for (const sample of compression?.samples ?? []) sampled.push((await sample.output.catch((error: unknown) => void (failure ??= error)))?.length ?? sample.rawBytes);
    const encoded = this.encode(region, compression, outputs, sampled, failure);
    try {
      const crcs = encoded.crcs;
      if (encoded.toCompute.length > 0) {
        const computed = await ChecksumWorker.shared().compute(encoded.toCompute.map((b) => encoded.spans[b]!));
        encoded.toCompute.forEach((b, k) => (crcs[b] = computed[k]!));
      }
      return this.seal(region, encoded);
    } catch (error) {
      this.release(encoded);
      throw error;
    }
  }

  /**
   * Prepares a region without LZ4 on the calling thread, now; undefined (nothing taken) when some of its
   * CRCs are better computed on the checksum worker (spans in shared memory).
   */
  private prepareNow(region: Region): PreparedRegion | undefined {
    for (const entries of region.subpartitions) {
      for (const entry of entries ?? []) if (entry.rawChecksum === undefined && entry.bytes.buffer instanceof SharedArrayBuffer) return undefined;
    }
    const encoded = this.encode(region, undefined, [], [], undefined);
    try {
      for (const b of encoded.toCompute) encoded.crcs[b] = crc32c(encoded.spans[b]!.bytes, encoded.spans[b]!.initial ?? 0);
      return this.seal(region, encoded);
    } catch (error) {
      this.release(encoded);
      throw error;
    }
  }

  /** Headers (but for their CRCs), chunks and checksum spans of a region, given its LZ4 outputs by entry. */
  private encode(region: Region, compression: RegionCompression | undefined, outputs: readonly (Uint8Array | undefined)[], sampled: readonly number[], failure: unknown): EncodedRegion {
    const headers = new Uint8Array(region.blocks * BLOCK_HEADER_BYTES);
    const encoded: EncodedRegion = { headers, chunks: [], pooled: [], spans: [], crcs: new Uint32Array(region.blocks), toCompute: [], firstBlock: [], startAt: [], held: headers.length };
    const { chunks, pooled, spans, toCompute, firstBlock, startAt } = encoded;
    let position = 0;
    let index = 0;
    let block = 0;
    let compressibleRaw = 0;
    let compressibleStored = 0;
    this.inFlightBytes += headers.length;
    for (const list of region.subpartitions) {
      firstBlock.push(block);
      startAt.push(position);
      for (const entry of list ?? []) {
        const lz4 = outputs[index];
        if (compression?.blocks[index++] !== undefined) {
          this.pendingCompressionBytes -= entry.bytes.length;
          compressibleRaw += entry.bytes.length;
          compressibleStored += Math.min(lz4?.length ?? entry.bytes.length, entry.bytes.length);
        }
        if (entry.buffer !== undefined) pooled.push(entry.buffer);
        const at = block++ * BLOCK_HEADER_BYTES;
        const stored = writeBlockFields(headers, at, entry.kind, entry.bytes, lz4);
        if (stored !== entry.bytes) {
          this.inFlightBytes += stored.length;
          encoded.held += stored.length;
        }
        if (stored === entry.bytes && entry.rawChecksum !== undefined) {
          encoded.crcs[spans.length] = entry.rawChecksum;
          spans.push({ bytes: stored });
        } else {
          toCompute.push(spans.length);
          spans.push({ bytes: stored, initial: headerChecksum(headers, at) });
        }
        chunks.push(headers.subarray(at, at + BLOCK_HEADER_BYTES), stored);
        position += BLOCK_HEADER_BYTES + stored.length;
      }
    }
    firstBlock.push(block);
    startAt.push(position);
    compression?.samples.forEach((sample, k) => {
      compressibleRaw += sample.rawBytes;
      compressibleStored += Math.min(sample.rawBytes, sampled[k]!);
    });
    if (compressibleRaw > 0) this.lastRatio = compressibleStored / compressibleRaw;
    const problem = failure ?? (this.aborted ? new Error('partition file writer aborted') : undefined);
    const tooLarge = position > 0xffff_ffff ? new Error(`region of ${position} bytes is larger than the format's 4 GiB`) : undefined;
    if (problem !== undefined || tooLarge !== undefined) {
      this.release(encoded);
      throw problem ?? tooLarge;
    }
    return encoded;
  }

  /** Writes the CRCs into the headers, adds the region's index entries and takes its place in the object. */
  private seal(region: Region, encoded: EncodedRegion): PreparedRegion {
    const { headers, spans, crcs, firstBlock, startAt } = encoded;
    const regionOffset = this.nextOffset;
    const entries: IndexEntry[] = [];
    for (let s = 0; s < region.subpartitions.length; s++) {
      const first = firstBlock[s]!;
      const end = firstBlock[s + 1]!;
      for (let b = first; b < end; b++) {
        writeU32(headers, b * BLOCK_HEADER_BYTES, crcs[b]!);
        this.checksums?.addBlock(s, BLOCK_HEADER_BYTES + spans[b]!.bytes.length, crcs[b]!);
      }
      const offset = regionOffset + startAt[s]!;
      const length = startAt[s + 1]! - startAt[s]!;
      entries.push({ offset, length, checksum: entryChecksum(offset, length, crcs.subarray(first, end)) });
    }
    this.index.addRegion(entries);
    const position = startAt[startAt.length - 1]!;
    this.nextOffset += position;
    this.storedBytes += position;
    return { chunks: encoded.chunks, pooled: encoded.pooled, heldBytes: encoded.held };
  }

  /** Gives back what a region that will not be appended holds. */
  private release(encoded: EncodedRegion): void {
    this.inFlightBytes -= encoded.held;
    for (const buffer of encoded.pooled) this.options.recycle?.(buffer);
  }

  private async append(region: PreparedRegion): Promise<void> {
    try {
      if (this.aborted) throw new Error('partition file writer aborted');
      await this.target.append(region.chunks);
    } finally {
      this.inFlightBytes -= region.heldBytes;
      // the raw blocks were referenced by the append until now
      for (const buffer of region.pooled) this.options.recycle?.(buffer);
    }
  }
}
