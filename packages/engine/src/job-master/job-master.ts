import { type JobId, type Logger, type ShuffleMaster, type TaskExecutorId, noopLogger } from '@weft/shuffle-api';
import { EngineError } from '../errors/engine-error.js';
import type { ExecutionTopology } from '../execution/execution-topology.js';
import type { TaskExecutor, TaskExecutorListener } from '../executor/task-executor.js';
import type { FailoverStrategy } from '../failover/failover-strategy.js';
import type { FaultInjector } from '../faults/fault-injector.js';
import type { JobPlan } from '../graph/job-plan.js';
import type { PipelinedRegions } from '../regions/pipelined-regions.js';
import type { RestartBackoffTimeStrategy } from '../restart/restart-backoff-time-strategy.js';
import { deserializeTaskError } from '../runtime/task-error-serialization.js';
import type { TaskEvent, TaskResult } from '../runtime/task-events.js';
import type { TaskMetrics } from '../runtime/task-deployment.js';
import { CancelTimeouts } from './cancel-timeouts.js';
import { DeploymentBuilder } from './deployment-builder.js';
import { ExecutorSlots } from './executor-slots.js';
import type { ExecutorLossRecord, FailoverRecord } from './failover-record.js';
import type { JobOutcome } from './job-outcome.js';
import type { JobProgress } from './job-progress.js';
import { PartitionReleases } from './partition-releases.js';
import { blockingOutputsOf, PartitionStates } from './partition-states.js';
import { progressCounters } from './progress-counters.js';
import { RegionDependencies } from './region-dependencies.js';
import { RegionRestarts } from './region-restarts.js';
import { RegionState, RegionStates } from './region-states.js';
import { TaskAttempts } from './task-attempts.js';

const { READY, DEPLOYING, RUNNING, FINISHED, CANCELLING } = RegionState;

export interface JobMasterOptions {
  readonly jobId: JobId;
  readonly plan: JobPlan;
  readonly topology: ExecutionTopology;
  readonly regions: PipelinedRegions;
  readonly blockingMaster: ShuffleMaster;
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
   * Tasks still running this long after they were cancelled get their executor destroyed (a worker
   * process is killed), so a task that ignores cancellation cannot hold up a restart or the job's end.
   * @defaultValue 30000
   */
  readonly cancelTimeoutMs?: number;
  /** Called at each failover, as it happens (RunJobOptions.onFailover). */
  readonly onFailover?: (failover: FailoverRecord) => void;
  /**
   * Release each partition group once every region consuming it finished (PartitionReleases), not only
   * at the job's end (Flink's `jobmanager.partition.release-during-job-execution`).
   * @defaultValue true
   */
  readonly releasePartitionsDuringJob?: boolean;
}

/** @see JobMasterOptions.cancelTimeoutMs */
export const DEFAULT_CANCEL_TIMEOUT_MS = 30_000;

/**
 * Schedules a job's pipelined regions on task executors and drives them to an end, as an event-driven
 * state machine (Flink's PipelinedRegionSchedulingStrategy + DefaultScheduler).
 *
 * Regions move `waiting → ready → deploying → running → finished` (RegionStates). A region is ready when
 * every partition it waits for (RegionDependencies) is finished; it is deployed — whole — to the executor
 * with the most free slots, taking one slot until all its tasks finish. Task events (`finished`, `failed`,
 * `cancelled`) and lost executors are the only inputs. Every failure goes to RegionRestarts, which fails
 * the job (every running task is cancelled first) or cancels the regions to restart and, once their tasks
 * stopped and the backoff passed, hands them back reset (new attempts, TaskAttempts) to be rescheduled.
 * As regions finish, the partition groups they were the last readers of are released (PartitionReleases).
 *
 * An old attempt is only ever given up once it reported its end or its executor is gone (a lost worker is
 * reported once its process exited; cancelled tasks that do not stop within `cancelTimeoutMs` get their
 * worker killed). Lost executors are replaced when `replaceExecutor` is given; without one, the job fails
 * once no executor is left.
 */
