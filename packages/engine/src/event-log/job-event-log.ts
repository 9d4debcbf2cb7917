import type { CheckpointStore } from '../checkpoint/checkpoint-store.js';
import type { JobProgress } from '../job-master/job-progress.js';

/**
 * The job event log: a generic append-only log per job id, typed by event name, that lets a new job master
 * recover what an earlier one knew (docs/DESIGN.md, JobMaster failover; Flink FLIP-383). The engine owns
 * this contract and is handed an implementation (`@weft/job-store` has SQLite and Redis ones); it never
 * imports one.
 *
 * Lifecycle and ownership:
 * - A `JobEventLog` is a handle on one store. Its owner (the CLI) creates it and calls `close()` once;
 *   `close()` is graceful, idempotent and memoized (a second call waits for the first). Every method called
 *   after `close()` rejects with `SHF_ERR_CLOSED`. Closing the store closes every `JobLog` it opened.
 * - `open()` takes the job's lease: it makes a new epoch, the previous epoch + 1 (1 for a job id the store
 *   has never seen; a store may skip a number when it retried an open whose reply was lost — epochs only
 *   ever grow), and returns a `JobLog` holding every whole event earlier epochs wrote (once the new epoch
 *   exists no earlier one can append, so the history is complete). A torn last event is dropped from the
 *   store under the new lease. Only one job master should run a job at a time; when two do, the
 *   newest epoch wins and the older one is fenced (below).
 * - A `JobLog` belongs to the job master that opened it. `close()` releases its resources only (the events
 *   and the epoch stay in the store); appends after it reject with `SHF_ERR_CLOSED`.
 *
 * Durability: `append()` resolves only once the event is stored durably (SQLite: committed with
 * `synchronous = FULL`; Redis: acknowledged by Redis, so as durable as the server's `appendfsync`). A job
 * master acts on an event (counts a task as finished, deploys a consumer) only after its append resolved.
 * An append that fails transiently (lock held, connection re-established) is retried with backoff for a
 * bounded time, then rejects with `WEFT_ERR_EVENT_LOG`: the log never silently stops recording, and the
 * caller fails the job loudly.
 *
 * Fencing: an append is stored only if, atomically with the write, its log's epoch is still the newest for
 * the job. Otherwise it rejects with `WEFT_ERR_FENCED` and writes nothing — an old job master that wakes
 * up (SIGSTOP/SIGCONT, a network partition) cannot change the log.
 *
 * Format: every event carries `v`, the format version (1). Reading an event with a higher version rejects
 * with `WEFT_ERR_EVENT_LOG` naming the version (a newer weft wrote it). A torn last event (a crash in the
 * middle of a write) is dropped with a logged warning — the history ends at the last whole event; a damaged
 * event followed by whole ones is corruption, refused with `WEFT_ERR_EVENT_LOG`.
 *
 * Not in the contract: the meaning of `type` and the shape of `data` (the job master's, see
 * job-master/job-events.ts; the log stores any JSON), compaction or snapshots, subscriptions/tailing
 * (readers poll `readRun`), ordering across jobs, access control, and retention (`deleteRun` is called by
 * garbage collection; nothing expires by itself).
 */
export interface JobEventLog {
  /** A description of the store for messages, without secrets, e.g. `sqlite:///var/weft/meta.db`. */
  readonly description: string;
  /**
   * Takes the lease of `jobId` with the next epoch and returns its log with the history earlier epochs
   * wrote. `owner` names the taker in the leases record (host/pid, for operators); it is not checked.
   * With `ifEpoch`, only while the job's newest epoch is still that one: otherwise `WEFT_ERR_FENCED`,
   * nothing changed.
   */
  open(request: OpenJobLogRequest): Promise<JobLog>;
  /** Every run the store knows, one record per job id, oldest first. Takes no lease. */
  listRuns(): Promise<JobRunRecord[]>;
  /**
   * The record `listRuns()` has for `jobId` (undefined for an id it does not name), without summing up
   * every other run. Takes no lease. Optional: callers fall back to `listRuns()`.
   */
  readRunRecord?(jobId: string): Promise<JobRunRecord | undefined>;
  /** Every whole event of `jobId`, in order (empty for an unknown id). Takes no lease. */
  readRun(jobId: string): Promise<readonly LoggedJobEvent[]>;
  /**
   * Removes the events and the lease record of `jobId` (garbage collection); `listRuns` no longer names
   * it. Its epoch is kept: the next `open()` of the id still takes a higher one, since shuffles fence by
   * the epochs they saw. A no-op for an unknown id. With `ifEpoch` (the epoch of a lease the caller holds),
   * only while that epoch is still the newest: otherwise `WEFT_ERR_FENCED`, nothing removed — a run that
   * opened the id since keeps its log.
   */
  deleteRun(jobId: string, options?: DeleteJobRunOptions): Promise<void>;
  /**
   * The live counters the job master holding `jobId`'s lease last published (`JobLog.publishProgress`),
   * or undefined when none was (or it expired: a store may keep it for a bounded time only). Takes no
   * lease. Optional: a store without it has no live progress to offer (a UI then shows logged counts).
   */
  readProgress?(jobId: string): Promise<PublishedJobProgress | undefined>;
  /**
   * The completed checkpoints of `jobId` in this store, written by the job master of lease `epoch` (fenced
   * like its appends). Optional: without it a checkpointed run records its checkpoints in memory only.
   */
  checkpointStore?(jobId: string, epoch: number): CheckpointStore;
  close(): Promise<void>;
  [Symbol.asyncDispose](): Promise<void>;
}

