import type { RecordDeframer } from './record-deframer.js';
import { RECORD_HEADER_BYTES } from './record-framing.js';

/** What an approximate subpartition lost to readers that went away (all counted, none estimated). */
export interface ApproximateLosses {
  /** Readers that attached again after one went away. */
  readonly reconnects: number;
  /** Data buffers dropped: sent to the reader that went away but unread, queued for it, or written while none was attached. */
  readonly buffersDropped: number;
  /** Records whose first byte was in a dropped buffer. */
  readonly recordsDropped: number;
  /** Record tails skipped so that a new reader starts at a whole record (their heads were dropped or went to the gone reader). */
  readonly partialRecordsSkipped: number;
  /**
   * Records no reader got whole: `recordsDropped` plus the skipped tails whose heads went to a gone reader
   * (a tail whose head was in a dropped buffer is counted once, with that buffer).
   */
  readonly recordsLost: number;
}

/** What an input gate's PIPELINED_APPROXIMATE channels lost when their producers went away (counted). */
export interface ApproximateInputLosses {
  /** Times a channel delivered `channel-unavailable` (its producer attempt failed, was replaced, or its connection dropped). */
  readonly channelsUnavailable: number;
  /** Partial records dropped then: records a channel had begun receiving (never across channels). */
  readonly partialRecordsDiscarded: number;
  /** Bytes of those partial records that had arrived. */
  readonly partialRecordBytesDiscarded: number;
  /** Times a channel was connected again to a new producer attempt. */
  readonly reconnects: number;
}

/**
 * A gate's channel whose producer attempt went away (PIPELINED_APPROXIMATE): drops the partial record its
 * deframer holds — that channel's only — and counts it in the gate's `losses`. Returns the bytes of it
 * that had arrived (0: none was begun), what the in-band `channel-unavailable` event carries.
 */
export function discardUnavailablePartial(deframer: RecordDeframer, losses: { -readonly [K in keyof ApproximateInputLosses]: number }): number {
  const partial = deframer.hasPartialRecord;
  const partialRecordBytes = deframer.discardPartialRecord();
  losses.channelsUnavailable++;
  if (partial) {
    losses.partialRecordsDiscarded++;
    losses.partialRecordBytesDiscarded += partialRecordBytes;
  }
  return partialRecordBytes;
}

/** Zero losses, and the sum of several (a partition's subpartitions). */
export function sumApproximateLosses(losses: Iterable<ApproximateLosses>): ApproximateLosses {
  const sum = { reconnects: 0, buffersDropped: 0, recordsDropped: 0, partialRecordsSkipped: 0, recordsLost: 0 };
  for (const l of losses) {
    sum.reconnects += l.reconnects;
    sum.buffersDropped += l.buffersDropped;
    sum.recordsDropped += l.recordsDropped;
    sum.partialRecordsSkipped += l.partialRecordsSkipped;
    sum.recordsLost += l.recordsLost;
  }
  return sum;
}

/** How many records start in the first `length` bytes of `segment`, whose first `partialRecordLength` bytes are the tail of an earlier one. */
export function recordsStartingIn(segment: Uint8Array, length: number, partialRecordLength: number): number {
  let records = 0;
  for (let position = partialRecordLength; position + RECORD_HEADER_BYTES <= length; records++) {
    const recordLength = (segment[position]! | (segment[position + 1]! << 8) | (segment[position + 2]! << 16) | (segment[position + 3]! << 24)) >>> 0;
    position += RECORD_HEADER_BYTES + recordLength;
  }
  return records;
}

/**
 * The partial-record cleanup of one PIPELINED_APPROXIMATE subpartition (Flink's
 * PipelinedApproximateSubpartition), pure bookkeeping shared by the in-memory and network shuffles: after
 * its reader went away (`readerGone`), data buffers are dropped while none is attached, and the first
 * buffer a new reader gets is cut to start at a whole record (`admit`); a buffer that is all tail is
 * dropped whole. Every drop is counted (`dropped`). The caller owns the buffers and recycles what is dropped.
 */
export class ApproximateCleanup {
  /** A reader went away and no whole record was served since (Flink's isPartialBufferCleanupRequired). */
  private required = false;
  /** The tail being skipped by this cleanup was counted. */
  private tailCounted = false;
  /** The last data buffer since the reader went away was dropped (its records, a head included, were counted lost). */
  private lastDropped = false;
  private readonly counts = { reconnects: 0, buffersDropped: 0, recordsDropped: 0, partialRecordsSkipped: 0, recordsLost: 0 };
  /** Records that began in the data buffers written so far (`written`), whoever got them. */
  private recordsWritten = 0;
  /** The counts when the reader went away: a replay to the next one, once delivered (`replaySent`), undoes what was counted since. */
  private countsAtGone = { ...this.counts };
  /** A replay was queued for the attached reader (`replayed`) and not yet all delivered: the drops before it stay undecided. */
  private replayPending = false;
  /** The counts a delivered replay undid, put back if the reader gives some of it back unread (`replayUnread`). */
  private undone = { ...this.counts };
  /**
   * A reader went away from a subpartition that may replay to the next one: `losses` shows the counts of
   * then until it is known whether the drops since are lost (`readerAttached` without a replay, `settle`)
   * or not (`replayed`), so the counters never go down.
   */
  private undecided = false;

