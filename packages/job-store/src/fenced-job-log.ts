import { invalidEngineArgument, isEngineError, JOB_EVENT_FORMAT_VERSION, type JobEventInput, type JobLog, type JobProgress, LEASE_RENEW_INTERVAL_MS, type LoggedJobEvent, type PublishedJobProgress } from '@weft/engine';
import { type Logger, closedError } from '@weft/shuffle-api';

/** What a store does for one log: write one event at its seq, if the epoch is still the newest. */
export interface JobLogWriter {
  /**
   * Stores `event` atomically with the check that `event.epoch` is the job's newest epoch: WEFT_ERR_FENCED
   * otherwise, nothing written. Idempotent: an event already stored at `event.seq` by the same epoch (a
   * retry whose first try went through) is success. Retries transient failures itself.
   */
  write(event: LoggedJobEvent, checkOpen: () => void): Promise<void>;
  /**
   * Renews the job's lease for `epoch` (its renewal time), only while `epoch` is still the newest; one try,
   * no retries (the next renewal is a second away). Resolves false when a newer epoch holds the lease.
   */
  renew(epoch: number, atMs: number): Promise<boolean>;
  /**
   * Overwrites the job's progress snapshot with `snapshot` (its epoch inside), only while that epoch is
   * still the newest; one try, no retries (the next one is a second away). False when a newer epoch holds the lease.
   */
  publish(snapshot: PublishedJobProgress): Promise<boolean>;
}

export interface FencedJobLogRequest {
  readonly jobId: string;
  readonly epoch: number;
  readonly history: readonly LoggedJobEvent[];
  readonly writer: JobLogWriter;
  readonly clock: () => number;
  /** Throws SHF_ERR_CLOSED once the store is closing: ends the retries of a pending append. */
  readonly checkStoreOpen: () => void;
  /** Called once when the log has closed (the store forgets it). */
  readonly onClose: () => void;
}

/** What a store knows once it has taken a job's lease at a new epoch. */
export interface OpenedJobLogRequest extends Omit<FencedJobLogRequest, 'onClose'> {
  readonly owner: string;
  readonly logger: Logger;
  /** The store's open logs: the new log is added, and removed once it has closed. */
  readonly openLogs: Set<FencedJobLog>;
}

/** Logs the lease change (`epoch - 1 -> epoch`) and returns the new log, kept in `openLogs` until it closes. */
export function openedJobLog(request: OpenedJobLogRequest): FencedJobLog {
  const { owner, logger, openLogs, ...fenced } = request;
  logger.info({ jobId: fenced.jobId, epoch: fenced.epoch, owner }, `job event log: lease epoch ${fenced.epoch - 1} -> ${fenced.epoch}`);
  const log: FencedJobLog = new FencedJobLog({ ...fenced, onClose: () => openLogs.delete(log) });
  openLogs.add(log);
  return log;
}

/**
 * The JobLog of every store here: appends run one at a time in call order, each with the next seq. Once
 * an append has failed (fenced, or the store kept failing) every later append rejects with that error:
 * the log never skips an event and goes on as if nothing happened.
 */
export class FencedJobLog implements JobLog {
  readonly jobId: string;
  readonly epoch: number;
  readonly history: readonly LoggedJobEvent[];
  readonly #writer: JobLogWriter;
  readonly #clock: () => number;
  readonly #onClose: () => void;
  readonly #checkStoreOpen: () => void;
  #nextSeq: number;
  #tail: Promise<unknown> = Promise.resolve();
  #failure: unknown;
  #closing = false;
  #closed: Promise<void> | undefined;
  readonly #renewal: ReturnType<typeof setInterval>;
  #renewing = false;

  constructor(request: FencedJobLogRequest) {
    this.jobId = request.jobId;
    this.epoch = request.epoch;
    this.history = Object.freeze([...request.history]);
    this.#writer = request.writer;
    this.#clock = request.clock;
    this.#onClose = request.onClose;
    this.#checkStoreOpen = request.checkStoreOpen;
    this.#nextSeq = (request.history[request.history.length - 1]?.seq ?? 0) + 1;
    // the lease stays visibly alive while this log is open (a standby master takes over once it is not)
    this.#renewal = setInterval(() => this.#renew(), LEASE_RENEW_INTERVAL_MS);
    this.#renewal.unref();
  }

  #renew(): void {
    if (this.#renewing || this.#closing || this.#failure !== undefined) return;
    this.#renewing = true;
    this.#writer
      .renew(this.epoch, this.#clock())
      .then((held) => {
        if (!held) clearInterval(this.#renewal); // fenced: a newer master holds the lease now
      })
      .catch(() => {}) // a store hiccup: the next renewal tries again
      .finally(() => (this.#renewing = false));
  }

  append(input: JobEventInput): Promise<LoggedJobEvent> {
    if (this.#closing) return Promise.reject(closedError(`job log ${this.jobId}`));
    if (typeof input !== 'object' || input === null || typeof input.type !== 'string' || input.type === '') {
      return Promise.reject(invalidEngineArgument('event.type', 'expected a non-empty string'));
    }
    let data: unknown;
    try {
      const json = JSON.stringify(input.data);
      if (json === undefined) throw new Error('not JSON');
      data = JSON.parse(json);
    } catch (cause) {
      return Promise.reject(invalidEngineArgument('event.data', `must be JSON (${(cause as Error).message})`));
    }
    const run = async (): Promise<LoggedJobEvent> => {
      if (this.#failure !== undefined) throw this.#failure;
      const event: LoggedJobEvent = { v: JOB_EVENT_FORMAT_VERSION, seq: this.#nextSeq, epoch: this.epoch, atMs: this.#clock(), type: input.type, data };
      try {
        await this.#writer.write(event, this.#checkStoreOpen);
      } catch (error) {
        if (!isClosed(error)) this.#failure = error;
        throw error;
      }
      this.#nextSeq++;
      return event;
    };
    const result = this.#tail.then(run, run);
    this.#tail = result.catch(() => undefined);
    return result;
  }

  /**
   * Overwrites the job's live progress (not an event: no seq, not in the history). Dropped silently once
   * a newer epoch holds the lease or this log failed; rejects with SHF_ERR_CLOSED after close(), and with
   * the store's error when the one try failed (the caller logs it and goes on).
   */
  async publishProgress(progress: JobProgress): Promise<void> {
    if (this.#closing) throw closedError(`job log ${this.jobId}`);
    if (this.#failure !== undefined) return;
    this.#checkStoreOpen();
    await this.#writer.publish({ jobId: this.jobId, epoch: this.epoch, atMs: this.#clock(), progress: JSON.parse(JSON.stringify(progress)) as JobProgress });
  }

  /** Graceful: appends called before it still complete (or fail); later ones reject with SHF_ERR_CLOSED. */
  close(): Promise<void> {
    this.#closing = true;
    clearInterval(this.#renewal);
    return (this.#closed ??= this.#tail.then(() => this.#onClose()));
  }

  [Symbol.asyncDispose](): Promise<void> {
    return this.close();
  }
}

function isClosed(error: unknown): boolean {
  return (error as { code?: unknown } | null)?.code === 'SHF_ERR_CLOSED' && !isEngineError(error);
}
