import { RecordFramer } from '@weft/shuffle-api';
import { BLOCK_KIND_DATA, BLOCK_KIND_EVENT, rawBlockChecksum } from '../format/block-codec.js';
import type { Region, RegionEntry } from '../format/partition-file-writer.js';

/** Smallest block the sort buffer shrinks to when a partition has very many subpartitions. */
export const MIN_BLOCK_BYTES = 512;

/**
 * The producer's sort buffer (Flink's SortMergeResultPartition data buffer, hash flavour): records are
 * framed per subpartition with shuffle-api's RecordFramer into pooled blocks; `takeRegion()` hands
 * everything held over, clustered by subpartition, ready to spill. Buffers come back through
 * `recycle()` once encoded, so memory stays within what the pool has allocated.
 */
export class SortBuffer {
  readonly blockBytes: number;
  private readonly framers: RecordFramer[];
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
     * Whether each data block is checksummed as stored raw the moment it is full (`rawBlockChecksum`,
     * while it is in the CPU's cache): true when nothing will compress it. @defaultValue false
     */
    checksumBlocks = false,
  ) {
    this.blockBytes = blockBytes;
    this.maxAllocated = Math.max(blockBytes, maxAllocatedBytes);
    this.lists = new Array<RegionEntry[] | undefined>(numberOfSubpartitions);
    this.framers = Array.from(
      { length: numberOfSubpartitions },
      (_, s) =>
        new RecordFramer(
          blockBytes,
          () => this.allocate(),
          checksumBlocks
            ? (segment, length) => {
                const bytes = segment.subarray(0, length);
                this.add(s, { kind: BLOCK_KIND_DATA, bytes, buffer: segment, rawChecksum: rawBlockChecksum(BLOCK_KIND_DATA, bytes) });
              }
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
    this.framers[subpartition]!.write(record);
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
    if (buffer.length === this.blockBytes && this.allocated <= this.maxAllocated && !this.draining) this.pool.push(buffer);
    else this.allocated -= buffer.length;
  }

  /** No more records will come: drops the pool, and every block recycled from now on. */
  drain(): void {
    this.draining = true;
    this.allocated -= this.pool.length * this.blockBytes;
    this.pool.length = 0;
  }

  /** Drops every block (current region and pool); regions already handed out are the caller's. */
  discard(): void {
    for (const framer of this.framers) {
      const segment = framer.discard();
      if (segment !== null) this.allocated -= segment.length;
    }
    for (const list of this.lists) for (const entry of list ?? []) if (entry.buffer !== undefined) this.allocated -= entry.buffer.length;
    this.lists = new Array<RegionEntry[] | undefined>(this.numberOfSubpartitions);
    this.allocated -= this.pool.length * this.blockBytes;
    this.pool.length = 0;
    this.active = 0;
    this.activeBlocks = 0;
  }

  private allocate(): Uint8Array {
    this.active += this.blockBytes;
    const pooled = this.pool.pop();
    if (pooled !== undefined) return pooled;
    this.allocated += this.blockBytes;
    // ordinary memory: copying records into shared memory costs the producer more (relaxed atomic copies,
    // measured +0.12-0.16 s of CPU per GiB) than checksumming its blocks on its own thread saves
    return new Uint8Array(this.blockBytes);
  }

  private add(subpartition: number, entry: RegionEntry): void {
    let list = this.lists[subpartition];
    if (list === undefined) this.lists[subpartition] = list = [];
    list.push(entry);
    this.activeBlocks++;
  }
}
