import { type JobId, type Logger, type ShuffleMaster, type TaskExecutorId, noopLogger } from '@weft/shuffle-api';
import { EngineError, isEngineError } from '../errors/engine-error.js';
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
import { DeploymentBuilder } from './deployment-builder.js';
import { CancelTimeouts } from './cancel-timeouts.js';
import type { ExecutorLossRecord, FailoverRecord } from './failover-record.js';
import { ExecutorSlots } from './executor-slots.js';
import { describeFailure, lostPartitionsOf } from './failure-cause.js';
import type { JobProgress } from './job-progress.js';
import { PartitionStates } from './partition-states.js';
import { progressCounters } from './progress-counters.js';
import { RegionDependencies } from './region-dependencies.js';

const WAITING = 0;
const READY = 1;
const DEPLOYING = 2;
const RUNNING = 3;
const FINISHED = 4;
const CANCELLING = 5;
const REGION_STATES = ['waiting', 'ready', 'deploying', 'running', 'finished', 'cancelling'] as const;

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
}

/** @see JobMasterOptions.cancelTimeoutMs */
export const DEFAULT_CANCEL_TIMEOUT_MS = 30_000;

/** How a job ended, before its sinks are published. */
export interface JobOutcome {
  readonly status: 'succeeded' | 'failed';
  /** `WEFT_ERR_JOB_FAILED` with the failing task's error as cause. */
  readonly error?: EngineError;
  /** The result of the finished (current) attempt of each execution vertex. */
  readonly results: readonly TaskResult[];
  readonly attemptsDeployed: number;
  readonly failures: number;
  readonly restarts: number;
  /** Each failover, in order. */
  readonly failovers: readonly FailoverRecord[];
  /** Task executors lost while the job ran. */
  readonly executorsLost: readonly ExecutorLossRecord[];
  /** Per execution vertex (topology order): its last attempt number (0: never restarted). */
  readonly attempts: readonly number[];
}

/**
 * Schedules a job's pipelined regions on task executors and drives them to an end, as an event-driven
 * state machine (Flink's PipelinedRegionSchedulingStrategy + DefaultScheduler).
 *
 * Regions move `waiting → ready → deploying → running → finished`. A region is ready when every
 * partition it waits for (RegionDependencies) is finished; it is deployed — whole — to the executor with
 * the most free slots, taking one slot until all its tasks finish. Task events (`finished`, `failed`,
 * `cancelled`) and lost executors are the only inputs. Every failure goes through `#onFailure`: it asks the
 * restart strategy whether to restart and the failover strategy what (the failed task's region, plus
 * producers of lost inputs and consumers of restarted outputs), cancels those regions, waits until their
 * tasks stopped, bumps their attempts, releases their old partitions and reschedules them after the
 * backoff. Without a restart, the job fails ("recovery is suppressed by <strategy>", with the root cause):
 * every running task is cancelled first. Each failover is recorded (FailoverRecord).
 *
 * Attempts: a reset task's attempt number grows, so events of older attempts are ignored, and its old
 * partitions are released before the new attempt registers them — a late commit of the old attempt finds
 * its partition released and loses. An old attempt is only ever given up once it reported its end or its
 * executor is gone (a lost worker is reported once its process exited; cancelled tasks that do not stop
 * within `cancelTimeoutMs` get their worker killed). Lost executors are replaced when `replaceExecutor`
 * is given; without one, the job fails once no executor is left.
 */
