/** Idle bytes a pool keeps at most: about what eight gates reading at once, or one writer, hold by default. */
export const MAX_IDLE_BYTES = 64 * 1024 * 1024;

/** Idle buffers are dropped when the pool was not used (no take, no give) for this long. */
export const IDLE_RELEASE_MS = 10_000;

/**
 * Buffers kept between the readers or the writers of one process, as Flink keeps its batch-shuffle read
 * buffer pool and network buffers for the task manager's lifetime: a SubpartitionRangeReader takes its
 * read buffers from `readBuffers` and gives them back when its input is done, a SortBuffer its blocks
 * from `writeBlocks`, so the gates and writers opened after them reuse that memory instead of
 * allocating and faulting it in anew (for eight gates reading 1 GiB, allocating their 2 x 4 MiB each
 * was 18 ms of their first 30 ms; a writer allocates 38 MiB of blocks). A buffer is taken by exact
 * capacity, in shared memory or not; up to MAX_IDLE_BYTES of idle buffers are kept, all dropped after
 * IDLE_RELEASE_MS without a take or a give (the timer does not keep the process alive). Idle buffers
 * are the process's, outside any task's memory budget (as Flink's batch-shuffle read memory is
 * framework memory): a budget counts what its gates and writers hold, not what they gave back. A buffer
 * given back must no longer be viewed or written by anyone (the InputGate contract: records are valid
 * until the next read or `close()`); giving one back twice throws.
 */
export class BufferPool {
  private readonly idle = new Map<string, Uint8Array[]>();
  private idleTotal = 0;
  private timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly maxIdleBytes = MAX_IDLE_BYTES,
    private readonly idleReleaseMs = IDLE_RELEASE_MS,
  ) {}

  /** Bytes of the idle buffers kept. */
  get idleBytes(): number {
    return this.idleTotal;
  }

  /** A buffer of `bytes` bytes (in a SharedArrayBuffer when `shared`): an idle one if the pool has one, else a new one. */
  take(bytes: number, shared: boolean): Uint8Array {
    this.touch();
    const free = this.idle.get(key(bytes, shared));
    const buffer = free?.pop();
    if (buffer !== undefined) {
      this.idleTotal -= bytes;
      return buffer;
    }
    return shared ? new Uint8Array(new SharedArrayBuffer(bytes)) : new Uint8Array(bytes);
  }

  /** Gives back a buffer `take` returned (whole, not a view of part of it); dropped when the pool is full. */
  give(buffer: Uint8Array): void {
    if (buffer.byteOffset !== 0 || buffer.byteLength !== buffer.buffer.byteLength) throw new Error('BufferPool.give takes a whole buffer from take()');
    const k = key(buffer.length, buffer.buffer instanceof SharedArrayBuffer);
    let free = this.idle.get(k);
    // two owners of one buffer later would corrupt each other's data: a bug, said at once
    if (free?.includes(buffer)) throw new Error('BufferPool.give: this buffer was given back already');
    if (this.idleTotal + buffer.length > this.maxIdleBytes) return;
    if (free === undefined) this.idle.set(k, (free = []));
    free.push(buffer);
    this.idleTotal += buffer.length;
    this.touch();
  }

  /** Drops every idle buffer. */
  clear(): void {
    this.idle.clear();
    this.idleTotal = 0;
    clearTimeout(this.timer);
    this.timer = undefined;
  }

  /** (Re)starts the countdown after which idle buffers are dropped. */
  private touch(): void {
    if (this.idleTotal === 0) return;
    if (this.timer !== undefined) {
      this.timer.refresh();
      return;
    }
    this.timer = setTimeout(() => this.clear(), this.idleReleaseMs);
    this.timer.unref();
  }
}

function key(bytes: number, shared: boolean): string {
  return `${shared ? 's' : 'p'}${bytes}`;
}

/** The process's read buffers (SubpartitionRangeReader). */
export const readBuffers = new BufferPool();

/** The process's sort-buffer blocks (SortBuffer). */
export const writeBlocks = new BufferPool();
