import type { ResolvedAdaptiveBatchOptions } from '../adaptive/adaptive-batch-options.js';
import type { ExchangeMode } from '../api/exchange-mode.js';
import type { CheckpointSummary } from '../checkpoint/job-checkpointing.js';
import type { EngineError } from '../errors/engine-error.js';
import type { FailoverStrategyName } from '../failover/failover-strategy.js';
import type { JobTopology } from '../topology/job-topology.js';
import type { ApproximateRecoveryRecord } from './approximate-recoveries.js';
import type { DeploymentLatencySummary } from './deployment-latencies.js';
import type { ExecutorLossRecord, FailoverRecord } from './failover-record.js';
import type { FailoverResume } from './failover-resumes.js';
import type { EdgeSummary, VertexSummary } from './job-progress.js';
import type { PlacementSummary } from './placement-counts.js';

/** How a job ended, with what it produced and moved. */
export interface JobResult {
  readonly jobId: string;
  readonly name: string;
  readonly status: 'succeeded' | 'failed';
  /** `WEFT_ERR_JOB_FAILED` (cause: the failing task's error) when the job failed. */
  readonly error?: EngineError;
  readonly durationMs: number;
  readonly parallelism: number;
  readonly exchangeMode: ExchangeMode;
  /** `kind`: `inprocess`, `workers`, or the provider's kind; `executors`: how many the job ran on (joined ones included). */
  readonly executor: { readonly kind: string; readonly executors: number; readonly slots: number };
  /** Process ids of every worker the job started (replacements included); empty in process. */
  readonly workerPids: readonly number[];
  /**
   * The job's topology (docs/DESIGN.md contract 1): what `weft plan` reads to predict a failure's blast
   * radius. An adaptive run's decided vertices have their decided parallelism (undecided ones, their reserved size).
   */
  readonly topology: JobTopology;
  readonly failoverStrategy: FailoverStrategyName;
  /** The restart strategy and its settings, e.g. `FixedDelayRestartBackoffTimeStrategy(attempts=3, delayMs=100)`. */
  readonly restartStrategy: string;
  readonly regions: number;
  readonly tasks: number;
  readonly vertices: readonly VertexSummary[];
  readonly edges: readonly EdgeSummary[];
  readonly recordsRead: number;
  readonly recordsShuffled: number;
  readonly bytesShuffled: number;
  readonly attempts: number;
  readonly failures: number;
  readonly restarts: number;
  /** Each failover: which task failed and why, which tasks were reset (see FailoverRecord). */
  readonly failovers: readonly FailoverRecord[];
  /**
   * Per failover, in the same order: how long until its failed task read again (FailoverResume: from the
   * failover to the next attempt's first record, by that attempt's own report) — one measure for a region
   * restart and a single-task (approximate) recovery alike.
   */
  readonly failoverResumes: readonly FailoverResume[];
  /** Task executors (worker processes) lost while the job ran. */
  readonly executorsLost: readonly ExecutorLossRecord[];
  /**
   * Where tasks ran: attempts deployed per task executor, and how many region deployments were spread
   * over more than one (pipelined regions span executors when the pipelined shuffle serves partitions
   * across them, e.g. @weft/shuffle-network with worker processes).
   */
  readonly placement: PlacementSummary;
  /** Per task attempt, from its deployment to its `running` report, on the job master's clock (DeploymentLatencies). */
  readonly deploymentLatency: DeploymentLatencySummary;
  /** The last attempt number of each execution vertex, by id (0: never reset). */
  readonly taskAttempts: Readonly<Record<string, number>>;
  /** Partitions released while the job ran, once every region reading them finished (RunJobOptions.releasePartitionsDuringJob). */
  readonly partitionsReleasedDuringJob: number;
  /** What their producers wrote to them: framed record bytes, before compression. */
  readonly bytesReleasedDuringJob: number;
  /** Files the text sinks published (none when the job failed). */
  readonly outputs: readonly { readonly sink: string; readonly path: string; readonly parts: number }[];
  /** Values of `collect(name)` sinks, subtask by subtask (empty when the job failed). */
  readonly collected: Readonly<Record<string, unknown[]>>;
  /** Whether this run resumed an earlier run of its job id (RunJobOptions.eventLog). */
  readonly resumed: boolean;
  /** Tasks an earlier run finished that this one did not run again (`attempts` counts only this run's). */
  readonly tasksReused: number;
  /** Why an earlier run of the job id could not be resumed, when it restarted cleanly instead. */
  readonly resumeFallback?: string;
  /** The lease epoch this run held in the event log (absent without one). */
  readonly epoch?: number;
  /** An adaptive run (RunJobOptions.adaptive): its resolved options (each vertex's decision is in `vertices`). */
  readonly adaptive?: ResolvedAdaptiveBatchOptions;
  /** A checkpointed run (RunJobOptions.checkpointing): how its checkpoints went. */
  readonly checkpoints?: CheckpointSummary;
  /** An approximate job (ALL_EDGES_PIPELINED_APPROXIMATE): each single-task recovery, in order. */
  readonly approximateRecoveries?: readonly ApproximateRecoveryRecord[];
}
