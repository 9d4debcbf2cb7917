import type { Logger, TaskExecutorId } from '@weft/shuffle-api';
import { EngineError } from '../errors/engine-error.js';
import type { TaskExecutor } from '../executor/task-executor.js';
import type { RegionDeployment, TaskMetrics } from '../runtime/task-deployment.js';
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
import { blockingOutputsOf, PartitionStates } from './partition-states.js';
import { jobProgressOf } from './progress-counters.js';
import { RegionDependencies } from './region-dependencies.js';
import { stalledJobError } from './stalled-job.js';
import { announceApproximate, handOut, RegionDeployer } from './region-deployer.js';
import { PlacementCounts, type PlacementSummary } from './placement-counts.js';
import { ApproximatePlacement, hasNoBlockingEdgeInside, placeRegion, type RegionPlacement } from './region-placement.js';
import { RegionRestarts } from './region-restarts.js';
import { RegionState, RegionStates } from './region-states.js';
import type { RecoveryPlan } from './recovery-plan.js';
import { restoreRecoveryPlan } from './restore-recovery-plan.js';
import { jobSubmittedEvent } from './job-submitted-event.js';
import { taskFinishedEvent } from './task-finished-event.js';
import { AdaptiveDecisions } from './adaptive-decisions.js';
import { type ApproximateRecoveries, type ApproximateRecoveryRecord, approximateRecoveriesOf } from './approximate-recoveries.js';
import { type FailoverResume, FailoverResumes } from './failover-resumes.js';
import { TaskAttempts } from './task-attempts.js';

const { READY, DEPLOYING, RUNNING, FINISHED, CANCELLING } = RegionState;

/**
 * The scheduler of one job (Flink's DefaultScheduler over its ExecutionGraph): the one place that writes
 * where regions, attempts and partitions stand (RegionStates, TaskAttempts, PartitionStates), each change
 * a named transition that emits its JobEvent as it happens, in causal order.
 *
 * Regions move `waiting → ready → deploying → running → finished` (`markDeploying`, `markRunning`,
 * `markRegionFinished`); a region is ready when every partition it waits for (RegionDependencies) is
 * finished, and is deployed as one unit: whole to the executor with the most free slots, or — when the
 * executors serve pipelined partitions to each other (`shuffleLocation`) and the job has a pipelined
 * master — its tasks spread over executors' free slots (placeRegion), its pipelined partitions registered
 * here at their producers' executors. A lost executor fails the tasks it ran; the region's tasks on other
 * executors are cancelled by its restart. Task reports come in through
 * `taskRunning`, `taskFinished`, `taskFailed`, `taskCancelled` and `executorLost`; every failure goes to
 * RegionRestarts, which fails the job (`failJob`) or cancels the regions to restart (`cancelRegion`) and
 * later has their tasks reset (`resetTasks`) and rescheduled. When every region finished, the last
 * transition publishes the sinks (`publishSinks`: JobCompletion emits a `sink-published` each, then
 * `job-finished`); a failed job ends (`job-failed`) once every task stopped.
 *
 * A `task-finished` counts only once the event listener took it: when the listener returns a promise,
 * the task's partitions become readable (and its consumers schedulable) only after it resolved — what
 * makes "finished" durable once a job event log listens. A listener that fails fails the job
 * (`WEFT_ERR_EVENT_LOG`).
 */
