import { RECORD_HEADER_BYTES } from './record-framing.js';
import { type ApproximateCleanup, recordsStartingIn } from './approximate-cleanup.js';
import { invalidArgument } from './shuffle-error.js';

/** One data buffer the log retains: a copy of its bytes and where in the subpartition its records start. */
interface Retained {
  readonly bytes: Uint8Array;
  /** The bytes at its start that are the tail of a record begun earlier. */
  readonly partialRecordLength: number;
  /** The position (in records from the subpartition's start) of the first record that starts in it. */
  readonly firstRecord: number;
  /** How many records start in it. */
  readonly records: number;
}

/**
 * Upstream backup for one PIPELINED_APPROXIMATE subpartition: a copy of the data written to it since the
 * barrier of the latest checkpoint its producer knows completed, so that a consumer attempt restarted from
 * that checkpoint is served again from the very record its restored state read up to
 * (`CreateInputGateRequest.resumeFrom`) instead of from the next whole record written after it came back.
 * What its state had covered is not replayed, what it had not is: its recovery loses no record while the
 * log still holds the position — a consumer restored from a checkpoint with at-least-once barriers may see
 * a record twice that it had read after a channel's barrier, as at-least-once allows.
 *
 * Bounded: at most `limitBytes` of copies (the oldest go first; a position they held can no longer be
 * replayed, and the consumer is served as without a log). Trimmed when a checkpoint completes
 * (`checkpointCompleted`): what came before that checkpoint's barrier is in every state restored from it
 * or from a later one. Pure bookkeeping shared by the in-memory and network shuffles.
 */
export class ApproximateReplayLog {
  readonly #limitBytes: number;
  readonly #retained: Retained[] = [];
  /** The first retained entry (entries before it were trimmed; the array is compacted now and then). */
  #head = 0;
  #bytes = 0;
  /** Record position of each barrier written and not yet trimmed, by checkpoint id. */
  readonly #barriers = new Map<number, number>();
  /**
   * A barrier was written: before the first one no copy is kept, since no consumer can restore a
   * checkpoint whose barrier this subpartition never carried (a job without checkpoints keeps nothing) —
   * unless its producer restored a checkpoint (`restored`).
   */
  #started = false;

  constructor(limitBytes: number) {
    this.#limitBytes = limitBytes;
  }

  /**
   * The producer attempt begins at the state of a checkpoint it restored (before it wrote anything): copies
   * are kept from its first buffer on, not only after its first barrier — a consumer restored from that same
   * checkpoint resumes this attempt from record 0, and no later barrier may come (sources that finished take
   * no more checkpoints).
   */
  restored(): void {
    this.#started = true;
  }

  /** Bytes of copies retained. */
  get retainedBytes(): number {
    return this.#bytes;
  }

