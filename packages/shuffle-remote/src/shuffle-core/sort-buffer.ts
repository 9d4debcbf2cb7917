import { RecordFramer } from '@weft/shuffle-api';
import { BLOCK_KIND_DATA, BLOCK_KIND_EVENT, rawHeaderChecksum } from '../format/block-codec.js';
import { writeBlocks } from '../format/buffer-pool.js';
import { crc32c, crc32cCombine } from '../format/checksum.js';
import type { Region, RegionEntry } from '../format/partition-file-writer.js';

/** Smallest block the sort buffer shrinks to when a partition has very many subpartitions. */
export const MIN_BLOCK_BYTES = 512;

/**
 * A block being filled is checksummed this many bytes at a time, as they are written (the records just
 * copied there are in the core's cache still), rather than whole when full (by then its first records
 * were pushed out by the 7 other blocks being filled and the records read): 0.03-0.04 s less CPU per GiB.
 */
export const CHECKSUM_STEP_BYTES = 32 * 1024;

/**
 * The producer's sort buffer (Flink's SortMergeResultPartition data buffer, hash flavour): records are
 * framed per subpartition with shuffle-api's RecordFramer into pooled blocks; `takeRegion()` hands
 * everything held over, clustered by subpartition, ready to spill. Buffers come back through
 * `recycle()` once encoded, so memory stays within what the pool has allocated.
 */
export class SortBuffer {
  readonly blockBytes: number;
  private readonly framers: RecordFramer[];
  /** With checksumBlocks, per subpartition: its block being filled, how much of it is checksummed, and that CRC32C so far. */
  private readonly filling: (Uint8Array | undefined)[];
  private readonly checked: number[];
  private readonly partialCrc: number[];
  private readonly checksumBlocks: boolean;
  private lists: (RegionEntry[] | undefined)[];
  private readonly pool: Uint8Array[] = [];
  private readonly maxAllocated: number;
  /** Capacity of the blocks in the current region (full, partial and events). */
  private active = 0;
  private activeBlocks = 0;
  /** Capacity of every block alive: current region, regions being spilled, and the pool. */
  private allocated = 0;
  private draining = false;

  constructor(
    readonly numberOfSubpartitions: number,
    blockBytes: number,
    /**
     * Bytes of blocks alive (current region, regions being spilled, pool) beyond which a recycled block
     * is dropped instead of pooled: the sort buffer's share of the writer's budget. Blocks allocated past it
     * (an oversized record's) go back to the system as they are recycled.
     */
    maxAllocatedBytes: number,
    /**
     * Whether each data block is checksummed as stored raw (`rawBlockChecksum`), CHECKSUM_STEP_BYTES at
     * a time while it fills (in the CPU's cache): true when nothing will compress it. @defaultValue false
     */
    checksumBlocks = false,
  ) {
    this.blockBytes = blockBytes;
    this.maxAllocated = Math.max(blockBytes, maxAllocatedBytes);
    this.lists = new Array<RegionEntry[] | undefined>(numberOfSubpartitions);
    this.checksumBlocks = checksumBlocks;
    this.filling = new Array<Uint8Array | undefined>(numberOfSubpartitions);
    this.checked = new Array<number>(numberOfSubpartitions).fill(0);
    this.partialCrc = new Array<number>(numberOfSubpartitions).fill(0);
    this.framers = Array.from(
      { length: numberOfSubpartitions },
      (_, s) =>
        new RecordFramer(
          blockBytes,
          checksumBlocks ? () => this.startBlock(s) : () => this.allocate(),
          checksumBlocks
            ? (segment, length) => this.add(s, { kind: BLOCK_KIND_DATA, bytes: segment.subarray(0, length), buffer: segment, rawChecksum: this.endBlock(s, segment, length) })
            : (segment, length) => this.add(s, { kind: BLOCK_KIND_DATA, bytes: segment.subarray(0, length), buffer: segment }),
        ),
    );
  }

  /** Bytes of the current region (block capacity). */
  get activeBytes(): number {
    return this.active;
  }

  /** Bytes of every block alive, pooled ones included. */
  get allocatedBytes(): number {
    return this.allocated;
  }

  /** True when the current region holds no data and no event. */
  get isEmpty(): boolean {
    return this.active === 0;
  }

