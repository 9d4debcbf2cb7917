import type { Logger, PartitionsLostNotice, TaskExecutorId } from '@weft/shuffle-api';
import { EngineError } from '../errors/engine-error.js';
import type { TaskExecutor } from '../executor/task-executor.js';
import type { TaskMetrics } from '../runtime/task-deployment.js';
import type { TaskResult } from '../runtime/task-events.js';
import { ConditionWaiters } from './condition-waiters.js';
import { CancelTimeouts } from './cancel-timeouts.js';
import { DeploymentBuilder } from './deployment-builder.js';
import { JobCompletion } from './job-completion.js';
import { twoPhaseSinksOf } from './two-phase-commits.js';
import { JobEventEmitter } from './job-event-emitter.js';
import { type JobEvent, noopJobEventListener, type VertexInitializedData } from './job-events.js';
import type { JobSchedulerOptions, ScheduledOutcome } from './job-scheduler-options.js';
import { DeploymentLatencies, type DeploymentLatencySummary } from './deployment-latencies.js';
import type { JobProgress } from './job-progress.js';
import { PartitionReleases } from './partition-releases.js';
import { approximateOutputsOf, blockingOutputsOf, PartitionStates } from './partition-states.js';
import { jobProgressOf } from './progress-counters.js';
import { RegionDependencies } from './region-dependencies.js';
import { PlacementCounts, type PlacementSummary } from './placement-counts.js';
import { RegionRestarts } from './region-restarts.js';
import { RegionState, RegionStates } from './region-states.js';
import { RegionScheduler } from './region-scheduler.js';
import { RegionTransitions } from './region-transitions.js';
import { TaskReports } from './task-reports.js';
import type { RecoveryPlan } from './recovery-plan.js';
import { restoreRecoveryPlan } from './restore-recovery-plan.js';
import { jobSubmittedEvent } from './job-submitted-event.js';
import { AdaptiveDecisions } from './adaptive-decisions.js';
import { ApproximateInputWaits } from './approximate-input-waits.js';
import { type ApproximateRecoveries, type ApproximateRecoveryRecord, approximateRecoveriesOf } from './approximate-recoveries.js';
import { type FailoverResume, FailoverResumes } from './failover-resumes.js';
import { TaskAttempts } from './task-attempts.js';

const { DEPLOYING, RUNNING, CANCELLING } = RegionState;

/**
 * The scheduler of one job (Flink's DefaultScheduler over its ExecutionGraph): the one place that writes
 * where regions, attempts and partitions stand (RegionStates, TaskAttempts, PartitionStates), each change
 * a named transition that emits its JobEvent as it happens, in causal order.
 *
 * Regions move `waiting → ready → deploying → running → finished` (RegionTransitions: `markDeploying`,
 * `markRunning`, `markRegionFinished`); a region is ready when every partition it waits for
 * (RegionDependencies) is finished, and is deployed (RegionScheduler) as one unit: whole to the executor
 * with the most free slots, or — when the executors serve pipelined partitions to each other
 * (`shuffleLocation`) and the job has a pipelined master — its tasks spread over executors' free slots
 * (placeRegion), its pipelined partitions registered here at their producers' executors. A lost executor
 * fails the tasks it ran; the region's tasks on other executors are cancelled by its restart. Task reports
 * come in through `taskRunning`, `taskFinished`, `taskFailed`, `taskCancelled` and `executorLost` (each
 * handled by TaskReports); every failure goes to RegionRestarts, which fails the job (`failJob`) or
 * cancels the regions to restart (`cancelRegion`) and later has their tasks reset (`resetTasks`) and
 * rescheduled. When every region finished, the last transition publishes the sinks (`publishSinks`:
 * JobCompletion emits a `sink-published` each, then `job-finished`); a failed job ends (`job-failed`)
 * once every task stopped.
 *
 * A `task-finished` counts only once the event listener took it: when the listener returns a promise,
 * the task's partitions become readable (and its consumers schedulable) only after it resolved — what
 * makes "finished" durable once a job event log listens. A listener that fails fails the job
 * (`WEFT_ERR_EVENT_LOG`).
 */
