import { type JobId, type Logger, type PartitionsLostNotice, type ShuffleMaster, type TaskExecutorId, noopLogger } from '@weft/shuffle-api';
import { EngineError } from '../errors/engine-error.js';
import type { ExecutionTopology } from '../execution/execution-topology.js';
import type { TaskExecutor, TaskExecutorListener } from '../executor/task-executor.js';
import type { FailoverStrategy } from '../failover/failover-strategy.js';
import type { FaultInjector } from '../faults/fault-injector.js';
import type { JobPlan } from '../graph/job-plan.js';
import type { PipelinedRegions } from '../regions/pipelined-regions.js';
import type { RestartBackoffTimeStrategy } from '../restart/restart-backoff-time-strategy.js';
import { deserializeTaskError } from '../runtime/task-error-serialization.js';
import type { TaskEvent } from '../runtime/task-events.js';
import { ExecutorSlots } from './executor-slots.js';
import type { ExecutorLossRecord, FailoverRecord } from './failover-record.js';
import type { JobEventListener, VertexInitializedData } from './job-events.js';
import type { JobFence } from './job-fence.js';
import type { JobOutcome } from './job-outcome.js';
import type { JobProgress } from './job-progress.js';
import { JobScheduler } from './job-scheduler.js';
import type { JobSubmission } from './job-scheduler-options.js';
import type { ExternalFileSystem } from '../io/external-file-system.js';
import type { RecoveryPlan } from './recovery-plan.js';

export interface JobMasterOptions {
  readonly jobId: JobId;
  readonly plan: JobPlan;
  readonly topology: ExecutionTopology;
  readonly regions: PipelinedRegions;
  readonly blockingMaster: ShuffleMaster;
  /**
   * The job's master of the pipelined shuffle, when its executors serve pipelined partitions to each
   * other (JobSession.pipelinedMaster): regions may then be spread over executors. @defaultValue none
   */
  readonly pipelinedMaster?: ShuffleMaster | undefined;
  readonly failover: FailoverStrategy;
  readonly restart: RestartBackoffTimeStrategy;
  readonly logger?: Logger;
  /** Fault injection: faults planted in task deployments, and a hook before each region is deployed. */
  readonly faults?: FaultInjector;
  /**
   * Starts a task executor in place of a lost one (a new worker process). Absent: lost executors are not
   * replaced, and the job fails once none is left.
   */
  readonly replaceExecutor?: (lost: TaskExecutorId) => Promise<TaskExecutor>;
  /**
   * When every executor is lost and none is being replaced, how long the job waits for one to join
   * (`onExecutorJoined`: a cluster's executor restarted, or another registering) before it fails; its
   * regions wait for slots meanwhile (TaskExecutorProvider.rejoinTimeoutMs). @defaultValue none: it fails at once
   */
  readonly executorRejoinTimeoutMs?: number;
  /**
   * Tasks still running this long after they were cancelled get their executor destroyed (a worker
   * process is killed), so a task that ignores cancellation cannot hold up a restart or the job's end.
   * @defaultValue 30000
   */
  readonly cancelTimeoutMs?: number;
  /**
   * How long the decision on a task failure naming a partition unreadable waits for the blocking master to
   * take its report (and maybe name more partitions lost: `partitionsLost`); 0 decides at once.
   * @defaultValue DEFAULT_LOST_REPORT_WAIT_MS
   */
  readonly lostReportWaitMs?: number;
  /** Called at each failover, as it happens (RunJobOptions.onFailover). */
  readonly onFailover?: (failover: FailoverRecord) => void;
  /**
   * Release each partition group once every region consuming it finished (PartitionReleases), not only
   * at the job's end (Flink's `jobmanager.partition.release-during-job-execution`).
   * @defaultValue true
   */
  readonly releasePartitionsDuringJob?: boolean;
  /** Told of every transition of the job (RunJobOptions.eventListener). @defaultValue a no-op */
  readonly eventListener?: JobEventListener;
  /** What `job-submitted` says of the module, arguments and run options. @defaultValue none of them */
  readonly submission?: JobSubmission;
  /** The text sinks' per-attempt directories, published from at the job's end. @defaultValue [] */
  readonly sinkTempDirs?: readonly string[];
  /** A failed job keeps the text sinks' attempt files (a checkpointed job restores from them). @defaultValue false */
  readonly keepSinkFilesOnFailure?: boolean;
  /** Where `<scheme>://` sinks live (RunJobOptions.fileSystems). @defaultValue [] */
  readonly fileSystems?: readonly ExternalFileSystem[];
  /** The working directory two-phase-commit sinks resolve against at their final commit. @defaultValue process.cwd() */
  readonly cwd?: string;
  /** The lease epoch (the job event log's), carried by every partition registration. @defaultValue none */
  readonly epoch?: number;
  /** A resumed run: what it keeps of earlier runs (planRecovery). @defaultValue a fresh run */
  readonly recovery?: RecoveryPlan;
  /** The run's fence: fenced, the job fails with WEFT_ERR_FENCED and changes nothing (JobSchedulerOptions.fence). @defaultValue none */
  readonly fence?: JobFence;
  /** Each task's managed memory budget, in bytes (RunJobOptions.taskMemoryBytes). @defaultValue each executor's default */
  readonly taskMemoryBytes?: number;
  /** Where tasks spill (RunJobOptions.spillDir). @defaultValue each executor's os.tmpdir() */
  readonly spillDir?: string;
}