export class JobScheduler {
  readonly #options: JobSchedulerOptions;
  readonly #logger: Logger;
  readonly #dependencies: RegionDependencies;
  readonly #builder: DeploymentBuilder;
  readonly #latencies = new DeploymentLatencies();
  readonly #deployer: RegionDeployer;
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
  /** Finished reports whose event the listener is still storing. */
  readonly #storing = new Set<Promise<unknown>>();
  readonly #completion: JobCompletion;
  readonly #decisions: AdaptiveDecisions;
  /** The executor each execution vertex's current attempt was deployed to, until it stopped. */
  readonly #placedOn: (TaskExecutor | undefined)[];
  /** Per region: may it be spread over executors (undefined: not asked yet). */
  readonly #spreadable: (boolean | undefined)[];
  readonly #placements = new PlacementCounts();
  /** An approximate job's single-task recoveries (any PIPELINED_APPROXIMATE edge); undefined otherwise. */
  readonly #approximate: ApproximateRecoveries | undefined;
  readonly #approximatePlacement: ApproximatePlacement;
  readonly #resumes = new FailoverResumes();
  /** whenRestartsResumed's callers, resolved at the next check that finds the restarts resumed. */
  readonly #resumedWaiters = new ConditionWaiters(() => this.#restartsResumed());