export interface OpenJobLogRequest {
  readonly jobId: string;
  /** Who takes the lease, e.g. `host:pid`; stored with the epoch for operators. */
  readonly owner: string;
  /**
   * Take the lease only while the job's newest epoch is this one (the `epoch` of the `JobRunRecord` the
   * caller acted on): a compare-and-set, so a caller that read a run's record (`weft gc`) never fences a
   * run that opened the id since. Otherwise the open rejects with `WEFT_ERR_FENCED` and changes nothing.
   * Compare it with the epoch the store's own `JobRunRecord` reports (SQLite: the lease record's, 0 when
   * that is gone; Redis: the epoch counter's, 0 for an id never opened).
   */
  readonly ifEpoch?: number;
}

export interface DeleteJobRunOptions {
  /** Delete only while this epoch is still the job's newest (a lease the caller took, `open({ ifEpoch })`). */
  readonly ifEpoch?: number;
}

/** One job's log, as seen by the job master that holds its lease at `epoch`. */
export interface JobLog {
  readonly jobId: string;
  /** This log's epoch: previous epoch + 1, the newest at the time `open()` returned. */
  readonly epoch: number;
  /** Every whole event earlier epochs wrote, in order, at the time of `open()`. */
  readonly history: readonly LoggedJobEvent[];
  /**
   * Appends one event and resolves with it once it is durable; `WEFT_ERR_FENCED` (nothing written) when a
   * newer epoch has opened the job since; `WEFT_ERR_EVENT_LOG` when the store kept failing past the retry
   * bound. `data` must be JSON (no undefined at the top, no cycles, no bigint). Appends of one log are
   * stored in the order they were called.
   */
  append(event: JobEventInput): Promise<LoggedJobEvent>;
  /**
   * Overwrites the job's live progress snapshot (read back by `JobEventLog.readProgress`): not an event —
   * nothing is appended, nothing replayed, no history kept. Stored only while this log's epoch is still
   * the newest (a fenced job master's counters are dropped silently). Best effort: callers log a failure
   * and go on (the job never fails for it). Optional: a store without it shows no live counters.
   */
  publishProgress?(progress: JobProgress): Promise<void>;
  close(): Promise<void>;
  [Symbol.asyncDispose](): Promise<void>;
}

/** What a job master appends: a type name and its JSON data. */
export interface JobEventInput {
  readonly type: string;
  readonly data: unknown;
}

/** A running job's live counters as its job master last published them (`JobLog.publishProgress`). */
export interface PublishedJobProgress {
  readonly jobId: string;
  /** The epoch of the log that published it. */
  readonly epoch: number;
  /** When it was published: ms since the epoch, the publishing process's clock. */
  readonly atMs: number;
  readonly progress: JobProgress;
}

/** How often `runJob` publishes a running job's progress to its log (RunJobOptions.progressPublishIntervalMs). */
export const PROGRESS_PUBLISH_INTERVAL_MS = 1000;

/** How often an open JobLog renews its job's lease (JobRunRecord.leaseRenewedAtMs). */
export const LEASE_RENEW_INTERVAL_MS = 1000;

/** The current format version of a logged event. */
export const JOB_EVENT_FORMAT_VERSION = 1;

/** One stored event. `seq` counts from 1 per job, across epochs; `atMs` is the appending process's clock. */
export interface LoggedJobEvent {
  readonly v: typeof JOB_EVENT_FORMAT_VERSION;
  readonly seq: number;
  readonly epoch: number;
  readonly atMs: number;
  readonly type: string;
  /** JSON */
  readonly data: unknown;
}

/** A run as `listRuns()` sums it up (what `weft jobs` prints). */
export interface JobRunRecord {
  readonly jobId: string;
  /** The newest epoch that opened the job (0 when the lease record is gone but events remain). */
  readonly epoch: number;
  /** How many whole events the log holds. */
  readonly events: number;
  /** `atMs` of the first and the last event; the lease's time when there is no event yet. */
  readonly firstAtMs: number;
  readonly lastAtMs: number;
  /** `type` of the last event (undefined when there is none yet). */
  readonly lastType: string | undefined;
  /** Owner of the newest lease (undefined when unknown). */
  readonly owner: string | undefined;
  /**
   * When the newest lease's holder last renewed it (ms since the epoch, the holder's clock): a JobLog
   * renews its lease every `LEASE_RENEW_INTERVAL_MS` while it is open, so a standby job master can tell a
   * live holder from a dead one. The lease's taking time when it was never renewed; undefined when unknown.
   */
  readonly leaseRenewedAtMs: number | undefined;
  /** `data.name` of the first 'job-submitted' event, when it has one. */
  readonly jobName: string | undefined;
  /** `data.tasksTotal` of the last 'job-submitted' event, when it has one (less the skipped subtasks of decided adaptive vertices). */
  readonly tasksTotal: number | undefined;
  /**
   * True when `tasksTotal` counts vertices not decided yet (`--parallelism auto`, never initialized in the
   * log) at their reserved size: the run's real total is lower, known once they are decided.
   */
  readonly tasksTotalIsUpperBound?: boolean;
  /**
   * Execution vertices with a 'task-finished' event that no later 'tasks-reset' names: the tasks a resume
   * would reuse (if their partitions still exist).
   */
  readonly tasksFinished: number;
  /**
   * From the last terminal event ('job-finished', 'job-failed', 'job-cancelled'; a later 'job-submitted'
   * makes the run unfinished again); 'unreadable' when the log cannot be read (see `problem`).
   */
  readonly status: JobRunStatus;
  /** Why the log cannot be read (a newer format version, corruption); the counts are then 0. */
  readonly problem: string | undefined;
}

export type JobRunStatus = 'unfinished' | 'succeeded' | 'failed' | 'cancelled' | 'unreadable';
