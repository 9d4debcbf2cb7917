import type { ApproximateCleanup } from './approximate-cleanup.js';

/** The buffer pool a replay is copied into (the memory and network shuffles' partition pools). */
export interface ReplayBufferPool {
  readonly buffersInUse: number;
  readonly capacity: number;
  /** A segment, counted in `buffersInUse` until it comes back; never refused. */
  allocate(): Uint8Array;
  /** Resolves once at most `n` segments are in use (or the pool is woken for good: closed, failed). */
  whenInUseAtMost(n: number): Promise<void>;
}

/**
 * Sends an approximate subpartition's replay (ApproximateResumption.replay, queued as the log's own bytes)
 * into its buffer pool one buffer at a time, as the reader's credit lets each go — never all at once —
 * and at most one buffer over the pool's capacity: live buffers queued behind the replay may hold the
 * rest of the pool, and the replay must still move. When the last replayed buffer went out, the cleanup
 * learns the replay was delivered (ApproximateCleanup.replaySent). Shared by both shuffles' subpartitions.
 */
export class ReplayCopier {
  readonly #pool: ReplayBufferPool;
  readonly #cleanup: ApproximateCleanup;
  readonly #resend: () => void;
  /** Replayed buffers queued and not yet copied out. */
  #queued = 0;
  /** A copy waits for a segment to come back (`mayCopy`). */
  #waiting = false;

  /** `resend`: called once a segment came back after `mayCopy` said no (the subpartition sends again). */
  constructor(pool: ReplayBufferPool, cleanup: ApproximateCleanup, resend: () => void) {
    this.#pool = pool;
    this.#cleanup = cleanup;
    this.#resend = resend;
  }

  /** A replay of `buffers` buffers was queued for the reader that attached. */
  queued(buffers: number): void {
    this.#queued = buffers;
  }

  /** What was queued is gone (the reader went away, the subpartition was released or its backlog replaced). */
  cleared(): void {
    this.#queued = 0;
  }

  /** Whether the next replayed buffer may be copied now; when not, `resend` runs once a segment comes back. */
  mayCopy(): boolean {
    if (this.#pool.buffersInUse <= this.#pool.capacity) return true;
    if (!this.#waiting) {
      this.#waiting = true;
      void this.#pool.whenInUseAtMost(this.#pool.capacity).then(() => {
        this.#waiting = false;
        this.#resend();
      });
    }
    return false;
  }

  /** The next replayed buffer's first `length` bytes in a segment of the pool (the caller sends it). */
  copy(bytes: Uint8Array, length: number): Uint8Array {
    const segment = this.#pool.allocate();
    segment.set(bytes.subarray(0, length));
    if (--this.#queued === 0) this.#cleanup.replaySent();
    return segment;
  }
}
