import type { FramedPartitionSink, ShuffleError, ShuffleEvent } from '@weft/shuffle-api';

/** What travels through a subpartition to its reader: a filled buffer, an event, or a terminal error. */
export type ChannelEntry =
  /**
   * `partialRecordLength`: the first bytes that are the tail of a record begun in an earlier buffer
   * (RecordFramer); 0 when absent. `replayed`: a copy from an approximate subpartition's upstream backup
   * (ApproximateReplayLog) — queued, its segment is the log's bytes (copied into a pool segment as it is
   * sent); sent, a pool segment like any other.
   */
  | { readonly kind: 'data'; readonly segment: Uint8Array; readonly length: number; readonly partialRecordLength?: number; readonly replayed?: boolean }
  | { readonly kind: 'event'; readonly event: ShuffleEvent }
  | { readonly kind: 'error'; readonly error: ShuffleError }
  /** PIPELINED_APPROXIMATE: this attempt of the producer went away before its end (failed or replaced); a new attempt may come. */
  | { readonly kind: 'unavailable' };

/** The consumer end of one subpartition, as a gate's channel sees it. */
export interface SubpartitionReader {
  /** The next entry, or undefined when none is ready now (the listener is called when one is). */
  poll(): ChannelEntry | undefined;
  /** True when `poll` would return an entry. */
  readonly hasNext: boolean;
  /** The consumer is done with a data entry it polled (its segment may be reused). */
  recycle(entry: ChannelEntry): void;
  /** The consumer is gone (finished or closed); drop what is queued. Idempotent. */
  release(): void;
  /** The partition (attempt) it reads, when it reads a pipelined one: a reader of a new attempt has another. */
  readonly source?: object;
}

/** Called by a reader whenever it gains an entry to poll. */
export type AvailabilityListener = () => void;

/** Where a writer sends what it frames (shuffle-api's FramedPartitionSink). One per partition attempt. */
export type PartitionSink = FramedPartitionSink;