  /** A data buffer was written: `length` bytes of `segment` whose first record starts at position `firstRecord` (ApproximateCleanup.written). */
  append(segment: Uint8Array, length: number, partialRecordLength: number, firstRecord: number): void {
    if (!this.#started) return;
    if (length > this.#limitBytes) {
      this.#clear();
      return;
    }
    this.#retained.push({ bytes: segment.slice(0, length), partialRecordLength, firstRecord, records: recordsStartingIn(segment, length, partialRecordLength) });
    this.#bytes += length;
    while (this.#bytes > this.#limitBytes) this.#dropHead();
  }

  /** The barrier of checkpoint `checkpointId` was written after the first `recordPosition` records. */
  barrier(checkpointId: number, recordPosition: number): void {
    this.#started = true;
    this.#barriers.set(checkpointId, recordPosition);
  }

  /** Checkpoint `checkpointId` completed: whatever came before its barrier is no longer needed. */
  checkpointCompleted(checkpointId: number): void {
    const position = this.#barriers.get(checkpointId);
    if (position === undefined) return;
    for (const id of [...this.#barriers.keys()]) if (id <= checkpointId) this.#barriers.delete(id);
    for (let e = this.#retained[this.#head]; e !== undefined && e.firstRecord + e.records <= position; e = this.#retained[this.#head]) this.#dropHead();
  }

  /**
   * The buffers that serve a reader from record `recordPosition` on, the first one cut to start at that
   * record (the log's own bytes: the caller copies them); undefined when the log no longer holds that record's start (or
   * never did: a position beyond what was written, or one before the log began).
   */
  from(recordPosition: number): ReplayedBuffer[] | undefined {
    let i = this.#head;
    for (; i < this.#retained.length; i++) {
      const e = this.#retained[i]!;
      if (recordPosition < e.firstRecord + e.records) break;
    }
    const first = this.#retained[i];
    if (first === undefined || recordPosition < first.firstRecord) return undefined;
    let offset = first.partialRecordLength;
    for (let skip = recordPosition - first.firstRecord; skip > 0; skip--) offset += RECORD_HEADER_BYTES + readLength(first.bytes, offset);
    const out: ReplayedBuffer[] = [{ bytes: first.bytes.subarray(offset), partialRecordLength: 0 }];
    for (let j = i + 1; j < this.#retained.length; j++) out.push(this.#retained[j]!);
    return out;
  }

  #dropHead(): void {
    const e = this.#retained[this.#head];
    if (e === undefined) return;
    this.#bytes -= e.bytes.length;
    this.#retained[this.#head] = undefined as unknown as Retained;
    this.#head++;
    if (this.#head > 1024 && this.#head * 2 > this.#retained.length) {
      this.#retained.splice(0, this.#head);
      this.#head = 0;
    }
  }

  #clear(): void {
    this.#retained.length = 0;
    this.#head = 0;
    this.#bytes = 0;
  }
}

function readLength(bytes: Uint8Array, at: number): number {
  return (bytes[at]! | (bytes[at + 1]! << 8) | (bytes[at + 2]! << 16) | (bytes[at + 3]! << 24)) >>> 0;
}

/** A buffer a log replays: its bytes (the log's, not to be changed) and how many of them start with the tail of a record begun in the buffer before. */
export interface ReplayedBuffer {
  readonly bytes: Uint8Array;
  readonly partialRecordLength: number;
}

/** Where a reader that attached after one went away starts, and the buffers it is served before the live ones. */
export interface ApproximateResumption {
  /** The position of its first record (`channel-resumed`). */
  readonly recordPosition: number;
  /** Replayed from the subpartition's log, in order (the log's copies: the caller copies them into its segments; empty: it is served from the next whole record written). */
  readonly replay: readonly ReplayedBuffer[];
}

/**
 * A reader attached to an approximate subpartition (`cleanup.readerAttached`): undefined for the first one;
 * for one after a reader went away, a replay from `resumeFrom` (what its restored state read up to) when
 * `log` still holds that record (the cleanup's counts since the reader went away are undone: `replayed`),
 * else the next whole record written, as without a log.
 */
export function resumeReader(cleanup: ApproximateCleanup, log: ApproximateReplayLog | undefined, resumeFrom: number | null | undefined): ApproximateResumption | undefined {
  const resumedAt = cleanup.readerAttached();
  if (resumedAt === undefined) return undefined;
  const replay = resumeFrom === undefined || resumeFrom === null || resumeFrom >= resumedAt ? undefined : log?.from(resumeFrom);
  if (replay === undefined || resumeFrom === undefined || resumeFrom === null) return { recordPosition: resumedAt, replay: [] };
  cleanup.replayed();
  return { recordPosition: resumeFrom, replay };
}

/**
 * Checks `CreateInputGateRequest.resumeFrom` for a gate of `channels` channels: absent, or per channel a
 * non-negative whole number or undefined/null (none for that channel) (SHF_ERR_INVALID_ARGUMENT naming `resumeFrom`).
 */
export function validateResumeFrom(resumeFrom: unknown, channels: number): readonly (number | undefined)[] | undefined {
  if (resumeFrom === undefined) return undefined;
  if (!Array.isArray(resumeFrom) || resumeFrom.length !== channels) {
    throw invalidArgument('resumeFrom', `expected one record position per channel (${channels}), got ${Array.isArray(resumeFrom) ? `${resumeFrom.length}` : typeof resumeFrom}`);
  }
  resumeFrom.forEach((p: unknown, i) => {
    if (p === undefined || p === null) return;
    if (typeof p !== 'number' || !Number.isSafeInteger(p) || p < 0) throw invalidArgument('resumeFrom', `channel ${i}: expected a non-negative whole number, got ${String(p)}`);
  });
  return (resumeFrom as readonly (number | null | undefined)[]).map((p) => p ?? undefined);
}
