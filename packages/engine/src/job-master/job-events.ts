import type { CheckpointRetention } from '../checkpoint/checkpoint-retention.js';
import type { TwoPhaseCommitStaging } from '../api/two-phase-commit-sink.js';
import type { ResolvedAdaptiveBatchOptions } from '../adaptive/adaptive-batch-options.js';
import type { ExchangeMode } from '../api/exchange-mode.js';
import type { FailoverStrategyName } from '../failover/failover-strategy.js';
import type { RestartStrategyOptions } from '../restart/restart-backoff-time-strategy.js';
import type { SinkOutput } from '../operators/stream-operator.js';
import type { TaskMetrics } from '../runtime/task-deployment.js';
import type { JobTopology } from '../topology/job-topology.js';
import type { FailoverRecord } from './failover-record.js';

/** The run options that decide what a job computes and how it is scheduled (plain JSON: no clock, no callbacks). */
export interface JobSubmittedOptions {
  readonly parallelism: number;
  readonly exchangeMode: ExchangeMode;
  /** `inprocess`, `workers`, or a TaskExecutorProvider's kind (e.g. `cluster`). */
  readonly executor: string;
  readonly workers: number;
  readonly slotsPerExecutor: number;
  readonly failoverStrategy: FailoverStrategyName;
  /** The restart strategy options as given, without a `clock`. */
  readonly restartStrategy: RestartStrategyOptions;
  readonly serializer: string;
  readonly releasePartitionsDuringJob: boolean;
  /** An adaptive run's options (`--parallelism auto`); absent when every parallelism was fixed. */
  readonly adaptive?: ResolvedAdaptiveBatchOptions;
  /**
   * Where local executors' tasks make their spill directories (RunJobOptions.spillDir, else this host's
   * os.tmpdir()), so `weft gc` finds what tasks killed with their processes left. Absent on a provider's
   * executors (other hosts) and in events of an older weft.
   */
  readonly spillRoot?: string;
  /**
   * A checkpointed run's CheckpointingOptions.retention, so `weft gc` knows whether the checkpoints of a
   * run that ended (and whose job master died before removing them) are garbage. Absent without
   * checkpoints and in events of an older weft.
   */
  readonly checkpointRetention?: CheckpointRetention;
}

/**
 * A job vertex's parallelism, fixed when the job is submitted or — an adaptive run's vertex without an
 * explicit parallelism (`decided: true`) — decided once its producers finished, logged before any of its
 * tasks is deployed, and reused (never decided again) by a job master that resumes the run.
 */
export interface VertexInitializedData {
  readonly vertexId: string;
  readonly parallelism: number;
  /** Decided at run time from the bytes its producers wrote (absent: fixed at submission). */
  readonly decided?: boolean;
  /** Decided: the framed bytes its inputs hold (a broadcast input counted once). */
  readonly bytesIn?: number;
  /** Decided: per input edge, what each subtask reads (inclusive ranges of partitions and subpartitions). */
  readonly inputs?: readonly VertexInputRanges[];
  /**
   * Decided: the skewed subpartitions split across several subtasks (Flink 2.x's skewed join), each
   * with its bytes over the split input edges `edgeIds` (a join's probe side) and its number of parts.
   * Absent: none was split.
   */
  readonly skewedSplits?: readonly SkewedSplitRecord[];
}

/** One skewed subpartition of a decided vertex, split into `parts` subtasks by producer ranges of `edgeIds`. */
export interface SkewedSplitRecord {
  /** `join`: its other side is replicated to each part; `aggregate`: the parts' accumulators are merged by the next stage. */
  readonly operator: 'join' | 'aggregate';
  readonly subpartition: number;
  readonly bytes: number;
  readonly parts: number;
  readonly edgeIds: readonly string[];
}

/** What each subtask of a decided vertex reads of one input edge: `subtasks[i]` is subtask i's. */
export interface VertexInputRanges {
  readonly edgeId: string;
  readonly subtasks: readonly { readonly partitions: { readonly start: number; readonly end: number }; readonly subpartitions: { readonly start: number; readonly end: number } }[];
}

/** One error, as events carry it. */
export interface JobEventError {
  readonly code?: string;
  readonly message: string;
}

/**
 * What happened to a job, one event per scheduler transition (Flink's JobEvent: ExecutionJobVertexInitializedEvent,
 * ExecutionVertexFinishedEvent, ExecutionVertexResetEvent …), in causal order: the order the scheduler made
 * the transitions. Every `data` is plain JSON, so an event log can store it and a new job master replay it.
 *
 * The order of one job: `job-submitted`, one `vertex-initialized` per job vertex (plan order), then per
 * region `task-deployed` for each of its tasks, `task-finished` as each reports, `partitions-released` as
 * consumer regions finish; a failure adds `failover` (the decision, once its tasks are chosen) and later
 * `tasks-reset` (their attempts given up, once they stopped and the backoff passed), after which the reset
 * tasks are deployed again with the next attempt. The job ends with a `sink-published` per text sink, then
 * `job-finished`; or with `job-failed`, or `job-cancelled` when it was aborted — exactly one of the three,
 * always the last event.
 *
 * Deliberately not here: `running` acknowledgements, progress counters of running tasks, executor loss
 * (a lost executor shows as the `failover` of its tasks) — nothing a replay needs.
 */