  get losses(): ApproximateLosses {
    return this.undecided ? { ...this.countsAtGone, reconnects: this.counts.reconnects } : { ...this.counts };
  }

  /** True while data must go through `admit` (a reader went away and no whole record was served since). */
  get cleanupRequired(): boolean {
    return this.required;
  }

  /** Records that began in the data buffers written so far: the position of the next record written (a barrier's, for ApproximateReplayLog). */
  get writtenRecords(): number {
    return this.recordsWritten;
  }

  /**
   * The reader went away before the end of the partition (`replayable`: the subpartition keeps an
   * upstream backup, so what is dropped from now on may reach the next reader after all: `replayed`).
   */
  readerGone(replayable = false): void {
    // a reader that went away before its replay was all delivered leaves the drops before it undecided:
    // the counts of when the reader before it went away stay the ones a later replay goes back to
    if (!this.replayPending) this.countsAtGone = { ...this.counts };
    this.replayPending = false;
    this.undecided = replayable;
    // a reader that went away before any whole record was served continues the cleanup of the one before:
    // the tail being skipped, and whether its head was dropped, are still that cleanup's
    if (!this.required) {
      this.tailCounted = false;
      this.lastDropped = false;
    }
    this.required = true;
  }

  /**
   * A reader attached (counted as a reconnect when one had gone away). Returns, for a reader that attached
   * after one went away, the position of the first record it will get — the records written so far, as
   * every buffer it is not served until its first whole record starts no record (the all-tail buffers
   * `admit` drops while it is attached) — which the caller sends it first (`channel-resumed`); undefined
   * for the first reader (it gets the subpartition from its first record).
   */
  readerAttached(): number | undefined {
    if (!this.required) return undefined;
    this.counts.reconnects++;
    this.undecided = false;
    return this.recordsWritten;
  }

  /**
   * Counts the records that begin in a data buffer written to the subpartition (every one, before
   * `admit`); returns the position of the first of them.
   */
  written(segment: Uint8Array, length: number, partialRecordLength: number): number {
    const first = this.recordsWritten;
    this.recordsWritten += recordsStartingIn(segment, length, partialRecordLength);
    return first;
  }

  /**
   * The reader that attached after one went away (`readerAttached`) is served from a replay of the
   * subpartition's upstream backup (ApproximateReplayLog) from a record no later than the first one the
   * gone reader did not get, queued for it: the cleanup ends, since the replay runs up to the last buffer
   * written, so the next one continues it. Once the replay is all delivered (`replaySent`), nothing
   * dropped since the reader before went away is lost after all; until then those drops stay undecided.
   * The caller counts no drop of a replayed buffer (`dropped`): it is a copy of one counted when written.
   */
  replayed(): void {
    this.undecided = true;
    this.replayPending = true;
    this.required = false;
    this.tailCounted = false;
    this.lastDropped = false;
  }

  /** The last buffer of the replay `replayed` queued went to the reader: the drops since the reader before went away are undone (its reconnect stays counted). */
  replaySent(): void {
    if (!this.replayPending) return;
    const { reconnects } = this.counts;
    this.undone = { ...this.counts };
    Object.assign(this.counts, this.countsAtGone, { reconnects });
    this.replayPending = false;
    this.undecided = false;
  }

  /**
   * The reader went away with replayed buffers it had been sent still unread (in-process readers give
   * back what they did not read): the undo of `replaySent` is taken back — call before `readerGone`.
   */
  replayUnread(): void {
    if (this.replayPending) return; // not all delivered: nothing was undone
    const { reconnects } = this.counts;
    Object.assign(this.counts, this.undone, { reconnects });
    this.replayPending = true;
  }

  /**
   * What to do with a data buffer written while cleanup is required: `'drop'` (no reader is attached, or
   * all of it is the tail of a record begun earlier — the caller recycles it and calls `dropped`), or how
   * many bytes to cut off its start for the attached reader (0: it starts with a whole record). Cleanup
   * ends with the first buffer that is not dropped.
   */
  admit(length: number, partialRecordLength: number, attached: boolean): number | 'drop' {
    if (!this.required) return 0;
    if (!attached) return 'drop';
    if (partialRecordLength === 0) {
      this.required = false;
      this.lastDropped = false;
      return 0;
    }
    if (!this.tailCounted) this.counts.partialRecordsSkipped++;
    this.tailCounted = true;
    if (partialRecordLength >= length) return 'drop';
    // the skipped tail's head went to the gone reader (a head in a dropped buffer was counted with it)
    if (!this.lastDropped) this.counts.recordsLost++;
    this.required = false;
    this.lastDropped = false;
    return partialRecordLength;
  }

  /** No reader will attach again (the subpartition was released): what was dropped since the last one went away is lost. */
  settle(): void {
    this.undecided = false;
    this.replayPending = false;
  }

  /** Counts a data buffer no reader will get, and the records that start in it. */
  dropped(segment: Uint8Array, length: number, partialRecordLength: number): void {
    const records = recordsStartingIn(segment, length, partialRecordLength);
    this.counts.buffersDropped++;
    this.counts.recordsDropped += records;
    // and the record whose tail starts it, when its head went to a reader (a dropped head was counted)
    this.counts.recordsLost += records + (partialRecordLength > 0 && !this.lastDropped ? 1 : 0);
    this.lastDropped = true;
  }
}