/** @see JobMasterOptions.cancelTimeoutMs */
export const DEFAULT_CANCEL_TIMEOUT_MS = 30_000;

/**
 * The longest a lost executor's replacement waits to start for the restart the loss caused to have its
 * tasks reading again (JobScheduler.whenRestartsResumed); it starts at once when a region waits for slots.
 */
const REPLACEMENT_START_WAIT_MS = 100;

/**
 * The job master of one job (Flink's JobMaster): the registry of the task executors it schedules on
 * (ExecutorSlots), the listener of what they report — deploy acknowledgements (`running`), task ends,
 * executors lost (a process exit, missed heartbeats) — and the replacement of lost executors. Where
 * regions run and how the job moves on is its JobScheduler's: every report is handed to one of the
 * scheduler's transitions.
 *
 * Reports from an executor already lost, and of attempts no longer current, are ignored. A lost
 * executor's tasks fail (WEFT_ERR_TASK_EXECUTOR_LOST) through the scheduler's one failure path; it is
 * replaced when `replaceExecutor` is given; without one, the job fails once no executor is left — or,
 * with `executorRejoinTimeoutMs`, once none joined within it.
 */
export class JobMaster implements TaskExecutorListener {
  readonly #options: JobMasterOptions;
  readonly #logger: Logger;
  readonly #slots = new ExecutorSlots();
  readonly #scheduler: JobScheduler;
  readonly #executorsLost: ExecutorLossRecord[] = [];
  readonly #started = performance.now();
  #ran = false;
  /** Set while no executor is left and the job waits for one to join (executorRejoinTimeoutMs). */
  #rejoinTimer: ReturnType<typeof setTimeout> | undefined;

