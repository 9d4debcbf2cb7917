import type { ApproximateInputLosses } from './approximate-cleanup.js';
import type { ResultPartitionId } from './ids.js';
import type { ShuffleDescriptor } from './shuffle-descriptor.js';
import type { ShuffleEvent } from './shuffle-event.js';

/** One channel of a gate: one subpartition of one input partition. */
export interface InputChannelInfo {
  readonly channelIndex: number;
  readonly partitionId: ResultPartitionId;
  readonly subpartition: number;
}

/**
 * Records from one channel, in the order they were emitted. The arrays are views into shuffle buffers:
 * valid until the next `readBatch()` / iteration step or `close()` of the gate; copy what you keep.
 */
export interface RecordsBatch {
  readonly kind: 'records';
  readonly channel: number;
  readonly records: readonly Uint8Array[];
}

/** An event from one channel, in order with that channel's records. */
export interface EventBatch {
  readonly kind: 'event';
  readonly channel: number;
  readonly event: ShuffleEvent;
}

export type GateBatch = RecordsBatch | EventBatch;

/** One record or one event, as the async iterator yields them. */
export type GateItem =
  | { readonly kind: 'record'; readonly channel: number; readonly record: Uint8Array }
  | { readonly kind: 'event'; readonly channel: number; readonly event: ShuffleEvent };

/**
 * The consumer side of one input (Flink's InputGate): the channels of a set of partitions, a range of
 * subpartitions of each. Channel `i * rangeLength + (s - range.start)` is subpartition `s` of input `i`.
 *
 * Every channel ends with an `end-of-partition` event; after all have, `readBatch()` resolves `null` and
 * iteration stops. Failures reject the read with a ShuffleError whose context names the partition:
 * SHF_ERR_PARTITION_NOT_FOUND (unknown, released, consumed, or lost), SHF_ERR_PRODUCER_FAILED (with the
 * producer's cause), SHF_ERR_DATA_CORRUPTED, SHF_ERR_CLOSED.
 *
 * Partitions still being produced, and producers that fail (`fail(cause)`, or `close()` before `finish()`):
 * - Pipelined types (`canBePipelined`): records arrive as the producer flushes them (`flush()`, an event, a
 *   full buffer). If the producer fails, the channel's read rejects with SHF_ERR_PRODUCER_FAILED naming
 *   the partition, with the producer's error as `cause` (SHF_ERR_CLOSED for a close before `finish()`),
 *   after whatever records it had delivered; the channel never ends with `end-of-partition`.
 * - Blocking types: nothing of a partition is delivered before its producer's `finish()` committed it. A
 *   read of a partition still being produced either waits until it is committed (and then delivers all of
 *   it) or rejects with SHF_ERR_PARTITION_NOT_FOUND naming it. If the producer fails, the read rejects,
 *   with no record delivered, with either SHF_ERR_PRODUCER_FAILED naming the partition with the
 *   producer's error as `cause` (as for pipelined types), or SHF_ERR_PARTITION_NOT_FOUND naming the
 *   partition, with no cause required: a failed attempt of a blocking partition commits nothing, and an
 *   implementation whose producers run elsewhere (another process, a shuffle server) may not know why.
 *
 * Ownership: created by `ShuffleEnvironment.createInputGate`, owned by the consuming task; `close()`
 * (idempotent) returns its buffers and tells pipelined producers the consumer is gone.
 *
 * Not in the contract: the interleaving of different channels (only each channel's own order is kept).
 */
export interface InputGate extends AsyncIterable<GateItem>, AsyncDisposable {
  readonly channels: readonly InputChannelInfo[];

  /** The next batch from any channel that has data, or `null` when every channel has ended. */
  readBatch(): Promise<GateBatch | null>;

  /**
   * Optional (Flink's `updatePartitionInfo`): the job master registered a new attempt of the producer of
   * one of this gate's PIPELINED_APPROXIMATE inputs; `descriptor` is what `registerPartitionWithProducer`
   * returned for it (the same partition id, the new producer attempt, and where it now lives). The input's
   * channels whose producer went away (they delivered `channel-unavailable`) read from the new attempt,
   * from its next whole record; channels still reading the old attempt move once they lose it. A
   * descriptor of the attempt already read is ignored. SHF_ERR_INVALID_ARGUMENT for a partition that is not
   * an approximate input of this gate. Implementations that learn of new attempts by themselves (the
   * in-memory shuffle, at the attempt's registration) do not have it; a job master calls it where present,
   * on every gate that reads the restarted producer's partitions.
   */
  updatePartitionInfo?(descriptor: ShuffleDescriptor): void;

  /**
   * Optional: what this gate's PIPELINED_APPROXIMATE channels lost when their producers went away, counted
   * (`channelsUnavailable`, `partialRecordsDiscarded`, `partialRecordBytesDiscarded`, `reconnects`). The
   * same facts reach the consumer in band, as `channel-unavailable` events.
   */
  readonly approximateLosses?: ApproximateInputLosses;

  close(): Promise<void>;
}
