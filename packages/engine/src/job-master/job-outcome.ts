import type { FailoverResume } from './failover-resumes.js';
import type { ApproximateRecoveryRecord } from './approximate-recoveries.js';
import type { EngineError } from '../errors/engine-error.js';
import type { TaskResult } from '../runtime/task-events.js';
import type { ExecutorLossRecord, FailoverRecord } from './failover-record.js';
import type { PublishedSinks } from './sink-publisher.js';
import type { DeploymentLatencySummary } from './deployment-latencies.js';
import type { PlacementSummary } from './placement-counts.js';

/** How a job ended, its sinks published (when it succeeded). */
export interface JobOutcome {
  readonly status: 'succeeded' | 'failed';
  /** `WEFT_ERR_JOB_FAILED` with the failing task's error as cause. */
  readonly error?: EngineError;
  /** The job was aborted (the caller's signal) while it ran, and ended with `job-cancelled`; absent otherwise. */
  readonly cancelled?: true;
  /** The result of the finished (current) attempt of each execution vertex. */
  readonly results: readonly TaskResult[];
  /** What the sinks published: nothing when the job failed (except when only its last events could not be stored). */
  readonly published: PublishedSinks;
  readonly attemptsDeployed: number;
  readonly failures: number;
  readonly restarts: number;
  /** Each failover, in order. */
  readonly failovers: readonly FailoverRecord[];
  /** Per failover, in the same order: when its failed task read again. */
  readonly failoverResumes?: readonly FailoverResume[];
  /** Task executors lost while the job ran. */
  readonly executorsLost: readonly ExecutorLossRecord[];
  /** From each deployment to its task's `running` report, on the job master's clock. */
  readonly deploymentLatency: DeploymentLatencySummary;
  /** Where tasks were deployed: attempts per executor, and region deployments spread over several. */
  readonly placement: PlacementSummary;
  /** Per execution vertex (topology order): its last attempt number (0: never restarted). */
  readonly attempts: readonly number[];
  /** Partitions released while the job ran, once their consumers finished (JobMasterOptions.releasePartitionsDuringJob). */
  readonly partitionsReleasedDuringJob: number;
  /** Bytes their producers wrote to those partitions (framed records, before compression). */
  readonly bytesReleasedDuringJob: number;
  /** An approximate job (ALL_EDGES_PIPELINED_APPROXIMATE): each single-task recovery, in order. Absent for other jobs. */
  readonly approximateRecoveries?: readonly ApproximateRecoveryRecord[];
}
