import { EngineError } from '../errors/engine-error.js';
import type { ExternalFileSystem } from '../io/external-file-system.js';
import type { SinkOutput } from '../operators/stream-operator.js';
import type { TaskResult } from '../runtime/task-events.js';
import type { JobEventEmitter } from './job-event-emitter.js';
import type { JobFence } from './job-fence.js';
import type { ScheduledOutcome } from './job-scheduler-options.js';
import type { PartitionReleases } from './partition-releases.js';
import type { RegionRestarts } from './region-restarts.js';
import { discardTempDirs, type PublishedSinks, publishSinks } from './sink-publisher.js';
import type { TaskAttempts } from './task-attempts.js';

export interface JobCompletionOptions {
  readonly jobName: string;
  /** The text sinks' per-attempt directories. */
  readonly sinkTempDirs: readonly string[];
  /** Where `<scheme>://` sinks live. */
  readonly fileSystems: readonly ExternalFileSystem[];
  /** Sinks an earlier run of a resumed job published (sink → path): they stay published, not published again. */
  readonly publishedSinks: ReadonlyMap<string, string>;
  readonly events: JobEventEmitter;
  /** Read only: the finished attempts' results (their sinks), and the counts the outcome reports. */
  readonly attempts: TaskAttempts;
  readonly restarts: RegionRestarts;
  readonly releases: PartitionReleases;
  /** The run's fence: a fenced run publishes nothing, discards nothing, and fails with the fence's error. @defaultValue none */
  readonly fence?: JobFence | undefined;
  /**
   * A failed job leaves its text sinks' attempt files (a checkpointed job: the part files its last
   * checkpoint recorded are what a restore `--from-checkpoint` continues from). @defaultValue false
   */
  readonly keepSinkFilesOnFailure?: boolean | undefined;
  /**
   * The two-phase-commit sinks' final commit (success) or abort (failure) of what the finished attempts
   * pre-committed (two-phase-commits.ts). @defaultValue none: the job has no such sink
   */
  readonly twoPhaseSinks?: { commit(outputs: readonly SinkOutput[]): Promise<void>; abort(outputs: readonly SinkOutput[]): Promise<void> } | undefined;
}

const NOTHING_PUBLISHED: PublishedSinks = { collected: {}, files: [] };

/**
 * The end of a job, once its scheduler decided it (the scheduler's last transitions call it):
 * `succeeded()` publishes the sinks from the finished attempts (all or nothing, a `sink-published` per
 * text sink; the attempts' part files are removed once those events are stored) and emits `job-finished`;
 * `failed(error)` emits `job-failed` (or `job-cancelled` when the job was aborted) and, once it is stored,
 * discards the sinks' attempt files. Each first waits for the events before it to be stored: an
 * append refused with WEFT_ERR_FENCED is how a run taken over learns it before it touches a sink. Either way `outcome` resolves only once the
 * event listener took every event; a job whose events could not all be taken is reported failed
 * (`WEFT_ERR_JOB_FAILED` caused by `WEFT_ERR_EVENT_LOG`). A fenced run (JobFence) is hands-off: it
 * neither publishes nor discards the sinks' files (the same directories the newer run writes into), and
 * its outcome's error is the fence's WEFT_ERR_FENCED. It changes no scheduling state.
 */
export class JobCompletion {
  readonly outcome: Promise<ScheduledOutcome>;
  readonly #options: JobCompletionOptions;
  #resolve!: (outcome: ScheduledOutcome) => void;