  write(record: Uint8Array, subpartition: number): void {
    const framer = this.framers[subpartition]!;
    framer.write(record);
    if (!this.checksumBlocks) return;
    const filled = framer.pendingBytes;
    const checked = this.checked[subpartition]!;
    if (filled - checked < CHECKSUM_STEP_BYTES) return;
    this.partialCrc[subpartition] = crc32c(this.filling[subpartition]!.subarray(checked, filled), this.partialCrc[subpartition]);
    this.checked[subpartition] = filled;
  }

  /** Closes every subpartition's current block, then appends `event` (encoded) to each. */
  addEvent(encoded: Uint8Array): void {
    for (let s = 0; s < this.numberOfSubpartitions; s++) {
      this.framers[s]!.flush();
      this.add(s, { kind: BLOCK_KIND_EVENT, bytes: encoded });
      this.active += encoded.length;
    }
  }

  /** Everything held, clustered by subpartition; the buffer starts a new, empty region. */
  takeRegion(): Region {
    for (const framer of this.framers) framer.flush();
    let rawBytes = 0;
    for (const list of this.lists) for (const entry of list ?? []) rawBytes += entry.bytes.length;
    const region: Region = { subpartitions: this.lists, rawBytes, blocks: this.activeBlocks };
    this.lists = new Array<RegionEntry[] | undefined>(this.numberOfSubpartitions);
    this.active = 0;
    this.activeBlocks = 0;
    return region;
  }

  /** Returns a block handed out in a region. */
  recycle(buffer: Uint8Array): void {
    if (buffer.length === this.blockBytes && this.allocated <= this.maxAllocated && !this.draining) {
      this.pool.push(buffer);
      return;
    }
    this.allocated -= buffer.length;
    writeBlocks.give(buffer);
  }

  /** No more records will come: drops the pool, and every block recycled from now on. */
  drain(): void {
    this.draining = true;
    this.dropPool();
  }

  /** Drops every block (current region and pool); blocks of regions handed out go to writeBlocks as they are recycled. */
  discard(): void {
    // blocks of regions handed out come back through recycle(), to writeBlocks: none is pooled here again
    this.draining = true;
    for (const framer of this.framers) {
      const segment = framer.discard();
      if (segment !== null) {
        this.allocated -= segment.length;
        writeBlocks.give(segment);
      }
    }
    for (const list of this.lists) {
      for (const entry of list ?? []) {
        if (entry.buffer === undefined) continue;
        this.allocated -= entry.buffer.length;
        writeBlocks.give(entry.buffer);
      }
    }
    this.lists = new Array<RegionEntry[] | undefined>(this.numberOfSubpartitions);
    this.dropPool();
    this.active = 0;
    this.activeBlocks = 0;
  }

  /** A block for subpartition `s` to fill, checksummed as it is (checksumBlocks). */
  private startBlock(s: number): Uint8Array {
    const block = this.allocate();
    this.filling[s] = block;
    this.checked[s] = 0;
    this.partialCrc[s] = 0;
    return block;
  }

  /** The checksum of the full block `segment` of subpartition `s` as stored raw (`rawBlockChecksum`), from the pieces checksummed while it filled. */
  private endBlock(s: number, segment: Uint8Array, length: number): number {
    const checked = this.checked[s]!;
    const payloadCrc = checked < length ? crc32c(segment.subarray(checked, length), this.partialCrc[s]) : this.partialCrc[s]!;
    this.filling[s] = undefined;
    return crc32cCombine(rawHeaderChecksum(BLOCK_KIND_DATA, length), payloadCrc, length);
  }

  private allocate(): Uint8Array {
    this.active += this.blockBytes;
    const pooled = this.pool.pop();
    if (pooled !== undefined) return pooled;
    this.allocated += this.blockBytes;
    // ordinary memory: copying records into shared memory costs the producer more (relaxed atomic copies,
    // measured +0.12-0.16 s of CPU per GiB) than checksumming its blocks on its own thread saves
    return writeBlocks.take(this.blockBytes, false);
  }

  /** Hands the pooled blocks to the process's writeBlocks. */
  private dropPool(): void {
    this.allocated -= this.pool.length * this.blockBytes;
    for (const block of this.pool) writeBlocks.give(block);
    this.pool.length = 0;
  }

  private add(subpartition: number, entry: RegionEntry): void {
    let list = this.lists[subpartition];
    if (list === undefined) this.lists[subpartition] = list = [];
    list.push(entry);
    this.activeBlocks++;
  }
}