export type JobEvent =
  | {
      readonly type: 'job-submitted';
      readonly data: {
        readonly name: string;
        /** The job module's file URL; null for a job given in process as a `defineJob` result. */
        readonly jobModule: string | null;
        /** sha256 (hex) of the job module's file; null when there is no module. */
        readonly jobModuleHash: string | null;
        readonly args: readonly string[];
        readonly topology: JobTopology;
        /** Null for a job master built without run options (a test driving one directly). */
        readonly options: JobSubmittedOptions | null;
        readonly tasksTotal: number;
        /**
         * The text sinks' attempt directories (local paths or URLs), known before any attempt writes, so
         * `weft gc` finds the files of attempts that never logged `task-finished`. Absent when there are none.
         */
        readonly sinkTempDirs?: readonly string[];
        /**
         * Where the two-phase-commit sinks stage their transactions (TwoPhaseCommitSinkFactory.staging; a
         * local `file-commit` dir made absolute), so `weft gc` collects what a job that ended left staged.
         * Absent when no such sink says.
         */
        readonly twoPhaseStaging?: readonly { readonly sink: string; readonly staging: TwoPhaseCommitStaging }[];
        /** Each job vertex's chained operators' names, by vertex id (for displays; absent in events of an older weft). */
        readonly vertexNames?: Readonly<Record<string, string>>;
      };
    }
  | { readonly type: 'vertex-initialized'; readonly data: VertexInitializedData }
  | {
      readonly type: 'task-deployed';
      readonly data: {
        readonly executionVertexId: string;
        readonly attempt: number;
        /** The task executor it was deployed to (absent in events of a weft that did not log it; a replay ignores it). */
        readonly executor?: string;
      };
    }
  | {
      readonly type: 'task-finished';
      readonly data: {
        readonly executionVertexId: string;
        readonly attempt: number;
        /** The blocking result partitions the attempt committed, with the framed bytes it wrote to each. */
        readonly partitions: readonly { readonly partitionId: string; readonly bytes?: number; readonly subpartitionBytes?: readonly number[] }[];
        readonly metrics: TaskMetrics;
        /** What the attempt's sinks wrote (text-sink part files, collected values): what publishing a resumed run needs. */
        readonly sinks: readonly SinkOutput[];
        readonly durationMs: number;
      };
    }
  | { readonly type: 'tasks-reset'; readonly data: { readonly tasks: readonly string[]; readonly reason: string } }
  | { readonly type: 'failover'; readonly data: FailoverRecord }
  | { readonly type: 'partitions-released'; readonly data: { readonly partitionIds: readonly string[] } }
  | { readonly type: 'sink-published'; readonly data: { readonly sink: string; readonly path: string } }
  | { readonly type: 'job-finished'; readonly data: Record<string, never> }
  | { readonly type: 'job-failed'; readonly data: { readonly error: JobEventError } }
  | { readonly type: 'job-cancelled'; readonly data: { readonly reason: string } };

export type JobEventType = JobEvent['type'];

/** Every event type, in the order a job's events first appear (for tools that name one, e.g. `--inject-faults`). */
export const JOB_EVENT_TYPES = [
  'job-submitted',
  'vertex-initialized',
  'task-deployed',
  'task-finished',
  'tasks-reset',
  'failover',
  'partitions-released',
  'sink-published',
  'job-finished',
  'job-failed',
  'job-cancelled',
] as const satisfies readonly JobEventType[];

// every member of the union is listed above (a compile error names the one missing)
const everyTypeListed: Exclude<JobEventType, (typeof JOB_EVENT_TYPES)[number]> extends never ? true : never = true;
void everyTypeListed;

/** The event of type `T`. */
export type JobEventOf<T extends JobEventType> = Extract<JobEvent, { type: T }>;

/**
 * Told of every event of a job, synchronously, as the scheduler makes the transition (RunJobOptions.eventListener).
 *
 * A listener that returns a promise is awaited where the event must be stored before the scheduler acts
 * on it: a `task-finished` counts — its partitions become readable, its consumers schedulable, its region
 * finished — only once that promise resolved; the job's end waits for every promise. Other events are not
 * waited for one by one (the listener sees them in order and must keep that order itself, as an
 * append-only log does). A listener that throws or rejects fails the job with `WEFT_ERR_EVENT_LOG`: the
 * job never goes on with events unrecorded. A promise that never settles holds the job: retries and
 * timeouts are the listener's (a durable log's) own.
 */
export interface JobEventListener {
  onJobEvent(event: JobEvent): void | Promise<void>;
}

/** The listener of a job given none. */
export const noopJobEventListener: JobEventListener = { onJobEvent: () => {} };
