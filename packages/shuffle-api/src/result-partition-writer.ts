import type { ResultPartitionId } from './ids.js';
import type { ShuffleEvent } from './shuffle-event.js';

/** Cheap counters a writer keeps; read them any time. */
export interface ResultPartitionWriterMetrics {
  /** Records emitted (a broadcast record counts once per subpartition). */
  readonly records: number;
  /** Framed bytes written, headers included. */
  readonly bytes: number;
  /** Bytes this writer holds right now that its consumers have not yet taken (its share of memory). */
  readonly bufferedBytes: number;
  /** The most `bufferedBytes` may reach while the producer honours backpressure (Infinity when unbounded). */
  readonly memoryLimitBytes: number;
  /**
   * PIPELINED_APPROXIMATE only, where the implementation counts it: per subpartition, the records a consumer
   * attempt that went away before the end never got whole — dropped while no consumer was attached, or whose
   * tail was skipped so that the next attempt starts at a whole record. Counted, never estimated; records
   * already handed to the gone consumer are not in it. @defaultValue absent
   */
  readonly recordsLostBySubpartition?: readonly number[];
}

/**
 * The producer side of one result partition (Flink's ResultPartitionWriter).
 *
 * Lifecycle: created by `ShuffleEnvironment.createResultPartitionWriter`, owned by the producing task
 * from then on. Emit records and events, then `finish()` — which commits: only then does the partition
 * become complete for its consumers (blocking types become readable; pipelined consumers see
 * end-of-partition). `fail(cause)` aborts: consumers see SHF_ERR_PRODUCER_FAILED with that cause (a
 * blocking type may answer SHF_ERR_PARTITION_NOT_FOUND instead; InputGate says exactly when).
 * `close()` releases the writer's resources; `close()` before `finish()` aborts like `fail()`, with
 * SHF_ERR_CLOSED as the cause: nothing the writer emitted becomes visible as a complete partition.
 *
 * Backpressure without a promise per record: `emitRecord` returns false once the writer holds as much
 * as its memory budget allows; the producer then awaits `ready()` before emitting more. A record is always
 * accepted (it is copied before the call returns), so a single emit may exceed the budget by up to one record.
 *
 * Not in the contract: which thread or process consumes, how bytes travel, and when a pipelined
 * partition's buffers become visible before they fill or a `flush()` / event hands them over. Blocking
 * types show nothing before `finish()` commits (see InputGate).
 */
export interface ResultPartitionWriter extends AsyncDisposable {
  readonly partitionId: ResultPartitionId;
  readonly numberOfSubpartitions: number;
  readonly metrics: ResultPartitionWriterMetrics;

  /**
   * Appends `record` to `subpartition`. Returns true while more emits are welcome, false when the
   * producer should await `ready()`. Throws SHF_ERR_INVALID_ARGUMENT naming the field: `subpartition`
   * out of range, `record` not a Uint8Array or oversized, `state` after finish/fail/close.
   */
  emitRecord(record: Uint8Array, subpartition: number): boolean;

  /** Appends `record` to every subpartition. Same return value and errors as `emitRecord`. */
  broadcastRecord(record: Uint8Array): boolean;

  /**
   * Appends `event` to every subpartition, in order with the records before and after it. The event
   * also flushes: it is delivered without waiting for buffers to fill. `end-of-partition` is refused
   * (finish sends it).
   */
  broadcastEvent(event: ShuffleEvent): boolean;

  /**
   * Resolves when emits are welcome again (at once if they are). Rejects with SHF_ERR_CLOSED if the
   * writer is failed or closed while waiting, or with the error that made consumption impossible.
   */
  ready(): Promise<void>;

  /**
   * Pipelined types: hands partially filled buffers over now, so every record emitted so far reaches its
   * consumer without waiting for a buffer to fill or for `finish()`. Blocking types: may close the
   * current buffers, but shows nothing before `finish()`. A no-op after finish/fail/close.
   */
  flush(): void;

  /**
   * Completes and commits the partition: appends end-of-partition to every subpartition and, for
   * persisted types, makes the data visible atomically. Rejects (and leaves nothing visible) when the
   * commit fails, e.g. SHF_ERR_COMMIT_CONFLICT when another attempt committed first; rejects with
   * SHF_ERR_INVALID_ARGUMENT (field `state`) when called twice or after fail/close.
   */
  finish(): Promise<void>;

  /**
   * The producing task learned that checkpoint `checkpointId` completed (Flink's notifyCheckpointComplete).
   * A PIPELINED_APPROXIMATE partition that keeps an upstream backup for restarted consumers (the memory
   * and network shuffles' `approximateReplayBytes`) drops what came before that checkpoint's barrier: no
   * consumer restored from it or a later one needs it. Optional; a no-op for other types and after fail/close.
   */
  checkpointCompleted?(checkpointId: number): void;

  /**
   * The producing task restored its state from a checkpoint, before it wrote anything: what it writes
   * begins at that checkpoint's state. A PIPELINED_APPROXIMATE partition that keeps an upstream backup keeps
   * it from the first record, not only from its first barrier, since a consumer restored from the same
   * checkpoint resumes this attempt from record 0 (and sources that finished take no more checkpoints).
   * Optional; a no-op for other types and after finish/fail/close.
   */
  restored?(): void;

  /** Aborts: nothing this writer produced becomes visible; consumers see SHF_ERR_PRODUCER_FAILED. */
  fail(cause: unknown): void;

  /** Releases buffers and handles. Idempotent. Before `finish()` it aborts (as `fail`). */
  close(): Promise<void>;
}
