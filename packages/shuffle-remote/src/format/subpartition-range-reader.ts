import { ShuffleError } from '@weft/shuffle-api';
import type { BlobReader } from '../storage/blob-store.js';
import {
  BLOCK_HEADER_BYTES,
  BLOCK_KIND_DATA,
  BLOCK_KIND_EVENT,
  BlockDecodeError,
  type BlockHeader,
  CODEC_LZ4,
  checkBlockCodec,
  checksumMismatch,
  checksummedBytes,
  readBlockHeader,
  uncompressBlockAsync,
} from './block-codec.js';
import { readBuffers } from './buffer-pool.js';
import { ChecksumWorker, WorkerReadError } from './checksum-worker.js';
import { type IndexEntry, type IndexLocation, decodeIndexEntries, entryChecksum, indexEntriesRange } from './partition-index.js';

/** One decoded block of the range. `payload` stays valid as long as it is referenced. */
export interface RangeBlock {
  readonly subpartition: number;
  readonly kind: typeof BLOCK_KIND_DATA | typeof BLOCK_KIND_EVENT;
  readonly payload: Uint8Array;
}

export interface SubpartitionRangeReaderOptions {
  readonly reader: BlobReader;
  readonly location: IndexLocation;
  /** Subpartitions [start, end], inclusive. */
  readonly start: number;
  readonly end: number;
  /** Size of one ranged read; one more is read ahead. */
  readonly readBufferBytes: number;
  /** Names the partition in errors. */
  readonly partitionId: string;
}

/** The blocks of one subpartition in one region. */
interface Segment {
  readonly subpartition: number;
  readonly region: number;
  readonly entry: IndexEntry;
}

/** A block taken from the window: its header, where it lies, its stored payload and the CRC to check. */
interface TakenBlock {
  readonly header: BlockHeader;
  readonly segment: Segment;
  readonly block: number;
  readonly stored: Uint8Array;
  readonly check: { readonly bytes: Uint8Array; readonly expected: number };
}

/** A contiguous byte range of the object, covering whole segments. */
interface Extent {
  readonly offset: number;
  readonly length: number;
}

/**
 * Reads subpartitions [start, end] of one partition data object: one ranged read of their index
 * entries, then the regions' bytes for those subpartitions (contiguous in each region, so one extent per
 * region, merged when regions touch), in reads of `readBufferBytes` with one read ahead. Every block's
 * CRC32C and every index entry's checksum is verified; a mismatch is SHF_ERR_DATA_CORRUPTED naming
 * the partition, the block's offset, region and subpartition.
 */
export class SubpartitionRangeReader {
  private readonly segments: Segment[];
  private readonly extents: Extent[];
  private segmentIndex = 0;
  private segmentRemaining = 0;
  private readonly blockChecksums: number[] = [];
  /** An index entry that did not match its blocks, thrown after the blocks' CRCs are checked. */
  private entryError: ShuffleError | undefined;
  private extentIndex = 0;
  private extentDone = 0;
  private prefetch: Promise<{ readonly bytes: Uint8Array; readonly target: Uint8Array }> | undefined;
  /** The read `next()` is waiting for, if any (`release()` waits for it too). */
  private awaited: Promise<unknown> | undefined;
  /** What is left of a read after a straddling block took its head. */
  private rest: Uint8Array | undefined;
  /** Read buffers handed out in blocks: free again at the next `next()` (the caller is done with them). */
  private lent: Uint8Array[] = [];
  private readonly free: Uint8Array[] = [];
  /** Every read buffer this reader took from readBuffers (BufferPool) and has not given back. */
  private readonly owned = new Set<Uint8Array>();
  /** Capacity of a read buffer: readBufferBytes, or less when no extent is that long. */
  private readonly readCapacity: number;
  private released = false;
  private window: Uint8Array = new Uint8Array(0);
  /** File offset of window[0]. */
  private windowOffset = 0;
  private position = 0;
  /** Block start offset -> CRC32C, for blocks the checksum worker computed as it read them (`readBlocks`). */
  private readonly computed = new Map<number, number>();
  /** The worker making this reader's reads since its last read that started at a block boundary. */
  private readWorker: ChecksumWorker | undefined;
  /** This reader's stream on the checksum worker, when it reads through it. */
  private readonly stream = ChecksumWorker.shared().newStream();
  private checkedWhenRead = 0;