  constructor(options: JobCompletionOptions) {
    this.#options = options;
    this.outcome = new Promise<ScheduledOutcome>((resolve) => (this.#resolve = resolve));
  }

  /** `WEFT_ERR_JOB_FAILED` for the job, caused by `cause`. */
  jobFailed(cause: Error): EngineError {
    return new EngineError('WEFT_ERR_JOB_FAILED', `job ${JSON.stringify(this.#options.jobName)} failed: ${cause.message}`, { cause });
  }

  /** Every task finished: the sinks are published, then the job finishes — unless publishing, or storing an event, failed. */
  async succeeded(): Promise<void> {
    const { events, attempts, sinkTempDirs, publishedSinks, fileSystems, fence } = this.#options;
    // the finished tasks' events stored first: a run a newer one took over learns it from their refusal
    // before it publishes into the outputs the newer run publishes
    await events.settled();
    if (events.failure !== undefined) fence?.observe(events.failure);
    if (fence?.error !== undefined) {
      this.#end({ error: fence.error, aborted: false }, NOTHING_PUBLISHED);
      return;
    }
    let published: PublishedSinks;
    try {
      const outputs = attempts.results.flatMap((r) => (r === undefined ? [] : r.sinks));
      const twoPhase = this.#options.twoPhaseSinks;
      published = await publishSinks(
        outputs.filter((o) => o.kind !== 'text-file' || !publishedSinks.has(o.sink)),
        sinkTempDirs,
        fileSystems,
        // the final commit of the two-phase-commit sinks, after the text sinks' (rolled back if it fails)
        twoPhase === undefined ? undefined : () => twoPhase.commit(outputs),
      );
      const earlier = [...publishedSinks].map(([sink, path]) => ({ sink, path, parts: outputs.filter((o) => o.kind === 'text-file' && o.sink === sink).length }));
      if (earlier.length > 0) published = { ...published, files: [...earlier, ...published.files] };
    } catch (error) {
      this.#end({ error: this.jobFailed(error as Error), aborted: false }, NOTHING_PUBLISHED);
      return;
    }
    for (const file of published.files) events.emit({ type: 'sink-published', data: { sink: file.sink, path: file.path } });
    // the attempts' part files go only once the log holds what was published: a master killed before
    // that leaves them, and the run resuming it publishes the unrecorded sinks again from them
    await events.settled();
    if (events.failure === undefined) await discardTempDirs(sinkTempDirs, fileSystems);
    const unrecorded = events.failure;
    this.#end(unrecorded === undefined ? undefined : { error: this.jobFailed(unrecorded), aborted: false }, published);
  }

  /**
   * The job failed and every task stopped: its last event is stored, then the sinks' attempt files are
   * discarded — unless that event's refusal (or an earlier one) said the run is fenced: the sinks'
   * directories are the job's, the newer run writes into them too.
   */
  async failed(error: EngineError, aborted: boolean): Promise<void> {
    const { events, fence, twoPhaseSinks: twoPhase, keepSinkFilesOnFailure } = this.#options;
    const failure = { error, aborted };
    this.#emitLast(failure);
    await events.settled();
    if (events.failure !== undefined) fence?.observe(events.failure);
    if (fence?.isFenced !== true && keepSinkFilesOnFailure !== true) {
      await twoPhase?.abort(this.#options.attempts.results.flatMap((r) => (r === undefined ? [] : r.sinks))).catch(() => {});
      await discardTempDirs(this.#options.sinkTempDirs, this.#options.fileSystems);
    }
    this.#resolveOnceSettled(failure, NOTHING_PUBLISHED);
  }

  /** The job's last event, then its outcome once every event was taken. */
  #end(failure: { error: EngineError; aborted: boolean } | undefined, published: PublishedSinks): void {
    this.#emitLast(failure);
    this.#resolveOnceSettled(failure, published);
  }

  #emitLast(failure: { error: EngineError; aborted: boolean } | undefined): void {
    const { events } = this.#options;
    if (failure === undefined) events.emit({ type: 'job-finished', data: {} });
    else if (failure.aborted) events.emit({ type: 'job-cancelled', data: { reason: failure.error.message } });
    else events.emit({ type: 'job-failed', data: { error: { code: failure.error.code, message: failure.error.message } } });
  }

  #resolveOnceSettled(failure: { error: EngineError; aborted: boolean } | undefined, published: PublishedSinks): void {
    const { events, attempts, restarts, releases } = this.#options;
    void events.settled().then(() => {
      const unrecorded = events.failure;
      const error = this.#options.fence?.error ?? failure?.error ?? (unrecorded === undefined ? undefined : this.jobFailed(unrecorded));
      this.#resolve({
        status: error === undefined ? 'succeeded' : 'failed',
        ...(error === undefined ? {} : { error }),
        ...(failure?.aborted === true ? { cancelled: true as const } : {}),
        results: attempts.results.filter((r): r is TaskResult => r !== undefined),
        published,
        attemptsDeployed: attempts.deployedTotal,
        failures: restarts.failures,
        restarts: restarts.failovers.length,
        failovers: [...restarts.failovers],
        attempts: attempts.numbers(),
        partitionsReleasedDuringJob: releases.released,
        bytesReleasedDuringJob: releases.bytesReleased,
      });
    });
  }
}