export class JobScheduler {
  readonly #options: JobSchedulerOptions;
  readonly #logger: Logger;
  readonly #builder: DeploymentBuilder;
  readonly #latencies = new DeploymentLatencies();
  readonly #attempts: TaskAttempts;
  readonly #states: RegionStates;
  readonly #partitions: PartitionStates;
  readonly #restarts: RegionRestarts;
  readonly #releases: PartitionReleases;
  readonly #cancelTimeouts: CancelTimeouts;
  readonly #events: JobEventEmitter;
  #state: 'created' | 'running' | 'failing' | 'publishing' | 'done' = 'created';
  #failure: EngineError | undefined;
  #aborted = false;
  readonly #completion: JobCompletion;
  readonly #decisions: AdaptiveDecisions;
  /** The executor each execution vertex's current attempt was deployed to, until it stopped. */
  readonly #placedOn: (TaskExecutor | undefined)[];
  /** An approximate job's finished tasks: where each ran, whose partitions serve their restarted consumers again. */
  readonly #finishedOn = new Map<number, TaskExecutor>();
  /** Running consumers whose approximate input channels wait for a new producer attempt (TaskEvent input-unavailable). */
  readonly #inputWaits = new ApproximateInputWaits();
  readonly #placements = new PlacementCounts();
  /** An approximate job's single-task recoveries (any PIPELINED_APPROXIMATE edge); undefined otherwise. */
  readonly #approximate: ApproximateRecoveries | undefined;
  readonly #transitions: RegionTransitions;
  readonly #regionScheduler: RegionScheduler;
  readonly #reports: TaskReports;
  readonly #resumes = new FailoverResumes();
  /** whenRestartsResumed's callers, resolved at the next check that finds the restarts resumed. */
  readonly #resumedWaiters = new ConditionWaiters(() => this.#restartsResumed());