  constructor(options: JobMasterOptions) {
    this.#options = options;
    this.#logger = (options.logger ?? noopLogger).child({ jobId: options.jobId });
    this.#scheduler = new JobScheduler({
      ...options,
      logger: this.#logger,
      slots: this.#slots,
      elapsedMs: () => this.#elapsedMs(),
      cancelTimeoutMs: options.cancelTimeoutMs ?? DEFAULT_CANCEL_TIMEOUT_MS,
    });
  }

  /** Resolves once the partition releases under way settled (await it before the job's partitions go). */
  releasesSettled(): Promise<void> {
    return this.#scheduler.releasesSettled();
  }

  /** Starts scheduling on `executors`; resolves when the job succeeded or failed, its sinks published (never rejects). */
  run(executors: readonly TaskExecutor[]): Promise<JobOutcome> {
    if (this.#ran) throw new EngineError('WEFT_ERR_ILLEGAL_STATE', 'a job master runs once');
    this.#ran = true;
    for (const executor of executors) this.#slots.add(executor);
    return this.#scheduler.start().then((outcome) => {
      clearTimeout(this.#rejoinTimer);
      const approximateRecoveries = this.#scheduler.approximateRecoveries();
      return { ...outcome, failoverResumes: this.#scheduler.failoverResumes(), executorsLost: [...this.#executorsLost], deploymentLatency: this.#scheduler.deploymentLatency(), placement: this.#scheduler.placement(), ...(approximateRecoveries === undefined ? {} : { approximateRecoveries }) };
    });
  }

  /** Fails the job from outside (the caller's AbortSignal): running tasks are cancelled first. */
  abort(reason: unknown): void {
    this.#scheduler.abort(reason);
  }

  /** @see JobScheduler.fail */
  fail(reason: Error): void {
    this.#scheduler.fail(reason);
  }

  /**
   * Live availability for the failover strategy: a re-readable partition is unavailable while its data
   * is released — produced once, then given up (by a restart of its producer, or during the job once its
   * consumers all finished: PartitionReleases) and its producer not deployed again yet. One whose producer
   * runs (or has not run yet) is not lost: it is being produced.
   */
  isPartitionAvailable(partitionId: string): boolean {
    return this.#scheduler.isPartitionAvailable(partitionId);
  }

  /**
   * The blocking shuffle master says finished partitions of this job can no longer be read
   * (JobShuffleContext.partitionsLost; JobSession relays it here): they count as lost (JobScheduler.partitionsLost).
   * A notice for another job is ignored.
   */
  partitionsLost(notice: PartitionsLostNotice): void {
    if (notice.jobId !== this.#options.jobId) return;
    this.#scheduler.partitionsLost(notice);
  }

  /** An adaptive job's decisions so far (made or restored), in vertex order. */
  decisions(): VertexInitializedData[] {
    return this.#scheduler.decisions();
  }

  /** Whether execution vertex `v` is a skipped reserved subtask of a decided adaptive vertex. */
  isSkipped(v: number): boolean {
    return this.#scheduler.isSkipped(v);
  }

  /** Every task executor the job was scheduled on (ExecutorSlots.joined). */
  get executorsJoined(): readonly TaskExecutor[] {
    return this.#slots.joined;
  }

  progress(): Omit<JobProgress, 'elapsedMs'> {
    return this.#scheduler.progress();
  }

  // ---- reports from executors -----------------------------------------------------------------

  onTaskEvent(executor: TaskExecutorId, event: TaskEvent): void {
    if (this.#slots.isLost(executor)) return;
    const scheduler = this.#scheduler;
    const v = scheduler.currentVertexOf(event.attemptId);
    if (v < 0) {
      this.#logger.debug({ attemptId: event.attemptId, event: event.type, executor }, 'event of a stale attempt ignored');
      return;
    }
    switch (event.type) {
      case 'running':
        scheduler.taskRunning(event.attemptId);
        return;
      case 'reading':
        scheduler.taskReading(v, event.attemptId, event.atMs);
        return;
      case 'finished':
        scheduler.taskFinished(executor, v, event.result);
        return;
      case 'failed':
        scheduler.taskFailed(v, deserializeTaskError(event.error), event.metrics);
        return;
      case 'cancelled':
        scheduler.taskCancelled(v, event.metrics);
        return;
      case 'outputs-lost':
        scheduler.outputsLost(v);
        return;
      case 'input-unavailable':
        scheduler.inputUnavailable(v, event.partitionId);
        return;
      case 'input-resumed':
        scheduler.inputResumed(v, event.partitionId);
        return;
    }
  }

  onExecutorLost(executorId: TaskExecutorId, error: Error): void {
    // A retiring executor (draining to stop) closes once its tasks reported: their finished reports, still
    // being stored, count before the loss is handled.
    if (this.#slots.isRetiring(executorId) && !this.#slots.isLost(executorId)) {
      void this.#scheduler.finishesSettled().then(() => this.#executorLost(executorId, error));
      return;
    }
    this.#executorLost(executorId, error);
  }

  #executorLost(executorId: TaskExecutorId, error: Error): void {
    const executor = this.#slots.remove(executorId);
    if (executor === undefined) return;
    this.#logger.warn({ taskExecutorId: executorId, error: error.message }, 'task executor lost');
    const lost = new EngineError('WEFT_ERR_TASK_EXECUTOR_LOST', `task executor ${executorId} was lost: ${error.message}`, { cause: error, context: { taskExecutorId: executorId } });
    // Recorded first: failing its tasks below may end the job.
    const record: { -readonly [K in keyof ExecutorLossRecord]: ExecutorLossRecord[K] } = { atMs: this.#elapsedMs(), taskExecutorId: executorId, reason: error.message, replaced: false };
    this.#executorsLost.push(record);
    this.#scheduler.executorLost(executor, lost);
    const running = this.#scheduler.isRunning;
    const replace = running && this.#options.replaceExecutor !== undefined;
    record.replaced = replace;
    if (replace) this.#replaceExecutor(executorId, lost);
    else if (this.#slots.count === 0 && this.#slots.replacing === 0 && running) this.#noneLeft(lost);
    this.#scheduler.schedule();
  }

  /** No executor is left (`lost` was the last): the job fails — at once, or when none joined within executorRejoinTimeoutMs. */
  #noneLeft(lost: EngineError): void {
    const waitMs = this.#options.executorRejoinTimeoutMs;
    if (waitMs === undefined) {
      this.#scheduler.failJob(this.#noExecutorLeft(lost));
      return;
    }
    if (this.#rejoinTimer !== undefined) return;
    this.#logger.warn({ waitMs }, 'no task executor is left: the job waits for one to join');
    this.#rejoinTimer = setTimeout(() => {
      this.#rejoinTimer = undefined;
      if (!this.#scheduler.isRunning || this.#slots.count > 0) return;
      this.#scheduler.failJob(this.#noExecutorLeft(new EngineError('WEFT_ERR_TASK_EXECUTOR_LOST', `${lost.message}; no task executor joined within ${waitMs} ms`, { cause: lost, context: lost.context })));
    }, waitMs);
  }

  onExecutorJoined(executor: TaskExecutor): void {
    // one joining before `run` is scheduled on as the others are
    this.#logger.info({ taskExecutorId: executor.id, slots: executor.slots }, 'task executor joined');
    this.#slots.add(executor);
    clearTimeout(this.#rejoinTimer);
    this.#rejoinTimer = undefined;
    if (this.#ran) this.#scheduler.schedule();
  }

  onShuffleLocationChanged(executorId: TaskExecutorId): void {
    this.#logger.debug({ taskExecutorId: executorId }, 'task executor serves pipelined partitions elsewhere now');
    this.#scheduler.schedule();
  }

  onExecutorRetiring(executorId: TaskExecutorId): void {
    this.#logger.info({ taskExecutorId: executorId }, 'task executor retiring: no new work for it');
    this.#slots.retire(executorId);
    this.#scheduler.schedule();
  }

  #replaceExecutor(lostId: TaskExecutorId, lost: EngineError): void {
    const start = this.#options.replaceExecutor as (lost: TaskExecutorId) => Promise<TaskExecutor>;
    const slots = this.#slots;
    // started once the restart this loss caused has its tasks reading again on the executors left (or a
    // region waits for the slots this one brings, or REPLACEMENT_START_WAIT_MS passed): forking a process
    // blocks this one for milliseconds, which the restarted tasks' first messages (their checkpoint link,
    // their reports) would wait behind
    const later = (): Promise<TaskExecutor> =>
      new Promise<void>((resolve) => setImmediate(resolve))
        .then(() => this.#scheduler.whenRestartsResumed(REPLACEMENT_START_WAIT_MS))
        .then(() => start(lostId));
    slots.replace(later, {
      started: (executor) => {
        if (!this.#scheduler.isRunning) return;
        this.#logger.info({ taskExecutorId: executor.id, replaces: lostId }, 'task executor replaced');
        slots.add(executor);
        this.#scheduler.schedule();
      },
      failed: (error) => {
        this.#logger.warn({ taskExecutorId: lostId, error: (error as Error).message }, 'could not replace a lost task executor');
        if (this.#scheduler.isRunning && slots.count === 0 && slots.replacing === 0) {
          this.#scheduler.failJob(this.#noExecutorLeft(new EngineError('WEFT_ERR_TASK_EXECUTOR_LOST', `${lost.message}; its replacement failed to start: ${(error as Error).message}`, { cause: error, context: { taskExecutorId: lostId } })));
        }
      },
    });
  }

  #noExecutorLeft(cause: EngineError): EngineError {
    return new EngineError('WEFT_ERR_JOB_FAILED', `job ${JSON.stringify(this.#options.plan.name)} failed: no task executor is left: ${cause.message}`, { cause });
  }

  #elapsedMs(): number {
    return Math.round(performance.now() - this.#started);
  }
}
