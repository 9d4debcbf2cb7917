import type { ExternalFileSystem } from '../io/external-file-system.js';
import type { JobId, Logger, ShuffleMaster } from '@weft/shuffle-api';
import type { ExecutionTopology } from '../execution/execution-topology.js';
import type { FailoverStrategy } from '../failover/failover-strategy.js';
import type { FaultInjector } from '../faults/fault-injector.js';
import type { JobPlan } from '../graph/job-plan.js';
import type { PipelinedRegions } from '../regions/pipelined-regions.js';
import type { RestartBackoffTimeStrategy } from '../restart/restart-backoff-time-strategy.js';
import type { ExecutorSlots } from './executor-slots.js';
import type { FailoverRecord } from './failover-record.js';
import type { JobFence } from './job-fence.js';
import type { JobEventListener, JobSubmittedOptions } from './job-events.js';
import type { JobOutcome } from './job-outcome.js';
import type { RecoveryPlan } from './recovery-plan.js';

/** What `job-submitted` says besides the plan: the module, its hash, the arguments and the run options. */
export interface JobSubmission {
  readonly jobModule: string | null;
  readonly jobModuleHash: string | null;
  readonly args: readonly string[];
  /** Null where the scheduler was built without run options (a test driving a JobMaster directly). */
  readonly options: JobSubmittedOptions | null;
}

export interface JobSchedulerOptions {
  readonly jobId: JobId;
  readonly plan: JobPlan;
  readonly topology: ExecutionTopology;
  readonly regions: PipelinedRegions;
  readonly blockingMaster: ShuffleMaster;
  /** Registers the pipelined partitions of regions spread over executors. @defaultValue none: each region runs whole on one executor */
  readonly pipelinedMaster?: ShuffleMaster | undefined;
  readonly failover: FailoverStrategy;
  readonly restart: RestartBackoffTimeStrategy;
  /** The job's logger (its `jobId` child). */
  readonly logger: Logger;
  /** The executors regions are placed on (the job master's registry); the scheduler takes and gives back slots. */
  readonly slots: ExecutorSlots;
  /** Milliseconds since the job started. */
  readonly elapsedMs: () => number;
  readonly faults?: FaultInjector | undefined;
  /** @defaultValue DEFAULT_CANCEL_TIMEOUT_MS */
  readonly cancelTimeoutMs: number;
  /** RegionRestartsOptions.lostReportWaitMs. @defaultValue DEFAULT_LOST_REPORT_WAIT_MS */
  readonly lostReportWaitMs?: number | undefined;
  readonly onFailover?: ((failover: FailoverRecord) => void) | undefined;
  /** @defaultValue true */
  readonly releasePartitionsDuringJob?: boolean | undefined;
  /** Told of every transition (job-events.ts). @defaultValue a no-op */
  readonly eventListener?: JobEventListener | undefined;
  /** @defaultValue no module, no arguments, no options */
  readonly submission?: JobSubmission | undefined;
  /** The text sinks' per-attempt directories, published from (or discarded) at the job's end. @defaultValue [] */
  readonly sinkTempDirs?: readonly string[] | undefined;
  /** A failed job keeps its text sinks' attempt files (JobCompletionOptions.keepSinkFilesOnFailure). @defaultValue false */
  readonly keepSinkFilesOnFailure?: boolean | undefined;
  /** The job master's working directory (two-phase-commit sinks' context). @defaultValue process.cwd() */
  readonly cwd?: string | undefined;
  /** Where `<scheme>://` sinks live. @defaultValue [] */
  readonly fileSystems?: readonly ExternalFileSystem[] | undefined;
  /** The job master's lease epoch, carried by every partition registration. @defaultValue none (no fencing by epoch) */
  readonly epoch?: number | undefined;
  /** A resumed run: what it keeps of earlier runs (planRecovery). @defaultValue a fresh run */
  readonly recovery?: RecoveryPlan | undefined;
  /**
   * The run's fence (JobFence): once a refusal says a newer run took the job over, the job fails with its
   * WEFT_ERR_FENCED — tasks cancelled, no restart, nothing published or discarded. @defaultValue none
   */
  readonly fence?: JobFence | undefined;
  /** Each task's managed memory budget, in bytes (RunJobOptions.taskMemoryBytes). @defaultValue each executor's defaultTaskMemoryBytes() */
  readonly taskMemoryBytes?: number | undefined;
  /** Where tasks put their spill directories (RunJobOptions.spillDir). @defaultValue each executor's os.tmpdir() */
  readonly spillDir?: string | undefined;
}

/** How the job ended, as the scheduler knows it (the job master adds the executors it lost). */
export type ScheduledOutcome = Omit<JobOutcome, 'executorsLost' | 'deploymentLatency' | 'placement' | 'approximateRecoveries'>;