export class JobMaster implements TaskExecutorListener {
  readonly #options: JobMasterOptions;
  readonly #logger: Logger;
  readonly #dependencies: RegionDependencies;
  readonly #builder: DeploymentBuilder;
  readonly #attempts: Int32Array;
  readonly #taskDone: Uint8Array;
  /** 1 once the current attempt of the execution vertex was handed to an executor. */
  readonly #taskDeployed: Uint8Array;
  readonly #regionState: Uint8Array;
  readonly #pending: Int32Array;
  readonly #remaining: Int32Array;
  readonly #active: Int32Array;
  readonly #regionExecutor: (TaskExecutor | undefined)[];
  readonly #regionVersion: Int32Array;
  readonly #partitions: PartitionStates;
  readonly #results: (TaskResult | undefined)[];
  readonly #ready: number[] = [];
  readonly #slots = new ExecutorSlots();
  readonly #restarting = new Set<number>();
  readonly #running = new Set<string>();
  readonly #cancelTimeouts: CancelTimeouts;
  readonly #failovers: FailoverRecord[] = [];
  readonly #executorsLost: ExecutorLossRecord[] = [];
  readonly #started = performance.now();
  #deployments = 0;
  #finishedRegions = 0;
  #finishedTasks = 0;
  #attemptsDeployed = 0;
  #failures = 0;
  #restarts = 0;
  #backoffTimer: ReturnType<typeof setTimeout> | undefined;
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
    this.#attempts = new Int32Array(topology.executionVertexCount);
    this.#taskDone = new Uint8Array(topology.executionVertexCount);
    this.#taskDeployed = new Uint8Array(topology.executionVertexCount);
    this.#regionState = new Uint8Array(regions.regionCount);
    this.#pending = new Int32Array(regions.regionCount);
    this.#remaining = new Int32Array(regions.regionCount);
    this.#active = new Int32Array(regions.regionCount);
    this.#regionVersion = new Int32Array(regions.regionCount);
    this.#regionExecutor = new Array<TaskExecutor | undefined>(regions.regionCount);
    this.#partitions = new PartitionStates(topology.partitionCount);
    this.#results = new Array<TaskResult | undefined>(topology.executionVertexCount);
    this.#builder = new DeploymentBuilder(options.plan, topology, regions, options.jobId, options.blockingMaster, this.#attempts, options.faults);
    this.#done = new Promise<JobOutcome>((resolve) => (this.#resolve = resolve));
  }

  /** Starts scheduling on `executors`; resolves when the job succeeded or failed (never rejects). */
  run(executors: readonly TaskExecutor[]): Promise<JobOutcome> {
    if (this.#state !== 'created') throw new EngineError('WEFT_ERR_ILLEGAL_STATE', 'a job master runs once');
    this.#state = 'running';
    for (const executor of executors) this.#slots.add(executor);
    for (let r = 0; r < this.#options.regions.regionCount; r++) {
      this.#pending[r] = (this.#dependencies.inputsOf[r] as Int32Array).length;
      if (this.#pending[r] === 0) this.#setReady(r);
    }
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
   * is released — produced once, then given up by a restart of its producer not deployed again yet.
   * One whose producer runs (or has not run yet) is not lost: it is being produced.
   */
  isPartitionAvailable(partitionId: string): boolean {
    const p = this.#options.topology.indexOfResultPartition(partitionId);
    return p < 0 || !this.#partitions.isReleased(p);
  }

  progress(): Omit<JobProgress, 'elapsedMs'> {
    const live = new Map<string, TaskMetrics>();
    for (const p of this.#slots.progress()) live.set(p.attemptId, p.metrics);
    const counters = progressCounters({ topology: this.#options.topology, results: this.#results, live, attemptIdOf: (v) => this.#builder.attemptIdOf(v) });
    return {
      tasksFinished: this.#finishedTasks,
      tasksTotal: this.#options.topology.executionVertexCount,
      tasksRunning: this.#running.size,
      regionsFinished: this.#finishedRegions,
      regionsTotal: this.#options.regions.regionCount,
      ...counters,
      failures: this.#failures,
    };
  }

  // ---- events from executors -----------------------------------------------------------------

  onTaskEvent(executor: TaskExecutorId, event: TaskEvent): void {
    if (this.#slots.isLost(executor)) return;
    const at = event.attemptId.lastIndexOf('@');
    const v = this.#options.topology.indexOfExecutionVertex(event.attemptId.slice(0, at));
    const attempt = Number(event.attemptId.slice(at + 1));
    if (v < 0 || attempt !== this.#attempts[v]) {
      this.#logger.debug({ attemptId: event.attemptId, event: event.type, executor }, 'event of a stale attempt ignored');
      return;
    }
    const region = this.#options.regions.regionOf[v] as number;
    switch (event.type) {
      case 'running':
        this.#running.add(event.attemptId);
        return;
      case 'finished':
        this.#running.delete(event.attemptId);
        this.#onTaskFinished(v, region, event.result);
        return;
      case 'failed':
        this.#running.delete(event.attemptId);
        this.#active[region] = (this.#active[region] as number) - 1;
        this.#onFailure(v, deserializeTaskError(event.error));
        this.#afterTerminal(region);
        return;
      case 'cancelled':
        this.#running.delete(event.attemptId);
        this.#active[region] = (this.#active[region] as number) - 1;
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
    const regions: number[] = [];
    this.#regionExecutor.forEach((x, r) => {
      if (x === executor && this.#active[r]! > 0) regions.push(r);
    });
    // Every task it ran fails: each region's failure goes through the one failure path.
    for (const r of regions) {
      const failed = Array.from(this.#options.regions.membersOf(r)).find((v) => this.#taskDone[v] === 0);
      this.#active[r] = 0;
      this.#regionExecutor[r] = undefined;
      for (const v of this.#options.regions.membersOf(r)) this.#running.delete(this.#builder.attemptIdOf(v));
      if (failed !== undefined) this.#onFailure(failed, lost);
      this.#afterTerminal(r);
    }
    const replace = this.#state === 'running' && this.#options.replaceExecutor !== undefined;
    record.replaced = replace;
    if (replace) this.#replaceExecutor(executorId, lost);
    else if (this.#slots.count === 0 && this.#slots.replacing === 0 && this.#state === 'running') this.#failJob(this.#noExecutorLeft(lost));
    this.#schedule();
  }

  #replaceExecutor(lostId: TaskExecutorId, lost: EngineError): void {
    const slots = this.#slots;
    slots.replacing++;
    (this.#options.replaceExecutor as (lost: TaskExecutorId) => Promise<TaskExecutor>)(lostId).then(
      (executor) => {
        slots.replacing--;
        if (this.#state !== 'running') return;
        this.#logger.info({ taskExecutorId: executor.id, replaces: lostId }, 'task executor replaced');
        slots.add(executor);
        this.#schedule();
      },
      (error: unknown) => {
        slots.replacing--;
        this.#logger.warn({ taskExecutorId: lostId, error: (error as Error).message }, 'could not replace a lost task executor');
        if (this.#state === 'running' && slots.count === 0 && slots.replacing === 0) {
          this.#failJob(this.#noExecutorLeft(new EngineError('WEFT_ERR_TASK_EXECUTOR_LOST', `${lost.message}; its replacement failed to start: ${(error as Error).message}`, { cause: error, context: { taskExecutorId: lostId } })));
        }
      },
    );
  }

  #noExecutorLeft(cause: EngineError): EngineError {
    return new EngineError('WEFT_ERR_JOB_FAILED', `job ${JSON.stringify(this.#options.plan.name)} failed: no task executor is left: ${cause.message}`, { cause });
  }

  #elapsedMs(): number {
    return Math.round(performance.now() - this.#started);
  }

  // ---- state machine ---------------------------------------------------------------------------

  #onTaskFinished(v: number, region: number, result: TaskResult): void {
    const { topology } = this.#options;
    this.#results[v] = result;
    this.#taskDone[v] = 1;
    this.#finishedTasks++;
    this.#active[region] = (this.#active[region] as number) - 1;
    this.#remaining[region] = (this.#remaining[region] as number) - 1;
    if (this.#regionState[region] === CANCELLING) {
      this.#afterTerminal(region);
      return;
    }
    const vertex = topology.jobVertexOf(v);
    const subtask = v - vertex.firstExecutionVertex;
    for (const e of vertex.outputs) {
      const edge = topology.edges[e];
      if (edge === undefined || edge.mustBePipelined) continue;
      const partition = edge.firstPartition + subtask;
      this.#partitions.markDone(partition);
      for (const consumer of this.#dependencies.consumersOf(partition)) {
        this.#pending[consumer] = (this.#pending[consumer] as number) - 1;
        if (this.#pending[consumer] === 0 && this.#regionState[consumer] === WAITING && !this.#restarting.has(consumer)) this.#setReady(consumer);
      }
    }
    if (this.#remaining[region] === 0) {
      this.#setState(region, FINISHED);
      this.#finishedRegions++;
      this.#releaseSlot(region);
      if (this.#finishedRegions === this.#options.regions.regionCount && this.#state === 'running') {
        this.#complete('succeeded');
        return;
      }
    }
    this.#schedule();
  }

  /** The one place failures go: restart (failover strategy + restart strategy) or fail the job. */
  #onFailure(v: number, error: Error): void {
    const { topology, regions, restart, failover } = this.#options;
    const region = regions.regionOf[v] as number;
    this.#failures++;
    const failedVertex = topology.executionVertexId(v);
    const attemptId = this.#builder.attemptIdOf(v);
    this.#logger.info({ executionVertexId: failedVertex, attempt: this.#attempts[v], error: error.message }, 'task failed');
    if (this.#state !== 'running' || this.#restarting.has(region)) return;
    if (isEngineError(error, 'WEFT_ERR_INVALID_JOB')) {
      this.#failJob(this.#jobFailed(v, error));
      return;
    }
    restart.notifyFailure(error);
    if (!restart.canRestart()) {
      this.#failJob(this.#jobFailed(v, error, `recovery is suppressed by ${restart.toString()}: `));
      return;
    }
    const named = lostPartitionsOf(error, topology);
    let toRestart: Int32Array;
    try {
      toRestart = failover.verticesToRestart({ failedVertex, lostPartitions: named });
    } catch (failoverError) {
      this.#failJob(this.#jobFailed(v, failoverError as Error));
      return;
    }
    // Released partitions the walk met count as lost too: with them, `weft plan --lost` predicts this failover.
    const lostPartitions = [...named, ...this.#partitions.releasedInputsOf(topology, toRestart).filter((p) => !named.includes(p))];
    this.#restarts++;
    const backoffMs = restart.getBackoffTimeMs();
    let deployed = 0;
    for (let u = 0; u < topology.executionVertexCount; u++) deployed += this.#taskDeployed[u] as number;
    this.#failovers.push({
      atMs: this.#elapsedMs(),
      failedTask: failedVertex,
      attemptId,
      error: describeFailure(error),
      lostPartitions,
      strategy: failover.name,
      tasksToRestart: Array.from(toRestart, (u) => topology.executionVertexId(u)),
      tasksRunAgain: Array.from(toRestart).filter((u) => this.#taskDeployed[u] === 1).map((u) => topology.executionVertexId(u)),
      tasksTotal: topology.executionVertexCount,
      tasksDeployed: deployed,
      backoffMs,
    });
    const restartRegions = new Set<number>();
    for (const u of toRestart) restartRegions.add(regions.regionOf[u] as number);
    this.#logger.info({ executionVertexId: failedVertex, regions: [...restartRegions], tasks: toRestart.length, backoffMs }, 'restarting regions');
    for (const r of restartRegions) {
      this.#restarting.add(r);
      this.#cancelRegion(r, `region restarts after ${failedVertex} failed`);
    }
    this.#maybeRestart();
  }

  #afterTerminal(region: number): void {
    if (this.#active[region] === 0) this.#cancelTimeouts.clear(region);
    if (this.#active[region] === 0 && (this.#regionState[region] === CANCELLING || this.#regionState[region] === RUNNING) && this.#remaining[region] !== 0) {
      this.#setState(region, CANCELLING);
      this.#releaseSlot(region);
    }
    if (this.#state === 'failing') this.#maybeSettleFailure();
    else this.#maybeRestart();
  }

  #cancelRegion(r: number, reason: string): void {
    const state = this.#regionState[r];
    if (state === READY) this.#ready.splice(this.#ready.indexOf(r), 1);
    if (state === RUNNING || state === DEPLOYING) {
      this.#setState(r, CANCELLING);
      this.#regionVersion[r] = (this.#regionVersion[r] as number) + 1;
      const executor = this.#regionExecutor[r];
      const attemptIds = Array.from(this.#options.regions.membersOf(r)).filter((v) => this.#taskDone[v] === 0).map((v) => this.#builder.attemptIdOf(v));
      if (state === RUNNING && executor !== undefined && attemptIds.length > 0) {
        executor.cancel(attemptIds, reason);
        this.#cancelTimeouts.arm(r, executor, () => (this.#active[r] as number) > 0 && this.#regionExecutor[r] === executor);
      }
      if (state === DEPLOYING) this.#active[r] = 0;
      if (this.#active[r] === 0) this.#releaseSlot(r);
    } else if (state !== CANCELLING) {
      // A finished region runs again: it no longer counts as finished.
      if (state === FINISHED) this.#finishedRegions--;
      this.#setState(r, CANCELLING);
    }
  }

  #maybeRestart(): void {
    if (this.#state !== 'running' || this.#restarting.size === 0 || this.#backoffTimer !== undefined) return;
    for (const r of this.#restarting) if ((this.#active[r] as number) > 0) return;
    const delay = this.#options.restart.getBackoffTimeMs();
    this.#backoffTimer = setTimeout(() => {
      this.#backoffTimer = undefined;
      void this.#resetRestartingRegions();
    }, delay);
  }

  async #resetRestartingRegions(): Promise<void> {
    if (this.#state !== 'running') return;
    const { topology, regions, blockingMaster } = this.#options;
    const restarting = [...this.#restarting];
    // A region added to the restart after the backoff began may still have tasks stopping.
    if (restarting.some((r) => (this.#active[r] as number) > 0)) return;
    const releases: Promise<void>[] = [];
    for (const r of restarting) {
      for (const v of regions.membersOf(r)) {
        if (this.#taskDone[v] === 1) this.#finishedTasks--;
        this.#taskDone[v] = 0;
        this.#taskDeployed[v] = 0;
        this.#results[v] = undefined;
        this.#attempts[v] = (this.#attempts[v] as number) + 1;
        const vertex = topology.jobVertexOf(v);
        for (const e of vertex.outputs) {
          const edge = topology.edges[e];
          if (edge === undefined || edge.mustBePipelined) continue;
          const partition = edge.firstPartition + (v - vertex.firstExecutionVertex);
          this.#partitions.markReset(partition);
          const old = this.#builder.descriptors[partition];
          this.#builder.descriptors[partition] = undefined;
          if (old !== undefined) releases.push(blockingMaster.releasePartitionExternally(old).catch((error: unknown) => this.#logger.warn({ partitionId: old.partition.partitionId, error: (error as Error).message }, 'releasing a restarted partition failed')));
        }
      }
    }
    await Promise.all(releases);
    if (this.#state !== 'running') return;
    this.#restarting.clear();
    for (const r of restarting) this.#setState(r, WAITING);
    // Pending counts of every region not yet deployed: some partitions they wait for are produced anew.
    for (let r = 0; r < regions.regionCount; r++) {
      const state = this.#regionState[r];
      if (state !== WAITING && state !== READY) continue;
      let pending = 0;
      for (const p of this.#dependencies.inputsOf[r] as Int32Array) if (!this.#partitions.isDone(p)) pending++;
      this.#pending[r] = pending;
      if (state === READY && pending > 0) {
        this.#ready.splice(this.#ready.indexOf(r), 1);
        this.#setState(r, WAITING);
      } else if (state === WAITING && pending === 0) {
        this.#setReady(r);
      }
    }
    this.#schedule();
  }

  #schedule(): void {
    if (this.#state !== 'running') return;
    while (this.#ready.length > 0) {
      const best = this.#slots.best();
      if (best === undefined) return;
      const region = this.#ready.shift() as number;
      void this.#deploy(region, best);
    }
  }

  async #deploy(region: number, executor: TaskExecutor): Promise<void> {
    const members = this.#options.regions.membersOf(region);
    this.#setState(region, DEPLOYING);
    this.#slots.take(executor);
    this.#regionExecutor[region] = executor;
    this.#remaining[region] = members.length;
    this.#active[region] = members.length;
    const version = this.#regionVersion[region];
    let deployment;
    try {
      deployment = await this.#builder.build(region, executor.id);
    } catch (error) {
      if (this.#regionVersion[region] !== version) return;
      this.#active[region] = 0;
      this.#releaseSlot(region);
      this.#setState(region, CANCELLING);
      this.#onFailure(members[0] as number, error as Error);
      this.#afterTerminal(region);
      return;
    }
    if (this.#regionVersion[region] !== version || this.#regionState[region] !== DEPLOYING) return;
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
      if (this.#regionVersion[region] !== version || this.#regionState[region] !== DEPLOYING) return;
    }
    this.#setState(region, RUNNING);
    this.#attemptsDeployed += members.length;
    for (const v of members) this.#taskDeployed[v] = 1;
    for (const task of deployment.tasks) for (const output of task.outputs) if (!output.pipelined) this.#partitions.markDeployed(this.#options.topology.indexOfResultPartition(output.partition.partitionId));
    executor.deploy(deployment);
  }

  #setReady(region: number): void {
    this.#setState(region, READY);
    this.#ready.push(region);
  }

  #setState(region: number, state: number): void {
    const from = this.#regionState[region] as number;
    if (from === state) return;
    this.#regionState[region] = state;
    this.#logger.debug({ region, from: REGION_STATES[from], to: REGION_STATES[state] }, `${REGION_STATES[from]} -> ${REGION_STATES[state]}`);
  }

  #releaseSlot(region: number): void {
    const executor = this.#regionExecutor[region];
    if (executor === undefined) return;
    this.#regionExecutor[region] = undefined;
    this.#slots.give(executor);
  }

  #failJob(error: EngineError): void {
    if (this.#state !== 'running') return;
    this.#state = 'failing';
    this.#failure = error;
    if (this.#backoffTimer !== undefined) clearTimeout(this.#backoffTimer);
    this.#backoffTimer = undefined;
    this.#logger.info({ error: error.message }, 'running -> failing');
    for (let r = 0; r < this.#options.regions.regionCount; r++) {
      const state = this.#regionState[r];
      if (state === RUNNING || state === DEPLOYING) this.#cancelRegion(r, 'the job failed');
    }
    this.#maybeSettleFailure();
  }

  #maybeSettleFailure(): void {
    if (this.#state !== 'failing') return;
    for (let r = 0; r < this.#options.regions.regionCount; r++) if ((this.#active[r] as number) > 0) return;
    this.#complete('failed');
  }

  #complete(status: 'succeeded' | 'failed'): void {
    this.#state = 'done';
    if (this.#backoffTimer !== undefined) clearTimeout(this.#backoffTimer);
    this.#cancelTimeouts.clearAll();
    const results = this.#results.filter((r): r is TaskResult => r !== undefined);
    this.#resolve({
      status,
      ...(status === 'failed' && this.#failure !== undefined ? { error: this.#failure } : {}),
      results,
      attemptsDeployed: this.#attemptsDeployed,
      failures: this.#failures,
      restarts: this.#restarts,
      failovers: [...this.#failovers],
      executorsLost: [...this.#executorsLost],
      attempts: Array.from(this.#attempts),
    });
  }

  #jobFailed(v: number, cause: Error, why = ''): EngineError {
    const attemptId = this.#builder.attemptIdOf(v);
    return new EngineError('WEFT_ERR_JOB_FAILED', `job ${JSON.stringify(this.#options.plan.name)} failed: ${why}task ${attemptId} failed: ${cause.message}`, {
      cause,
      context: { executionAttemptId: attemptId, ...(why === '' ? {} : { restartStrategy: this.#options.restart.toString() }) },
    });
  }
}