export class JobMaster implements TaskExecutorListener {
  readonly #options: JobMasterOptions;
  readonly #logger: Logger;
  readonly #dependencies: RegionDependencies;
  readonly #builder: DeploymentBuilder;
  readonly #attempts: TaskAttempts;
  readonly #slots = new ExecutorSlots();
  readonly #states: RegionStates;
  readonly #partitions: PartitionStates;
  readonly #restarts: RegionRestarts;
  readonly #releases: PartitionReleases;
  readonly #cancelTimeouts: CancelTimeouts;
  readonly #executorsLost: ExecutorLossRecord[] = [];
  readonly #started = performance.now();
  #deployments = 0;
  #state: 'created' | 'running' | 'failing' | 'done' = 'created';
  #failure: EngineError | undefined;
  #resolve!: (outcome: JobOutcome) => void;
  readonly #done: Promise<JobOutcome>;

  constructor(options: JobMasterOptions) {
    this.#options = options;
    this.#logger = (options.logger ?? noopLogger).child({ jobId: options.jobId });
    this.#cancelTimeouts = new CancelTimeouts(options.cancelTimeoutMs ?? DEFAULT_CANCEL_TIMEOUT_MS, this.#logger);
    const { topology, regions } = options;
    this.#dependencies = new RegionDependencies(topology, regions);
    this.#attempts = new TaskAttempts(topology);
    this.#states = new RegionStates(this.#dependencies, this.#slots, this.#logger);
    this.#partitions = new PartitionStates(topology.partitionCount);
    this.#builder = new DeploymentBuilder({ ...options, attempts: this.#attempts });
    const { plan, blockingMaster } = options;
    const enabled = options.releasePartitionsDuringJob ?? true;
    this.#releases = new PartitionReleases({ plan, topology, regions, blockingMaster, partitions: this.#partitions, builder: this.#builder, attempts: this.#attempts, logger: this.#logger, enabled });
    this.#restarts = new RegionRestarts({
      ...options,
      jobName: options.plan.name,
      states: this.#states,
      attempts: this.#attempts,
      partitions: this.#partitions,
      builder: this.#builder,
      logger: this.#logger,
      releases: this.#releases,
      elapsedMs: () => this.#elapsedMs(),
      host: {
        isRunning: () => this.#state === 'running',
        failJob: (error) => this.#failJob(error),
        cancelRegion: (region, reason) => this.#cancelRegion(region, reason),
        rescheduled: (restarted) => {
          this.#states.waitAgain(restarted, (p) => this.#partitions.isDone(p) && !this.#restarts.isRestarting(this.#producerRegionOf(p)));
          this.#schedule();
        },
      },
    });
    this.#done = new Promise<JobOutcome>((resolve) => (this.#resolve = resolve));
  }

  /** Resolves once the partition releases under way settled (await it before the job's partitions go). */
  releasesSettled(): Promise<void> {
    return this.#releases.settled();
  }

  /** Starts scheduling on `executors`; resolves when the job succeeded or failed (never rejects). */
  run(executors: readonly TaskExecutor[]): Promise<JobOutcome> {
    if (this.#state !== 'created') throw new EngineError('WEFT_ERR_ILLEGAL_STATE', 'a job master runs once');
    this.#state = 'running';
    for (const executor of executors) this.#slots.add(executor);
    this.#states.start();
    this.#schedule();
    return this.#done;
  }

  /** Fails the job from outside (the caller's AbortSignal): running tasks are cancelled first. */
  abort(reason: unknown): void {
    if (this.#state !== 'running') return;
    const error = reason instanceof Error ? reason : new Error(String(reason));
    this.#failJob(new EngineError('WEFT_ERR_JOB_FAILED', `job ${this.#options.plan.name} was aborted: ${error.message}`, { cause: error }));
  }

  /**
   * Live availability for the failover strategy: a re-readable partition is unavailable while its data
   * is released — produced once, then given up (by a restart of its producer, or during the job once its
   * consumers all finished: PartitionReleases) and its producer not deployed again yet. One whose producer
   * runs (or has not run yet) is not lost: it is being produced.
   */
  isPartitionAvailable(partitionId: string): boolean {
    const p = this.#options.topology.indexOfResultPartition(partitionId);
    return p < 0 || !this.#partitions.isReleased(p);
  }

  progress(): Omit<JobProgress, 'elapsedMs'> {
    const live = new Map<string, TaskMetrics>();
    for (const p of this.#slots.progress()) live.set(p.attemptId, p.metrics);
    const attempts = this.#attempts;
    const counters = progressCounters({ topology: this.#options.topology, results: attempts.results, live, attemptIdOf: (v) => attempts.attemptIdOf(v) });
    return {
      tasksFinished: attempts.finishedCount,
      tasksTotal: this.#options.topology.executionVertexCount,
      tasksRunning: attempts.running.size,
      regionsFinished: this.#states.finished,
      regionsTotal: this.#states.count,
      ...counters,
      failures: this.#restarts.failures,
    };
  }

  // ---- events from executors -----------------------------------------------------------------

  onTaskEvent(executor: TaskExecutorId, event: TaskEvent): void {
    if (this.#slots.isLost(executor)) return;
    const v = this.#attempts.currentVertexOf(event.attemptId);
    if (v < 0) {
      this.#logger.debug({ attemptId: event.attemptId, event: event.type, executor }, 'event of a stale attempt ignored');
      return;
    }
    const region = this.#options.regions.regionOf[v] as number;
    const { running } = this.#attempts;
    const { active } = this.#states;
    switch (event.type) {
      case 'running':
        running.add(event.attemptId);
        return;
      case 'finished':
        running.delete(event.attemptId);
        this.#onTaskFinished(v, region, event.result);
        return;
      case 'failed':
        running.delete(event.attemptId);
        active[region] = (active[region] as number) - 1;
        this.#restarts.onFailure(v, deserializeTaskError(event.error));
        this.#afterTerminal(region);
        return;
      case 'cancelled':
        running.delete(event.attemptId);
        active[region] = (active[region] as number) - 1;
        this.#afterTerminal(region);
        return;
    }
  }

  onExecutorLost(executorId: TaskExecutorId, error: Error): void {
    const executor = this.#slots.remove(executorId);
    if (executor === undefined) return;
    this.#logger.warn({ taskExecutorId: executorId, error: error.message }, 'task executor lost');
    const lost = new EngineError('WEFT_ERR_TASK_EXECUTOR_LOST', `task executor ${executorId} was lost: ${error.message}`, { cause: error, context: { taskExecutorId: executorId } });
    // Recorded first: failing its tasks below may end the job.
    const record: { -readonly [K in keyof ExecutorLossRecord]: ExecutorLossRecord[K] } = { atMs: this.#elapsedMs(), taskExecutorId: executorId, reason: error.message, replaced: false };
    this.#executorsLost.push(record);
    // Every task it ran fails: each region's failure goes through the one failure path.
    for (const r of this.#states.activeOn(executor)) {
      const members = this.#options.regions.membersOf(r);
      const failed = Array.from(members).find((v) => !this.#attempts.isDone(v));
      this.#states.active[r] = 0;
      this.#states.releaseSlot(r); // gives nothing back: the executor is gone
      for (const v of members) this.#attempts.running.delete(this.#attempts.attemptIdOf(v));
      if (failed !== undefined) this.#restarts.onFailure(failed, lost);
      this.#afterTerminal(r);
    }
    const replace = this.#state === 'running' && this.#options.replaceExecutor !== undefined;
    record.replaced = replace;
    if (replace) this.#replaceExecutor(executorId, lost);
    else if (this.#slots.count === 0 && this.#slots.replacing === 0 && this.#state === 'running') this.#failJob(this.#noExecutorLeft(lost));
    this.#schedule();
  }

  #replaceExecutor(lostId: TaskExecutorId, lost: EngineError): void {
    const start = this.#options.replaceExecutor as (lost: TaskExecutorId) => Promise<TaskExecutor>;
    const slots = this.#slots;
    slots.replace(() => start(lostId), {
      started: (executor) => {
        if (this.#state !== 'running') return;
        this.#logger.info({ taskExecutorId: executor.id, replaces: lostId }, 'task executor replaced');
        slots.add(executor);
        this.#schedule();
      },
      failed: (error) => {
        this.#logger.warn({ taskExecutorId: lostId, error: (error as Error).message }, 'could not replace a lost task executor');
        if (this.#state === 'running' && slots.count === 0 && slots.replacing === 0) {
          this.#failJob(this.#noExecutorLeft(new EngineError('WEFT_ERR_TASK_EXECUTOR_LOST', `${lost.message}; its replacement failed to start: ${(error as Error).message}`, { cause: error, context: { taskExecutorId: lostId } })));
        }
      },
    });
  }

  #noExecutorLeft(cause: EngineError): EngineError {
    return new EngineError('WEFT_ERR_JOB_FAILED', `job ${JSON.stringify(this.#options.plan.name)} failed: no task executor is left: ${cause.message}`, { cause });
  }

  /** The region of the execution vertex producing result partition `p`. */
  #producerRegionOf(p: number): number {
    const edge = this.#options.topology.edgeOfPartition(p);
    return this.#options.regions.regionOf[edge.source.firstExecutionVertex + p - edge.firstPartition] as number;
  }

  #elapsedMs(): number {
    return Math.round(performance.now() - this.#started);
  }

  // ---- state machine ---------------------------------------------------------------------------

  #onTaskFinished(v: number, region: number, result: TaskResult): void {
    const states = this.#states;
    this.#attempts.finish(v, result);
    states.active[region] = (states.active[region] as number) - 1;
    states.remaining[region] = (states.remaining[region] as number) - 1;
    if (states.stateOf(region) === CANCELLING) {
      this.#afterTerminal(region);
      return;
    }
    const restarting = (r: number): boolean => this.#restarts.isRestarting(r);
    for (const partition of blockingOutputsOf(this.#options.topology, v)) {
      this.#partitions.markDone(partition);
      states.partitionFinished(partition, restarting);
    }
    if (states.remaining[region] === 0) {
      states.set(region, FINISHED);
      states.finished++;
      states.releaseSlot(region);
      this.#releases.regionFinished(region);
      if (states.finished === states.count && this.#state === 'running') {
        this.#complete('succeeded');
        return;
      }
    }
    this.#schedule();
  }

  #afterTerminal(region: number): void {
    const states = this.#states;
    if (states.active[region] === 0) this.#cancelTimeouts.clear(region);
    const state = states.stateOf(region);
    if (states.active[region] === 0 && (state === CANCELLING || state === RUNNING) && states.remaining[region] !== 0) {
      states.set(region, CANCELLING);
      states.releaseSlot(region);
    }
    if (this.#state === 'failing') this.#maybeSettleFailure();
    else this.#restarts.maybeRestart();
  }

  #cancelRegion(r: number, reason: string): void {
    const states = this.#states;
    const state = states.stateOf(r);
    if (state === READY) states.unready(r);
    if (state === RUNNING || state === DEPLOYING) {
      states.set(r, CANCELLING);
      states.version[r] = (states.version[r] as number) + 1;
      const executor = states.executorOf(r);
      const attemptIds = Array.from(this.#options.regions.membersOf(r)).filter((v) => !this.#attempts.isDone(v)).map((v) => this.#attempts.attemptIdOf(v));
      if (state === RUNNING && executor !== undefined && attemptIds.length > 0) {
        executor.cancel(attemptIds, reason);
        this.#cancelTimeouts.arm(r, executor, () => (states.active[r] as number) > 0 && states.executorOf(r) === executor);
      }
      if (state === DEPLOYING) states.active[r] = 0;
      if (states.active[r] === 0) states.releaseSlot(r);
    } else if (state !== CANCELLING) {
      // A finished region runs again: it no longer counts as finished (nor for releases).
      if (state === FINISHED) {
        states.finished--;
        this.#releases.regionUnfinished(r);
      }
      states.set(r, CANCELLING);
    }
  }

  #schedule(): void {
    if (this.#state !== 'running') return;
    while (this.#states.hasReady) {
      const best = this.#slots.best();
      if (best === undefined) return;
      void this.#deploy(this.#states.nextReady() as number, best);
    }
  }

  async #deploy(region: number, executor: TaskExecutor): Promise<void> {
    const members = this.#options.regions.membersOf(region);
    const states = this.#states;
    states.deploying(region, executor, members.length);
    const version = states.version[region];
    let deployment;
    try {
      deployment = await this.#builder.build(region, executor.id);
    } catch (error) {
      if (states.version[region] !== version) return;
      states.active[region] = 0;
      states.releaseSlot(region);
      states.set(region, CANCELLING);
      this.#restarts.onFailure(members[0] as number, error as Error);
      this.#afterTerminal(region);
      return;
    }
    if (states.version[region] !== version || states.stateOf(region) !== DEPLOYING) return;
    const faults = this.#options.faults;
    if (faults?.beforeDeploy !== undefined) {
      const { topology } = this.#options;
      try {
        await faults.beforeDeploy({
          deployment: ++this.#deployments,
          region,
          taskExecutorId: executor.id,
          tasks: deployment.tasks.map((t) => ({ executionVertexId: t.executionVertexId, attempt: t.attempt })),
          inputPartitions: Array.from(this.#dependencies.inputsOf[region] as Int32Array, (p) => topology.resultPartitionId(p)),
        });
      } catch (error) {
        this.#logger.warn({ region, error: (error as Error).message }, 'the fault injector failed before a deployment');
      }
      if (states.version[region] !== version || states.stateOf(region) !== DEPLOYING) return;
    }
    states.set(region, RUNNING);
    this.#attempts.markDeployed(members);
    for (const task of deployment.tasks) for (const output of task.outputs) if (!output.pipelined) this.#partitions.markDeployed(this.#options.topology.indexOfResultPartition(output.partition.partitionId));
    executor.deploy(deployment);
  }

  #failJob(error: EngineError): void {
    if (this.#state !== 'running') return;
    this.#state = 'failing';
    this.#failure = error;
    this.#restarts.stop();
    this.#logger.info({ error: error.message }, 'running -> failing');
    for (let r = 0; r < this.#states.count; r++) {
      const state = this.#states.stateOf(r);
      if (state === RUNNING || state === DEPLOYING) this.#cancelRegion(r, 'the job failed');
    }
    this.#maybeSettleFailure();
  }

  #maybeSettleFailure(): void {
    if (this.#state !== 'failing') return;
    for (let r = 0; r < this.#states.count; r++) if ((this.#states.active[r] as number) > 0) return;
    this.#complete('failed');
  }

  #complete(status: 'succeeded' | 'failed'): void {
    this.#state = 'done';
    this.#restarts.stop();
    this.#cancelTimeouts.clearAll();
    this.#resolve({
      status,
      ...(status === 'failed' && this.#failure !== undefined ? { error: this.#failure } : {}),
      results: this.#attempts.results.filter((r): r is TaskResult => r !== undefined),
      attemptsDeployed: this.#attempts.deployedTotal,
      failures: this.#restarts.failures,
      restarts: this.#restarts.failovers.length,
      failovers: [...this.#restarts.failovers],
      executorsLost: [...this.#executorsLost],
      attempts: this.#attempts.numbers(),
      partitionsReleasedDuringJob: this.#releases.released,
      bytesReleasedDuringJob: this.#releases.bytesReleased,
    });
  }
}