  constructor(options: JobSchedulerOptions) {
    this.#options = options;
    const { topology, regions, plan, blockingMaster, logger } = options;
    this.#logger = logger;
    this.#cancelTimeouts = new CancelTimeouts(options.cancelTimeoutMs, logger);
    const dependencies = new RegionDependencies(topology, regions);
    this.#attempts = new TaskAttempts(topology);
    this.#states = new RegionStates(dependencies, options.slots, logger);
    this.#partitions = new PartitionStates(topology.partitionCount);
    this.#decisions = new AdaptiveDecisions({ plan, topology });
    this.#placedOn = new Array<TaskExecutor | undefined>(topology.executionVertexCount);
    this.#builder = new DeploymentBuilder({ ...options, attempts: this.#attempts, decisions: this.#decisions });
    const fence = options.fence;
    this.#events = new JobEventEmitter(options.eventListener ?? noopJobEventListener, (error) => {
      if (fence?.observe(error) === true) this.failJob(fence.error as EngineError);
      else this.failJob(this.#completion.jobFailed(error));
    });
    // fenced by a refusal elsewhere (a release, a registration): the job stops, after the current step
    fence?.onFenced((error) => queueMicrotask(() => this.failJob(error)));
    const enabled = options.releasePartitionsDuringJob ?? true;
    this.#releases = new PartitionReleases({ plan, topology, regions, blockingMaster, partitions: this.#partitions, builder: this.#builder, attempts: this.#attempts, logger, enabled });
    const running = (): boolean => this.#state === 'running';
    this.#transitions = new RegionTransitions({ topology, regions, slots: options.slots, states: this.#states, attempts: this.#attempts, partitions: this.#partitions, releases: this.#releases, decisions: this.#decisions, cancelTimeouts: this.#cancelTimeouts, placedOn: this.#placedOn, events: this.#events });
    this.#restarts = new RegionRestarts({
      ...options,
      jobName: plan.name,
      states: this.#states,
      attempts: this.#attempts,
      partitions: this.#partitions,
      builder: this.#builder,
      releases: this.#releases,
      onFailover: (record) => {
        this.#resumes.failedOver(record, record.tasksToRestart.map((task) => this.#attempts.attemptIdOf(topology.indexOfExecutionVertex(task))));
        const { failedTask } = record;
        // the restarted tasks have not been reset yet: each restarts as its next attempt
        if (failedTask !== undefined) this.#approximate?.restartedWith(failedTask, record.tasksToRestart.filter((t) => t !== failedTask).map((task) => ({ task, attemptId: `${task}@${this.#attempts.numberOf(topology.indexOfExecutionVertex(task)) + 1}` })));
        this.#emit({ type: 'failover', data: record });
        options.onFailover?.(record);
      },
      isSkipped: (v) => this.#decisions.isSkipped(v),
      host: {
        isRunning: running,
        failJob: (error) => this.failJob(error),
        cancelRegion: (region, reason) => this.#transitions.cancelRegion(region, reason),
        resetTasks: (regions, reason) => this.#transitions.resetTasks(regions, reason),
        rescheduled: (restarted) => this.#rescheduled(restarted),
      },
    });
    this.#approximate = approximateRecoveriesOf({ topology, slots: options.slots, attempts: this.#attempts });
    this.#completion = new JobCompletion({ jobName: plan.name, sinkTempDirs: options.sinkTempDirs ?? [], fileSystems: options.fileSystems ?? [], publishedSinks: options.recovery?.publishedSinks ?? new Map(), events: this.#events, attempts: this.#attempts, restarts: this.#restarts, releases: this.#releases, fence, keepSinkFilesOnFailure: options.keepSinkFilesOnFailure, twoPhaseSinks: twoPhaseSinksOf({ jobId: options.jobId, plan, cwd: options.cwd ?? process.cwd(), fileSystems: options.fileSystems ?? [] }) });
    const { slots, faults } = options;
    this.#regionScheduler = new RegionScheduler({ topology, regions, slots, faults, logger, dependencies, states: this.#states, attempts: this.#attempts, partitions: this.#partitions, decisions: this.#decisions, builder: this.#builder, restarts: this.#restarts, transitions: this.#transitions, events: this.#events, latencies: this.#latencies, placements: this.#placements, approximate: this.#approximate !== undefined, host: { isRunning: running, failJob: (error) => this.failJob(error), finishTask: (v, result) => this.#finishTask(v, result), deployFailed: (region, error) => this.#deployFailed(region, error) } });
    this.#reports = new TaskReports({ plan, topology, regions, slots, states: this.#states, attempts: this.#attempts, restarts: this.#restarts, events: this.#events, latencies: this.#latencies, resumes: this.#resumes, resumedWaiters: this.#resumedWaiters, approximate: this.#approximate, placedOn: this.#placedOn, host: { isRunning: running, finishTask: (v, result) => this.#finishTask(v, result), taskStopped: (v) => this.#taskStopped(v), onFailure: (v, error) => this.#onFailure(v, error), afterTerminal: (region) => this.#afterTerminal(region) } });
  }

  /** Whether the job runs (not failing, publishing or done): only then are regions scheduled, restarted, executors replaced. */
  get isRunning(): boolean {
    return this.#state === 'running';
  }

  /** The execution vertex whose current attempt `attemptId` is; -1 for a stale or unknown attempt. */
  currentVertexOf(attemptId: string): number {
    return this.#attempts.currentVertexOf(attemptId);
  }

  /**
   * The blocking shuffle says these finished partitions can no longer be read (JobShuffleContext.partitionsLost):
   * each whose named attempt is its producer's current, finished one is lost — released in PartitionStates, so
   * not available to a failover (which re-runs its producer once it restarts a reader of it), and a region
   * (re)scheduled to read it runs, fails to read it and fails over. Others are ignored: their producer runs
   * again, or has not finished. Nothing restarts here.
   */
  partitionsLost(notice: PartitionsLostNotice): void {
    const { topology } = this.#options;
    if (this.#state !== 'running' && this.#state !== 'created') return;
    const lost: string[] = [];
    for (const { partitionId, attempt } of notice.partitions) {
      const p = topology.indexOfResultPartition(partitionId);
      if (p < 0) continue;
      const producer = topology.producerOfPartition(p);
      if (!this.#partitions.isDone(p) || this.#attempts.numberOf(producer) !== attempt) continue;
      this.#partitions.markLost(p);
      lost.push(partitionId);
    }
    this.#logger.info({ partitions: lost, ignored: notice.partitions.length - lost.length, reason: notice.reason }, lost.length === 0 ? 'partitions lost: none is a current finished one' : 'partitions lost: readable -> lost');
  }

  /** @see JobMaster.isPartitionAvailable */
  isPartitionAvailable(partitionId: string): boolean {
    const p = this.#options.topology.indexOfResultPartition(partitionId);
    return p < 0 || !this.#partitions.isReleased(p);
  }

  /** @see TaskReports.finishesSettled */
  finishesSettled(): Promise<void> {
    return this.#reports.finishesSettled();
  }

  /** Resolves once the partition releases under way settled. */
  releasesSettled(): Promise<void> {
    return this.#releases.settled();
  }

  progress(): Omit<JobProgress, 'elapsedMs'> {
    return jobProgressOf({ topology: this.#options.topology, slots: this.#options.slots, attempts: this.#attempts, decisions: this.#decisions, states: this.#states, failures: this.#restarts.failures });
  }

  // ---- transitions ------------------------------------------------------------------------------

  /** The job is submitted: `job-submitted`, a `vertex-initialized` per job vertex, then regions without inputs are scheduled. */
  start(): Promise<ScheduledOutcome> {
    if (this.#state !== 'created') throw new EngineError('WEFT_ERR_ILLEGAL_STATE', 'a job master runs once');
    this.#state = 'running';
    const { plan, topology } = this.#options;
    this.#emit(jobSubmittedEvent(plan, topology, this.#options.submission, { sinkTempDirs: this.#options.sinkTempDirs ?? [], cwd: this.#options.cwd ?? process.cwd() }));
    // an adaptive vertex is initialized once decided (RegionScheduler's #decideReady); a resumed run restores the decisions logged before
    for (const vertex of topology.vertices) if (!this.#decisions.isAdaptive(vertex.index)) this.#emit({ type: 'vertex-initialized', data: { vertexId: vertex.id, parallelism: vertex.parallelism } });
    const recovery = this.#options.recovery;
    for (const decision of recovery?.decisions ?? []) {
      try {
        this.#decisions.restore(decision);
      } catch (error) {
        // only after a clean restart (a fitting history was checked by planRecovery): decided anew
        this.#logger.warn({ vertexId: decision.vertexId, error: (error as Error).message }, 'a logged decision does not fit the job: it is decided again');
      }
    }
    if (recovery === undefined) this.#states.start();
    else if (this.#resume(recovery)) return this.#completion.outcome;
    this.schedule();
    return this.#completion.outcome;
  }

  /** A resumed run (restoreRecoveryPlan); true when nothing is left to run (the sinks are being published). */
  #resume(recovery: RecoveryPlan): boolean {
    const { topology, regions } = this.#options;
    restoreRecoveryPlan(recovery, { topology, regions, attempts: this.#attempts, builder: this.#builder, partitions: this.#partitions, states: this.#states, releases: this.#releases, emit: (event) => void this.#emit(event) });
    if (this.#states.finished === this.#states.count) {
      this.#publishSinks();
      return true;
    }
    return false;
  }

  /** The decisions of an adaptive job's vertices so far (made or restored), in vertex order. */
  decisions(): VertexInitializedData[] {
    return this.#decisions.decisions();
  }

  /** Whether execution vertex `v` is a skipped reserved subtask of a decided adaptive vertex. */
  isSkipped(v: number): boolean {
    return this.#decisions.isSkipped(v);
  }

  /** Deploys ready regions while executors have free slots. */
  schedule(): void {
    this.#regionScheduler.scheduleReady();
    this.#resumedWaiters.check();
  }

  /**
   * Resolves once the restarts so far are resumed — none under way, and each restarted task's current
   * attempt read again or finished — or a ready region waits for a free slot, or the job stopped running,
   * or `timeoutMs` passed: what a replacement executor's start waits for (forking a worker process blocks
   * this one for milliseconds, which the restarted tasks' first messages would wait behind).
   */
  whenRestartsResumed(timeoutMs: number): Promise<void> {
    return this.#resumedWaiters.wait(timeoutMs);
  }

  #restartsResumed(): boolean {
    if (this.#state !== 'running' || this.#states.hasReady) return true;
    if (this.#restarts.anyUnderWay) return false;
    // an attempt that is no longer current (a later reset gave it up) is not waited for
    return this.#resumes.unresolved().every((attemptId) => {
      const v = this.#attempts.currentVertexOf(attemptId);
      return v < 0 || this.#attempts.isDone(v);
    });
  }

  /** Where tasks were deployed so far: per executor, and how many region deployments were spread. */
  placement(): PlacementSummary {
    return this.#placements.summary();
  }

  /** An approximate job's single-task recoveries so far (undefined for other jobs). */
  approximateRecoveries(): ApproximateRecoveryRecord[] | undefined {
    return this.#approximate?.records();
  }

  /** Each failover: when its failed task, and when all its restarted tasks, read again (FailoverResumes). */
  failoverResumes(): FailoverResume[] {
    return this.#resumes.records();
  }

  /** From each deployment handed to an executor to its task's `running` report (DeploymentLatencies). */
  deploymentLatency(): DeploymentLatencySummary {
    return this.#latencies.summary();
  }

  /** @see TaskReports.taskReading */
  taskReading(v: number, attemptId: string, atMs: number): void {
    this.#reports.taskReading(v, attemptId, atMs);
  }

  /** @see TaskReports.taskRunning */
  taskRunning(attemptId: string): void {
    this.#reports.taskRunning(attemptId);
  }

  /** @see TaskReports.taskFinished */
  taskFinished(executor: TaskExecutorId, v: number, result: TaskResult): void {
    this.#reports.taskFinished(executor, v, result);
  }

  /** @see TaskReports.taskFailed */
  taskFailed(v: number, error: Error, metrics?: TaskMetrics): void {
    this.#reports.taskFailed(v, error, metrics);
  }

  /** @see TaskReports.taskCancelled */
  taskCancelled(v: number, metrics?: TaskMetrics): void {
    this.#reports.taskCancelled(v, metrics);
  }

  /** @see TaskReports.executorLost */
  executorLost(executor: TaskExecutor, lost: EngineError): void {
    // the approximate partitions of the tasks that finished on it are gone with it: a failover that restarts
    // a consumer of one restarts its producer too (from the latest checkpoint), before its tasks fail below
    const finished: number[] = [];
    this.#finishedOn.forEach((on, v) => on === executor && finished.push(v));
    for (const v of finished) this.#markOutputsLost(v);
    this.#reports.executorLost(executor, lost);
    // then the consumers elsewhere still waiting for those partitions (the lost executor's own failed above)
    for (const v of finished) this.#failInputWaitsOf(v);
  }

  /**
   * Execution vertex `v`'s finished attempt lost its pipelined outputs (the process that held them died): its
   * PIPELINED_APPROXIMATE partitions count as released, so a failover that restarts a consumer of one
   * restarts `v` too; a consumer that waits for one of them now (`input-unavailable`) fails over at once.
   * Nothing when `v` runs again (its new attempt's partitions are elsewhere).
   */
  outputsLost(v: number): void {
    this.#markOutputsLost(v);
    this.#failInputWaitsOf(v);
  }

  /**
   * A channel of `v`'s current attempt reading approximate partition `partitionId` lost its producer attempt
   * (TaskEvent `input-unavailable`): where that producer had finished and its outputs were lost, nothing
   * will serve it again, so `v` fails over now (WEFT_ERR_APPROXIMATE_INPUT_LOST) and the failover restarts
   * that producer with it; else it waits for the producer's next attempt.
   */
  inputUnavailable(v: number, partitionId: string): void {
    const p = this.#options.topology.indexOfResultPartition(partitionId);
    if (p < 0) return;
    this.#inputWaits.unavailable(p, v, this.#attempts.attemptIdOf(v));
    this.#failInputWaits(p);
  }

  /** That channel reads a new producer attempt (TaskEvent `input-resumed`). */
  inputResumed(v: number, partitionId: string): void {
    const p = this.#options.topology.indexOfResultPartition(partitionId);
    if (p >= 0) this.#inputWaits.resumed(p, v, this.#attempts.attemptIdOf(v));
  }

  #markOutputsLost(v: number): void {
    this.#finishedOn.delete(v);
    if (!this.#attempts.isDone(v)) return;
    for (const p of approximateOutputsOf(this.#options.topology, v)) this.#partitions.markLost(p);
  }

  #failInputWaitsOf(v: number): void {
    for (const p of approximateOutputsOf(this.#options.topology, v)) this.#failInputWaits(p);
  }

  /**
   * Fails over the running consumers waiting for partition `p` when its finished producer's outputs were
   * lost — those a failover does not restart already (another waiter's, or another lost partition's: its
   * new attempt, deployed against this one too, reports it again).
   */
  #failInputWaits(p: number): void {
    const { topology, regions } = this.#options;
    const producer = topology.producerOfPartition(p);
    if (!this.isRunning || !this.#partitions.isReleased(p) || !this.#attempts.isDone(producer)) return;
    for (const { v, attemptId } of this.#inputWaits.take(p)) {
      const executor = this.#placedOn[v];
      if (this.#attempts.attemptIdOf(v) !== attemptId || this.#attempts.isDone(v) || executor === undefined || !this.isRunning) continue;
      if (this.#restarts.isRestarting(regions.regionOf[v] as number)) continue;
      const task = topology.executionVertexId(v);
      const partitionId = topology.resultPartitionId(p);
      const from = topology.executionVertexId(producer);
      const error = new EngineError('WEFT_ERR_APPROXIMATE_INPUT_LOST', `task ${task} lost its approximate input partition ${partitionId}: its producer ${from} had finished, and its outputs were lost with its process, so nothing would serve ${task} again (a failover restarts ${from} with it)`, {
        context: { executionVertexId: task, partitionId },
      });
      // the attempt still runs: the failover cancels it (its counters: what its executor last reported)
      this.#approximate?.lost(v, attemptId, this.#attempts.numberOf(v), executor.progress().find((t) => t.attemptId === attemptId)?.metrics, true);
      this.#restarts.onFailure(v, error);
    }
  }

  /** Fails the job from outside (the caller's AbortSignal): it ends with `job-cancelled`. */
  abort(reason: unknown): void {
    if (this.#state !== 'running') return;
    const error = reason instanceof Error ? reason : new Error(String(reason));
    this.#aborted = true;
    this.failJob(new EngineError('WEFT_ERR_JOB_FAILED', `job ${this.#options.plan.name} was aborted: ${error.message}`, { cause: error }));
  }

  /**
   * A failure of the job master's own, not a task's (its checkpoints failed more times in a row than
   * tolerated): a global failover, as Flink's `failGlobal` — the restart strategy is told, and where it
   * allows a restart every task restarts from the latest completed checkpoint (a `failover` with `global:
   * true`); where it does not, the job fails with `WEFT_ERR_JOB_FAILED` caused by `reason` ("recovery is
   * suppressed by …") and ends with `job-failed`. A reason that says the run is fenced (a checkpoint
   * store refused it) fails the job with the fence's error: nothing restarts.
   */
  fail(reason: Error): void {
    if (this.#state !== 'running') return;
    const fence = this.#options.fence;
    if (fence?.observe(reason) === true) this.failJob(fence.error as EngineError);
    else this.#restarts.onGlobalFailure(reason);
  }

  /** The job fails: running tasks are cancelled; it ends (`job-failed`) once every one stopped. */
  failJob(error: EngineError): void {
    if (this.#state !== 'running') return;
    this.#state = 'failing';
    this.#failure = error;
    this.#restarts.stop();
    this.#logger.info({ error: error.message }, 'running -> failing');
    this.#resumedWaiters.check();
    for (let r = 0; r < this.#states.count; r++) {
      const state = this.#states.stateOf(r);
      if (state === RUNNING || state === DEPLOYING) this.#transitions.cancelRegion(r, 'the job failed');
    }
    this.#maybeSettleFailure();
  }

  /** A task failed: to RegionRestarts — unless its error says the run is fenced (a commit refused): then the job fails, nothing restarts. */
  #onFailure(v: number, error: Error): void {
    const fence = this.#options.fence;
    if (fence?.observe(error) === true) this.failJob(fence.error as EngineError);
    else this.#restarts.onFailure(v, error);
  }

  /** Building the region's deployment failed (e.g. registering a partition): it fails as its first task. */
  #deployFailed(region: number, error: Error): void {
    const states = this.#states;
    states.active[region] = 0;
    this.#transitions.unplace(region);
    states.releaseSlot(region);
    states.set(region, CANCELLING);
    this.#onFailure(this.#options.regions.membersOf(region)[0] as number, error);
    this.#afterTerminal(region);
  }

  #finishTask(v: number, result: TaskResult): void {
    const states = this.#states;
    const region = this.#regionOf(v);
    this.#attempts.finish(v, result);
    this.#resumes.finished(this.#attempts.attemptIdOf(v));
    this.#approximate?.finished(v);
    const on = this.#placedOn[v];
    if (this.#approximate !== undefined && on !== undefined) this.#finishedOn.set(v, on);
    this.#placedOn[v] = undefined;
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
      this.#transitions.markRegionFinished(region);
      if (states.finished === states.count && this.#state === 'running') {
        void this.#publishSinks();
        return;
      }
    }
    this.schedule();
  }

  /** Task `v` stopped without finishing (cancelled, or its finish was not recorded). */
  #taskStopped(v: number): void {
    const region = this.#regionOf(v);
    this.#placedOn[v] = undefined;
    this.#states.active[region] = (this.#states.active[region] as number) - 1;
    this.#afterTerminal(region);
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

  /**
   * Reset regions wait for their inputs again (a finished input whose producer is still restarting is not
   * done). A lost input whose producer's attempt stays finished (no failover re-runs it) counts as done, as
   * its finished producer makes it in Flink: its reader is deployed, fails to read it and fails over with
   * it — rather than waiting for a partition nothing will produce.
   */
  #rescheduled(restarted: readonly number[]): void {
    const { topology } = this.#options;
    const done = (p: number): boolean => this.#partitions.isDone(p) || (this.#partitions.isReleased(p) && this.#attempts.isDone(topology.producerOfPartition(p)));
    this.#states.waitAgain(restarted, (p) => done(p) && !this.#restarts.isRestarting(this.#producerRegionOf(p)));
    this.schedule();
  }

  /** Every region finished: the last transition publishes the sinks (`sink-published` each), then `job-finished`. */
  #publishSinks(): void {
    this.#state = 'publishing';
    this.#resumedWaiters.check();
    this.#restarts.stop();
    this.#approximate?.stop();
    this.#cancelTimeouts.clearAll();
    void this.#completion.succeeded().finally(() => (this.#state = 'done'));
  }

  /** A failing job's tasks all stopped: it ends with `job-failed` (`job-cancelled` when aborted). */
  #maybeSettleFailure(): void {
    if (this.#state !== 'failing') return;
    for (let r = 0; r < this.#states.count; r++) if ((this.#states.active[r] as number) > 0) return;
    this.#state = 'done';
    this.#restarts.stop();
    this.#approximate?.stop();
    this.#cancelTimeouts.clearAll();
    void this.#completion.failed(this.#failure as EngineError, this.#aborted);
  }

  #emit(event: JobEvent): boolean | Promise<boolean> {
    return this.#events.emit(event);
  }

  #regionOf(v: number): number {
    return this.#options.regions.regionOf[v] as number;
  }

  /** The region of the execution vertex producing result partition `p`. */
  #producerRegionOf(p: number): number {
    return this.#options.regions.regionOf[this.#options.topology.producerOfPartition(p)] as number;
  }
}