  private constructor(
    private readonly options: SubpartitionRangeReaderOptions,
    entries: IndexEntry[][],
  ) {
    const regions = options.location.numberOfRegions;
    this.segments = [];
    this.extents = [];
    for (let region = 0; region < regions; region++) {
      let first: IndexEntry | undefined;
      let last: IndexEntry | undefined;
      for (let s = options.start; s <= options.end; s++) {
        const entry = entries[s - options.start]![region]!;
        if (entry.length === 0) continue;
        this.segments.push({ subpartition: s, region, entry });
        first ??= entry;
        last = entry;
      }
      if (first === undefined || last === undefined) continue;
      const extent = { offset: first.offset, length: last.offset + last.length - first.offset };
      const previous = this.extents[this.extents.length - 1];
      if (previous !== undefined && previous.offset + previous.length === extent.offset) {
        this.extents[this.extents.length - 1] = { offset: previous.offset, length: previous.length + extent.length };
      } else {
        this.extents.push(extent);
      }
    }
    this.segmentRemaining = this.segments[0]?.entry.length ?? 0;
    this.windowOffset = this.extents[0]?.offset ?? 0;
    // a power of two at least as large as the longest extent, so readers of other ranges reuse it
    const longestExtent = this.extents.reduce((longest, extent) => Math.max(longest, extent.length), 0);
    let capacity = 4096;
    while (capacity < longestExtent && capacity < options.readBufferBytes) capacity *= 2;
    this.readCapacity = Math.min(options.readBufferBytes, capacity);
    options.reader.plan?.(this.extents);
  }

  /** Blocks so far whose CRC32C the checksum worker computed as it read them (the rest were computed after the read). */
  get blocksCheckedWhenRead(): number {
    return this.checkedWhenRead;
  }

  /** Reads the index entries of the range and plans the reads. */
  static async open(options: SubpartitionRangeReaderOptions): Promise<SubpartitionRangeReader> {
    const { location, start, end } = options;
    if (location.numberOfRegions === 0) return new SubpartitionRangeReader(options, []);
    const range = indexEntriesRange(location, start, end);
    const bytes = await options.reader.read(range.offset, range.length);
    const entries = decodeIndexEntries(bytes, location, start, end);
    const reader = new SubpartitionRangeReader(options, entries);
    reader.checkEntries();
    return reader;
  }

  /**
   * The next decoded blocks (at least one), in file order; null once the range is exhausted. Checksums
   * are verified here; LZ4 payloads of one batch are decoded in parallel on the libuv thread pool.
   */
  async next(): Promise<RangeBlock[] | null> {
    this.reclaim();
    const out: RangeBlock[] = [];
    const taken: TakenBlock[] = [];
    while (out.length === 0) {
      if (this.segmentIndex >= this.segments.length) return null;
      if (!(await this.fill(BLOCK_HEADER_BYTES))) throw this.corrupted('the object ends inside a block header');
      // take every whole block the window holds; their CRCs are checked together below
      try {
        for (;;) {
          if (this.segmentIndex >= this.segments.length) break;
          const available = this.window.length - this.position;
          if (available < BLOCK_HEADER_BYTES) break;
          if (this.segmentRemaining < BLOCK_HEADER_BYTES) throw this.corrupted('index entry shorter than a block header');
          const header = readBlockHeader(this.window, this.position);
          const blockBytes = BLOCK_HEADER_BYTES + header.storedLength;
          if (blockBytes > this.segmentRemaining) throw this.corrupted(`block of ${blockBytes} bytes overruns its index entry`);
          if (available < blockBytes) {
            if (out.length > 0) break;
            if (!(await this.fill(blockBytes))) throw this.corrupted('the object ends inside a block');
            continue;
          }
          taken.push(this.take(header));
          out.push({ subpartition: taken[taken.length - 1]!.segment.subpartition, kind: header.kind as RangeBlock['kind'], payload: taken[taken.length - 1]!.stored });
        }
      } catch (error) {
        // a block before the malformed one that fails its CRC is the first corruption
        await this.checkChecksums(taken);
        throw error;
      }
    }
    await this.checkChecksums(taken);
    const entryError = this.entryError;
    this.entryError = undefined;
    if (entryError !== undefined) throw entryError;
    await this.decompress(taken, out);
    return out;
  }