  constructor(options: JobSchedulerOptions) {
    this.#options = options;
    const { topology, regions, plan, blockingMaster, logger } = options;
    this.#logger = logger;
    this.#cancelTimeouts = new CancelTimeouts(options.cancelTimeoutMs, logger);
    this.#dependencies = new RegionDependencies(topology, regions);
    this.#attempts = new TaskAttempts(topology);
    this.#states = new RegionStates(this.#dependencies, options.slots, logger);
    this.#partitions = new PartitionStates(topology.partitionCount);
    this.#decisions = new AdaptiveDecisions({ plan, topology });
    this.#placedOn = new Array<TaskExecutor | undefined>(topology.executionVertexCount);
    this.#spreadable = new Array<boolean | undefined>(regions.regionCount);
    this.#builder = new DeploymentBuilder({ ...options, attempts: this.#attempts, decisions: this.#decisions });
    this.#deployer = new RegionDeployer({ topology, dependencies: this.#dependencies, builder: this.#builder, faults: options.faults, logger });
    const fence = options.fence;
    this.#events = new JobEventEmitter(options.eventListener ?? noopJobEventListener, (error) => {
      if (fence?.observe(error) === true) this.failJob(fence.error as EngineError);
      else this.failJob(this.#completion.jobFailed(error));
    });
    // fenced by a refusal elsewhere (a release, a registration): the job stops, after the current step
    fence?.onFenced((error) => queueMicrotask(() => this.failJob(error)));
    const enabled = options.releasePartitionsDuringJob ?? true;
    this.#releases = new PartitionReleases({ plan, topology, regions, blockingMaster, partitions: this.#partitions, builder: this.#builder, attempts: this.#attempts, logger, enabled });
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
        this.#emit({ type: 'failover', data: record });
        options.onFailover?.(record);
      },
      isSkipped: (v) => this.#decisions.isSkipped(v),
      host: {
        isRunning: () => this.#state === 'running',
        failJob: (error) => this.failJob(error),
        cancelRegion: (region, reason) => this.#cancelRegion(region, reason),
        resetTasks: (regions, reason) => this.#resetTasks(regions, reason),
        rescheduled: (restarted) => this.#rescheduled(restarted),
      },
    });
    this.#approximate = approximateRecoveriesOf({ topology, slots: options.slots, attempts: this.#attempts });
    this.#approximatePlacement = new ApproximatePlacement(this.#approximate !== undefined && this.#builder.canSpread);
    this.#completion = new JobCompletion({ jobName: plan.name, sinkTempDirs: options.sinkTempDirs ?? [], fileSystems: options.fileSystems ?? [], publishedSinks: options.recovery?.publishedSinks ?? new Map(), events: this.#events, attempts: this.#attempts, restarts: this.#restarts, releases: this.#releases, fence, keepSinkFilesOnFailure: options.keepSinkFilesOnFailure, twoPhaseSinks: twoPhaseSinksOf({ jobId: options.jobId, plan, cwd: options.cwd ?? process.cwd(), fileSystems: options.fileSystems ?? [] }) });
  }

  /** Whether the job runs (not failing, publishing or done): only then are regions scheduled, restarted, executors replaced. */
  get isRunning(): boolean {
    return this.#state === 'running';
  }

  /** The execution vertex whose current attempt `attemptId` is; -1 for a stale or unknown attempt. */
  currentVertexOf(attemptId: string): number {
    return this.#attempts.currentVertexOf(attemptId);
  }

  /** @see JobMaster.isPartitionAvailable */
  isPartitionAvailable(partitionId: string): boolean {
    const p = this.#options.topology.indexOfResultPartition(partitionId);
    return p < 0 || !this.#partitions.isReleased(p);
  }

  /** Resolves once every finished report received so far counted or not (its event stored or refused). */
  async finishesSettled(): Promise<void> {
    while (this.#storing.size > 0) await Promise.allSettled([...this.#storing]);
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
    // an adaptive vertex is initialized once decided (#decideReady); a resumed run restores the decisions logged before
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
    this.#scheduleReady();
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

  #scheduleReady(): void {
    if (this.#state !== 'running') return;
    if (this.#decisions.any) this.#decideReady();
    const { regions, topology, slots } = this.#options;
    while (this.#states.hasReady) {
      const free = this.#approximatePlacement.free(slots.available());
      if (free.length === 0) return;
      const region = this.#states.nextReady() as number;
      const placement = placeRegion({ members: regions.membersOf(region), topology, free, spreadable: this.#canSpread(region) }) as RegionPlacement;
      void this.#deploy(region, placement);
    }
    const stalled = stalledJobError(this.#states, this.#restarts.anyUnderWay, this.#dependencies, this.#options.topology, (p) => this.#partitions.isDone(p));
    if (stalled !== undefined) this.failJob(stalled);
  }

  /** Where tasks were deployed so far: per executor, and how many region deployments were spread. */
  placement(): PlacementSummary {
    return this.#placements.summary();
  }

  #canSpread(region: number): boolean {
    if (!this.#builder.canSpread) return false;
    this.#spreadable[region] ??= hasNoBlockingEdgeInside(this.#options.topology, this.#options.regions, region);
    return this.#spreadable[region];
  }

  /**
   * An adaptive job: every ready region's vertex is decided first (its producers all finished: every edge
   * of an adaptive vertex is BLOCKING) — `vertex-initialized` with the decision is emitted before any of
   * its tasks deploys — and ready regions made only of skipped subtasks finish at once, without a slot.
   */
  #decideReady(): void {
    const { regions } = this.#options;
    const skip: number[] = [];
    for (const r of this.#states.readyRegions()) {
      const members = regions.membersOf(r);
      for (const decision of this.#decisions.decideVerticesOf(members, this.#attempts.results)) {
        this.#logger.info({ vertexId: decision.vertexId, parallelism: decision.parallelism, bytesIn: decision.bytesIn }, 'undecided -> decided');
        this.#emit({ type: 'vertex-initialized', data: decision });
      }
      if (Array.from(members).every((v) => this.#decisions.isSkipped(v))) skip.push(r);
    }
    for (const r of skip) {
      if (this.#states.stateOf(r) !== READY) continue; // skipped meanwhile, by a finish this loop caused
      this.#states.unready(r);
      this.#skipRegion(r);
    }
  }

  /** A region of skipped subtasks: finished at once (never deployed, no slot, no partition registered). */
  #skipRegion(region: number): void {
    const members = this.#options.regions.membersOf(region);
    this.#states.set(region, RUNNING);
    this.#states.remaining[region] = members.length;
    this.#states.active[region] = members.length;
    for (const v of Array.from(members)) {
      if (this.#state !== 'running') return;
      this.#finishTask(v, { attemptId: this.#attempts.attemptIdOf(v), durationMs: 0, metrics: { recordsIn: 0, outputs: [] }, sinks: [] });
    }
  }

  /** An approximate job's single-task recoveries so far (undefined for other jobs). */
  approximateRecoveries(): ApproximateRecoveryRecord[] | undefined {
    return this.#approximate?.records();
  }

  /** Each failover: when its failed task, and when all its restarted tasks, read again (FailoverResumes). */
  failoverResumes(): FailoverResume[] {
    return this.#resumes.records();
  }

  /** Execution vertex `v`'s current, restarted attempt `attemptId` read its first record at `atMs` (its executor's wall clock). */
  taskReading(v: number, attemptId: string, atMs: number): void {
    this.#resumes.reading(attemptId, atMs);
    this.#approximate?.resumed(v, atMs);
    this.#resumedWaiters.check();
  }

  /** The executor acknowledged a deployed attempt: it runs. */
  taskRunning(attemptId: string): void {
    this.#attempts.running.add(attemptId);
    this.#latencies.running(attemptId);
  }

  /** From each deployment handed to an executor to its task's `running` report (DeploymentLatencies). */
  deploymentLatency(): DeploymentLatencySummary {
    return this.#latencies.summary();
  }

  /**
   * Execution vertex `v`'s current attempt finished on `executor`: `task-finished` is emitted, and once
   * the listener took it the task counts as finished. Should its executor be lost, or the task reset, while
   * the listener stores it, the report no longer counts.
   */
  taskFinished(executor: TaskExecutorId, v: number, result: TaskResult): void {
    this.#attempts.running.delete(result.attemptId);
    const stored = this.#emit(taskFinishedEvent({ ...this.#options, v, attempt: this.#attempts.numberOf(v), result }));
    if (stored === true) {
      this.#finishTask(v, result);
      return;
    }
    const attempt = this.#attempts.numberOf(v);
    const settle = (ok: boolean): void => {
      if (this.#options.slots.isLost(executor) || this.#attempts.numberOf(v) !== attempt) return;
      if (ok) this.#finishTask(v, result);
      else this.#taskStopped(v); // unrecorded: not finished; the job is failing
    };
    if (stored === false) settle(false);
    else {
      const pending: Promise<unknown> = stored.then(settle).finally(() => this.#storing.delete(pending));
      this.#storing.add(pending);
    }
  }

  /** Execution vertex `v`'s current attempt failed: its region stops; the failure goes to RegionRestarts. */
  taskFailed(v: number, error: Error, metrics?: TaskMetrics): void {
    const attemptId = this.#attempts.attemptIdOf(v);
    this.#attempts.running.delete(attemptId);
    this.#approximate?.lost(v, attemptId, this.#attempts.numberOf(v), metrics, this.#state === 'running');
    this.#placedOn[v] = undefined;
    const region = this.#regionOf(v);
    this.#states.active[region] = (this.#states.active[region] as number) - 1;
    this.#onFailure(v, error);
    this.#afterTerminal(region);
  }

  /** A task failed: to RegionRestarts — unless its error says the run is fenced (a commit refused): then the job fails, nothing restarts. */
  #onFailure(v: number, error: Error): void {
    const fence = this.#options.fence;
    if (fence?.observe(error) === true) this.failJob(fence.error as EngineError);
    else this.#restarts.onFailure(v, error);
  }

  /**
   * Execution vertex `v`'s current attempt confirmed its cancellation. One this job master did not ask
   * for (its region is not cancelling: a task executor that drained past its timeout cancelled what still
   * ran) is a failure, failed over like a task of a lost executor — never a task quietly stopped.
   */
  taskCancelled(v: number, metrics?: TaskMetrics): void {
    if (metrics !== undefined) this.#approximate?.stopped(this.#attempts.attemptIdOf(v), metrics);
    const region = this.#regionOf(v);
    if (this.#states.stateOf(region) !== CANCELLING) {
      const id = this.#options.topology.executionVertexId(v);
      this.taskFailed(v, new EngineError('WEFT_ERR_TASK_CANCELLED', `task ${id} was cancelled by its task executor, not by the job master (an executor that drains past its timeout cancels what still runs): it fails over`, { context: { executionVertexId: id } }));
      return;
    }
    this.#attempts.running.delete(this.#attempts.attemptIdOf(v));
    this.#taskStopped(v);
  }

  /**
   * `executor` is gone (the job master removed it from its registry): every task it ran fails with
   * `lost`. A region spread over other executors too keeps its tasks there until its restart (or the
   * job's failure) cancels them; it gives its slots back once they all stopped.
   */
  executorLost(executor: TaskExecutor, lost: EngineError): void {
    const { regions } = this.#options;
    for (const r of this.#states.activeOn(executor)) {
      const members = Array.from(regions.membersOf(r));
      const gone = members.filter((v) => this.#placedOn[v] === executor);
      if (gone.length === 0) continue;
      const failed = gone.find((v) => !this.#attempts.isDone(v)) ?? members.find((v) => !this.#attempts.isDone(v));
      // an approximate job: each lost task opens a recovery, with the counters its executor last reported
      const lastReported = this.#approximate === undefined ? undefined : new Map(executor.progress().map((p) => [p.attemptId, p.metrics]));
      for (const v of gone) {
        this.#placedOn[v] = undefined;
        const attemptId = this.#attempts.attemptIdOf(v);
        this.#attempts.running.delete(attemptId);
        if (lastReported !== undefined && !this.#attempts.isDone(v)) this.#approximate?.lost(v, attemptId, this.#attempts.numberOf(v), lastReported.get(attemptId), this.#state === 'running');
      }
      this.#states.active[r] = (this.#states.active[r] as number) - gone.length;
      if (this.#states.active[r] === 0) this.#states.releaseSlot(r); // gives nothing to the lost executor
      if (failed !== undefined) this.#restarts.onFailure(failed, lost);
      this.#afterTerminal(r);
    }
  }

  /** Fails the job from outside (the caller's AbortSignal): it ends with `job-cancelled`. */
  abort(reason: unknown): void {
    if (this.#state !== 'running') return;
    const error = reason instanceof Error ? reason : new Error(String(reason));
    this.#aborted = true;
    this.failJob(new EngineError('WEFT_ERR_JOB_FAILED', `job ${this.#options.plan.name} was aborted: ${error.message}`, { cause: error }));
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
      if (state === RUNNING || state === DEPLOYING) this.#cancelRegion(r, 'the job failed');
    }
    this.#maybeSettleFailure();
  }

  async #deploy(region: number, placement: RegionPlacement): Promise<void> {
    const states = this.#states;
    this.#markDeploying(region, placement);
    const version = states.version[region];
    const prepared = await this.#deployer.prepare(region, placement, () => states.version[region] === version && states.stateOf(region) === DEPLOYING);
    if (prepared.kind === 'stale') return;
    if (prepared.kind === 'failed') {
      if (states.version[region] === version) this.#deployFailed(region, prepared.error);
      return;
    }
    const { deployment } = prepared;
    this.#markRunning(region, deployment, placement);
    this.#latencies.deployed(deployment.tasks.map((t) => t.attemptId));
    this.#placements.deployed(placement);
    handOut(deployment, placement);
    announceApproximate(deployment, this.#options.slots.live);
  }

  /** The region is being deployed to its placement, taking its slots; each task is placed on its executor. */
  #markDeploying(region: number, placement: RegionPlacement): void {
    const members = this.#options.regions.membersOf(region);
    this.#states.deploying(region, placement.slots, members.length);
    for (let i = 0; i < members.length; i++) this.#placedOn[members[i] as number] = placement.executorOfMember[i];
  }

  /** The region's deployment is handed to its executors: a `task-deployed` per task; its blocking outputs are being produced. */
  #markRunning(region: number, deployment: RegionDeployment, placement: RegionPlacement): void {
    const { topology, regions } = this.#options;
    this.#states.set(region, RUNNING);
    this.#attempts.markDeployed(regions.membersOf(region));
    for (const task of deployment.tasks) for (const output of task.outputs) if (!output.pipelined) this.#partitions.markDeployed(topology.indexOfResultPartition(output.partition.partitionId));
    deployment.tasks.forEach((task, i) => {
      const executor = (placement.executorOfMember[i] as TaskExecutor).id;
      this.#emit({ type: 'task-deployed', data: { executionVertexId: task.executionVertexId, attempt: task.attempt, executor } });
    });
  }

  /** The region's tasks stopped all at once (its deployment failed or was cancelled before it was handed over). */
  #unplace(region: number): void {
    for (const v of Array.from(this.#options.regions.membersOf(region))) this.#placedOn[v] = undefined;
  }

  /** Building the region's deployment failed (e.g. registering a partition): it fails as its first task. */
  #deployFailed(region: number, error: Error): void {
    const states = this.#states;
    states.active[region] = 0;
    this.#unplace(region);
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
      this.#markRegionFinished(region);
      if (states.finished === states.count && this.#state === 'running') {
        void this.#publishSinks();
        return;
      }
    }
    this.schedule();
  }

  /** Every task of the region finished: it gives its slot back; partition groups it was the last reader of are released. */
  #markRegionFinished(region: number): void {
    const states = this.#states;
    states.set(region, FINISHED);
    states.finished++;
    states.releaseSlot(region);
    const released = this.#releases.regionFinished(region);
    for (const p of released) this.#partitions.markReleased(p);
    if (released.length > 0) this.#emit({ type: 'partitions-released', data: { partitionIds: released.map((p) => this.#options.topology.resultPartitionId(p)) } });
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

  #cancelRegion(r: number, reason: string): void {
    const states = this.#states;
    const state = states.stateOf(r);
    if (state === READY) states.unready(r);
    if (state === RUNNING || state === DEPLOYING) {
      states.set(r, CANCELLING);
      states.version[r] = (states.version[r] as number) + 1;
      const members = Array.from(this.#options.regions.membersOf(r));
      const executors = states.executorsOf(r).filter((e) => !this.#options.slots.isLost(e.id));
      const attemptIds = members.filter((v) => !this.#attempts.isDone(v)).map((v) => this.#attempts.attemptIdOf(v));
      if (state === RUNNING && executors.length > 0 && attemptIds.length > 0) {
        // every executor of the region is sent every attempt id: each cancels those it runs
        for (const executor of executors) executor.cancel(attemptIds, reason);
        this.#cancelTimeouts.arm(r, executors, (executor) => (states.active[r] as number) > 0 && members.some((v) => this.#placedOn[v] === executor));
      }
      if (state === DEPLOYING) {
        states.active[r] = 0;
        this.#unplace(r);
      }
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

  /** The tasks of `regions` get new attempts (`tasks-reset`); their blocking partitions are released. Returns those partitions. */
  #resetTasks(regions: readonly number[], reason: string): number[] {
    const { topology } = this.#options;
    const vertices = regions.flatMap((r) => Array.from(this.#options.regions.membersOf(r))).sort((a, b) => a - b);
    const outputs: number[] = [];
    for (const v of vertices) {
      this.#attempts.reset(v);
      for (const partition of blockingOutputsOf(topology, v)) {
        outputs.push(partition);
        this.#partitions.markReset(partition);
      }
    }
    // skipped subtasks are reset with their regions (they finish again at once) but were never logged: not named
    this.#emit({ type: 'tasks-reset', data: { tasks: vertices.filter((v) => !this.#decisions.isSkipped(v)).map((v) => topology.executionVertexId(v)), reason } });
    return outputs;
  }

  /** Reset regions wait for their inputs again (a finished input whose producer is still restarting is not done). */
  #rescheduled(restarted: readonly number[]): void {
    this.#states.waitAgain(restarted, (p) => this.#partitions.isDone(p) && !this.#restarts.isRestarting(this.#producerRegionOf(p)));
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
    const edge = this.#options.topology.edgeOfPartition(p);
    return this.#options.regions.regionOf[edge.source.firstExecutionVertex + p - edge.firstPartition] as number;
  }
}