  /**
   * Checks the taken blocks' CRC32Cs: against the CRC the worker computed as it read the block, else
   * computed now (on the checksum worker when worth it); SHF_ERR_DATA_CORRUPTED naming the first bad one.
   */
  private async checkChecksums(taken: readonly TakenBlock[]): Promise<void> {
    const actual = new Array<number>(taken.length);
    const rest: number[] = [];
    taken.forEach((t, i) => {
      const crc = this.computed.get(t.block);
      if (crc === undefined) {
        rest.push(i);
        return;
      }
      this.computed.delete(t.block);
      this.checkedWhenRead++;
      actual[i] = crc;
    });
    if (rest.length > 0) {
      const crcs = await ChecksumWorker.shared().compute(rest.map((i) => taken[i]!.check));
      rest.forEach((i, k) => (actual[i] = crcs[k]!));
    }
    const index = taken.findIndex((t, i) => actual[i] !== t.check.expected >>> 0);
    if (index < 0) return;
    const bad = taken[index]!;
    throw this.corruptedAt(checksumMismatch(bad.check.expected, actual[index]!).message, bad.block, bad.segment);
  }

  /** LZ4 payloads of one batch, decoded in parallel on the libuv thread pool, once their CRCs held. */
  private async decompress(taken: readonly TakenBlock[], out: RangeBlock[]): Promise<void> {
    const pending: { index: number; promise: Promise<Uint8Array> }[] = [];
    taken.forEach((t, index) => {
      if (t.header.codec !== CODEC_LZ4) return;
      const promise = uncompressBlockAsync(t.stored, t.header);
      promise.catch(() => undefined);
      pending.push({ index, promise });
    });
    for (const { index, promise } of pending) {
      try {
        out[index] = { ...out[index]!, payload: await promise };
      } catch (error) {
        // the other decodes read this batch's buffers: they end before the buffers may go back to the pool
        await Promise.allSettled(pending.map((p) => p.promise));
        if (error instanceof BlockDecodeError) throw this.corruptedAt(error.message, taken[index]!.block, taken[index]!.segment);
        throw error;
      }
    }
  }

  /** Checks the structure of the block at `position` and moves past it; its CRC is left to check. */
  private take(header: BlockHeader): TakenBlock {
    try {
      if (header.kind !== BLOCK_KIND_DATA && header.kind !== BLOCK_KIND_EVENT) throw new BlockDecodeError(`unknown block kind ${header.kind}`);
      checkBlockCodec(header);
    } catch (error) {
      if (error instanceof BlockDecodeError) throw this.corrupted(error.message);
      throw error;
    }
    const segment = this.segments[this.segmentIndex]!;
    const blockBytes = BLOCK_HEADER_BYTES + header.storedLength;
    const taken: TakenBlock = {
      header,
      segment,
      block: this.windowOffset + this.position,
      stored: this.window.subarray(this.position + BLOCK_HEADER_BYTES, this.position + blockBytes),
      check: { bytes: checksummedBytes(this.window, this.position, header), expected: header.checksum },
    };
    this.blockChecksums.push(header.checksum);
    this.position += blockBytes;
    this.segmentRemaining -= blockBytes;
    if (this.segmentRemaining === 0) this.endSegment();
    return taken;
  }

  private endSegment(): void {
    const { entry, region, subpartition } = this.segments[this.segmentIndex]!;
    const actual = entryChecksum(entry.offset, entry.length, this.blockChecksums);
    this.blockChecksums.length = 0;
    if (actual !== entry.checksum) {
      // reported once the blocks' own CRCs are checked: a corrupt block is named as such
      this.entryError ??= new ShuffleError(
        'SHF_ERR_DATA_CORRUPTED',
        `partition ${this.options.partitionId}: index entry of subpartition ${subpartition} in region ${region} does not match its blocks`,
        { context: { partitionId: this.options.partitionId, region, subpartition, block: entry.offset } },
      );
    }
    this.segmentIndex++;
    const next = this.segments[this.segmentIndex];
    this.segmentRemaining = next?.entry.length ?? 0;
    if (next !== undefined) {
      const nextPosition = next.entry.offset - this.windowOffset;
      if (nextPosition !== this.position) {
        // the next segment starts a new extent, whose first read comes next
        if (this.position !== this.window.length || this.rest !== undefined) throw this.corrupted('index entries overlap');
        this.window = new Uint8Array(0);
        this.windowOffset = next.entry.offset;
        this.position = 0;
      }
    }
  }

  /**
   * Makes at least `bytes` bytes available from `position`; false when the range has no more. A block
   * straddling two reads is joined by copying just that block; the rest of the new read is used in place.
   */
  private async fill(bytes: number): Promise<boolean> {
    while (this.window.length - this.position < bytes) {
      const chunk = this.rest ?? (await this.readChunk());
      this.rest = undefined;
      if (chunk === undefined) return false;
      const left = this.window.length - this.position;
      this.windowOffset += this.position;
      if (left === 0) {
        this.window = chunk;
        this.position = 0;
        continue;
      }
      const take = Math.min(chunk.length, bytes - left);
      const joined = this.bytes(left + take);
      joined.set(this.window.subarray(this.position), 0);
      joined.set(chunk.subarray(0, take), left);
      this.window = joined;
      this.position = 0;
      if (take < chunk.length) this.rest = chunk.subarray(take);
    }
    return true;
  }

  /** The next read of the range (and starts the one after it), or undefined when all are done. */
  private async readChunk(): Promise<Uint8Array | undefined> {
    const pending = this.prefetch ?? (this.hasMorePieces() ? this.readPiece() : undefined);
    this.prefetch = undefined;
    if (pending === undefined) return undefined;
    this.awaited = pending;
    let landed;
    try {
      landed = await pending;
    } finally {
      if (this.awaited === pending) this.awaited = undefined;
    }
    const { bytes: chunk, target } = landed;
    // from here on the caller's blocks may view this buffer
    this.lent.push(target);
    if (this.hasMorePieces()) {
      this.prefetch = this.readPiece();
      this.prefetch.catch(() => undefined);
    }
    return chunk;
  }

  private hasMorePieces(): boolean {
    const extent = this.extents[this.extentIndex];
    return extent !== undefined && (this.extentDone < extent.length || this.extentIndex + 1 < this.extents.length);
  }

  /** Starts the next read: pieces of at most readBufferBytes, extent after extent. */
  private readPiece(): Promise<{ readonly bytes: Uint8Array; readonly target: Uint8Array }> {
    let extent = this.extents[this.extentIndex]!;
    if (this.extentDone >= extent.length) {
      this.extentIndex++;
      this.extentDone = 0;
      extent = this.extents[this.extentIndex]!;
    }
    const length = Math.min(this.readCapacity, extent.length - this.extentDone);
    const offset = extent.offset + this.extentDone;
    const fresh = this.extentDone === 0;
    this.extentDone += length;
    if (this.released) throw new Error('SubpartitionRangeReader read after release()');
    const target = this.free.pop() ?? this.takeBuffer();
    const file = this.options.reader.file;
    // a read that starts at a block boundary goes to the least busy worker; one that continues a block, to where it began
    const worker = fresh || this.readWorker === undefined ? (this.readWorker = ChecksumWorker.leastBusy()) : this.readWorker;
    if (file === undefined || !(target.buffer instanceof SharedArrayBuffer) || !worker.readsFiles) {
      return this.options.reader.read(offset, length, target).then((bytes) => ({ bytes, target }));
    }
    // the worker reads the piece and checksums each block right after reading it, while in its cache
    const read = worker.readBlocks({ fd: file.fd, position: offset, length, target, stream: this.stream, fresh, last: !this.hasMorePieces() });
    return file.hold(read).then(
      ({ filled, crcs }) => {
        if (filled < length) throw file.truncated(offset, length, filled);
        for (const [block, crc] of crcs) this.computed.set(block, crc);
        return { bytes: target.subarray(0, length), target };
      },
      (error: unknown) => {
        if (error instanceof WorkerReadError) throw file.failed(error);
        // the worker is gone: this read, and the ones after it, as any other
        return this.options.reader.read(offset, length, target).then((bytes) => ({ bytes, target }));
      },
    );
  }

  /**
   * Returns read buffers to the free list. Called when the caller asks for more blocks, which means
   * (InputGate contract) it no longer uses the views it was given; the buffers behind the current
   * window and the rest of a read are still in use.
   */
  private reclaim(): void {
    const keep: Uint8Array[] = [];
    for (const buffer of this.lent) {
      if (buffer.buffer === this.window.buffer || buffer.buffer === this.rest?.buffer) keep.push(buffer);
      else if (this.free.length < 2) this.free.push(buffer);
      else this.giveBack(buffer);
    }
    this.lent = keep;
  }

  /**
   * Gives every read buffer back to readBuffers (BufferPool), once the reads in flight (the one a pending
   * `next()` waits for, the one ahead) have landed; the reader is not used after this. Called when the
   * caller is done with the blocks (range exhausted, gate closed or failed).
   */
  async release(): Promise<void> {
    this.released = true;
    await Promise.all([this.awaited?.catch(() => undefined), this.prefetch?.catch(() => undefined)]);
    this.prefetch = undefined;
    this.lent = [];
    this.free.length = 0;
    this.window = new Uint8Array(0);
    this.rest = undefined;
    for (const buffer of this.owned) this.giveBack(buffer);
  }

  private takeBuffer(): Uint8Array {
    const buffer = readBuffers.take(this.readCapacity, this.options.reader.sharedTargets === true);
    this.owned.add(buffer);
    return buffer;
  }

  private giveBack(buffer: Uint8Array): void {
    this.owned.delete(buffer);
    readBuffers.give(buffer);
  }

  /** A read buffer: in shared memory when the reader fills it cheaply there, so the checksum worker verifies it in place. */
  private bytes(length: number): Uint8Array {
    return this.options.reader.sharedTargets === true ? new Uint8Array(new SharedArrayBuffer(length)) : new Uint8Array(length);
  }

  private checkEntries(): void {
    const limit = this.options.location.indexOffset;
    for (const { entry, region, subpartition } of this.segments) {
      if (entry.offset + entry.length > limit) {
        throw new ShuffleError(
          'SHF_ERR_DATA_CORRUPTED',
          `partition ${this.options.partitionId}: index entry of subpartition ${subpartition} in region ${region} points past the data`,
          { context: { partitionId: this.options.partitionId, region, subpartition } },
        );
      }
    }
  }

  private corrupted(problem: string): ShuffleError {
    return this.corruptedAt(problem, this.windowOffset + this.position, this.segments[this.segmentIndex]);
  }

  private corruptedAt(problem: string, block: number, segment: Segment | undefined): ShuffleError {
    return new ShuffleError(
      'SHF_ERR_DATA_CORRUPTED',
      `partition ${this.options.partitionId}: block at byte ${block}` +
        (segment === undefined ? '' : ` (region ${segment.region}, subpartition ${segment.subpartition})`) +
        ` is corrupt: ${problem}`,
      {
        context: {
          partitionId: this.options.partitionId,
          block,
          ...(segment === undefined ? {} : { region: segment.region, subpartition: segment.subpartition }),
        },
      },
    );
  }
}
