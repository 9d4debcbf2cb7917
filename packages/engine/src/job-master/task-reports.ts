import type { TaskExecutorId } from '@weft/shuffle-api';
import { EngineError } from '../errors/engine-error.js';
import type { ExecutionTopology } from '../execution/execution-topology.js';
import type { TaskExecutor } from '../executor/task-executor.js';
import type { JobPlan } from '../graph/job-plan.js';
import type { PipelinedRegions } from '../regions/pipelined-regions.js';
import type { TaskMetrics } from '../runtime/task-deployment.js';
import type { TaskResult } from '../runtime/task-events.js';
import type { ApproximateRecoveries } from './approximate-recoveries.js';
import type { ConditionWaiters } from './condition-waiters.js';
import type { DeploymentLatencies } from './deployment-latencies.js';
import type { ExecutorSlots } from './executor-slots.js';
import type { FailoverResumes } from './failover-resumes.js';
import type { JobEventEmitter } from './job-event-emitter.js';
import type { RegionRestarts } from './region-restarts.js';
import { RegionState, type RegionStates } from './region-states.js';
import type { TaskAttempts } from './task-attempts.js';
import { taskFinishedEvent } from './task-finished-event.js';

const { CANCELLING } = RegionState;

/** What the task reports need of their job scheduler: the transitions a stopped task leads to. */
export interface TaskReportsHost {
  /** Whether the job runs: a task lost while it does opens an approximate job's recovery. */
  isRunning(): boolean;
  /** Execution vertex `v`'s current attempt counts as finished. */
  finishTask(v: number, result: TaskResult): void;
  /** Task `v` stopped without finishing (cancelled, or its finish was not recorded). */
  taskStopped(v: number): void;
  /** A task failed: to RegionRestarts, unless its error says the run is fenced. */
  onFailure(v: number, error: Error): void;
  /** A task of `region` stopped: the region, and the job, move on. */
  afterTerminal(region: number): void;
}

export interface TaskReportsOptions {
  readonly plan: JobPlan;
  readonly topology: ExecutionTopology;
  readonly regions: PipelinedRegions;
  /** The job master's registry: a finished report from an executor lost meanwhile no longer counts. */
  readonly slots: ExecutorSlots;
  readonly states: RegionStates;
  readonly attempts: TaskAttempts;
  /** Where a lost executor's tasks fail to. */
  readonly restarts: RegionRestarts;
  readonly events: JobEventEmitter;
  readonly latencies: DeploymentLatencies;
  readonly resumes: FailoverResumes;
  /** Checked when a restarted task reads again (JobScheduler.whenRestartsResumed). */
  readonly resumedWaiters: ConditionWaiters;
  /** An approximate job's single-task recoveries; undefined otherwise. */
  readonly approximate: ApproximateRecoveries | undefined;
  /** The executor each execution vertex's current attempt was deployed to, until it stopped (shared with the scheduler). */
  readonly placedOn: (TaskExecutor | undefined)[];
  readonly host: TaskReportsHost;
}

/**
 * What the executors report of one job's task attempts — `running`, `reading` again, `finished`,
 * `failed`, `cancelled` — and the loss of an executor, each turned into its task's transition (the
 * JobScheduler hands them here). A `task-finished` counts only once the event listener took it (a
 * promise: once it resolved); should the task's executor be lost, or the task reset, meanwhile, the
 * report no longer counts.
 */
export class TaskReports {
  readonly #options: TaskReportsOptions;
  /** Finished reports whose event the listener is still storing. */
  readonly #storing = new Set<Promise<unknown>>();

  constructor(options: TaskReportsOptions) {
    this.#options = options;
  }

  /** Resolves once every finished report received so far counted or not (its event stored or refused). */
  async finishesSettled(): Promise<void> {
    while (this.#storing.size > 0) await Promise.allSettled([...this.#storing]);
  }

  /** Execution vertex `v`'s current, restarted attempt `attemptId` read its first record at `atMs` (its executor's wall clock). */
  taskReading(v: number, attemptId: string, atMs: number): void {
    this.#options.resumes.reading(attemptId, atMs);
    this.#options.approximate?.resumed(v, atMs);
    this.#options.resumedWaiters.check();
  }

  /** The executor acknowledged a deployed attempt: it runs. */
  taskRunning(attemptId: string): void {
    this.#options.attempts.running.add(attemptId);
    this.#options.latencies.running(attemptId);
  }

  /**
   * Execution vertex `v`'s current attempt finished on `executor`: `task-finished` is emitted, and once
   * the listener took it the task counts as finished. Should its executor be lost, or the task reset, while
   * the listener stores it, the report no longer counts.
   */
  taskFinished(executor: TaskExecutorId, v: number, result: TaskResult): void {
    const { plan, topology, attempts, host } = this.#options;
    attempts.running.delete(result.attemptId);
    const stored = this.#options.events.emit(taskFinishedEvent({ plan, topology, v, attempt: attempts.numberOf(v), result }));
    if (stored === true) {
      host.finishTask(v, result);
      return;
    }
    const attempt = attempts.numberOf(v);
    const settle = (ok: boolean): void => {
      if (this.#options.slots.isLost(executor) || attempts.numberOf(v) !== attempt) return;
      if (ok) host.finishTask(v, result);
      else host.taskStopped(v); // unrecorded: not finished; the job is failing
    };
    if (stored === false) settle(false);
    else {
      const pending: Promise<unknown> = stored.then(settle).finally(() => this.#storing.delete(pending));
      this.#storing.add(pending);
    }
  }

  /** Execution vertex `v`'s current attempt failed: its region stops; the failure goes to RegionRestarts. */
  taskFailed(v: number, error: Error, metrics?: TaskMetrics): void {
    const { attempts, states, host } = this.#options;
    const attemptId = attempts.attemptIdOf(v);
    attempts.running.delete(attemptId);
    this.#options.approximate?.lost(v, attemptId, attempts.numberOf(v), metrics, host.isRunning());
    this.#options.placedOn[v] = undefined;
    const region = this.#regionOf(v);
    states.active[region] = (states.active[region] as number) - 1;
    host.onFailure(v, error);
    host.afterTerminal(region);
  }

  /**
   * Execution vertex `v`'s current attempt confirmed its cancellation. One this job master did not ask
   * for (its region is not cancelling: a task executor that drained past its timeout cancelled what still
   * ran) is a failure, failed over like a task of a lost executor — never a task quietly stopped.
   */
  taskCancelled(v: number, metrics?: TaskMetrics): void {
    const { attempts } = this.#options;
    if (metrics !== undefined) this.#options.approximate?.stopped(attempts.attemptIdOf(v), metrics);
    const region = this.#regionOf(v);
    if (this.#options.states.stateOf(region) !== CANCELLING) {
      const id = this.#options.topology.executionVertexId(v);
      this.taskFailed(v, new EngineError('WEFT_ERR_TASK_CANCELLED', `task ${id} was cancelled by its task executor, not by the job master (an executor that drains past its timeout cancels what still runs): it fails over`, { context: { executionVertexId: id } }));
      return;
    }
    attempts.running.delete(attempts.attemptIdOf(v));
    this.#options.host.taskStopped(v);
  }

  /**
   * `executor` is gone (the job master removed it from its registry): every task it ran fails with
   * `lost`. A region spread over other executors too keeps its tasks there until its restart (or the
   * job's failure) cancels them; it gives its slots back once they all stopped.
   */
  executorLost(executor: TaskExecutor, lost: EngineError): void {
    const { regions, states, attempts, approximate, placedOn, host } = this.#options;
    for (const r of states.activeOn(executor)) {
      const members = Array.from(regions.membersOf(r));
      const gone = members.filter((v) => placedOn[v] === executor);
      if (gone.length === 0) continue;
      const failed = gone.find((v) => !attempts.isDone(v)) ?? members.find((v) => !attempts.isDone(v));
      // an approximate job: each lost task opens a recovery, with the counters its executor last reported
      const lastReported = approximate === undefined ? undefined : new Map(executor.progress().map((p) => [p.attemptId, p.metrics]));
      for (const v of gone) {
        placedOn[v] = undefined;
        const attemptId = attempts.attemptIdOf(v);
        attempts.running.delete(attemptId);
        if (lastReported !== undefined && !attempts.isDone(v)) approximate?.lost(v, attemptId, attempts.numberOf(v), lastReported.get(attemptId), host.isRunning());
      }
      states.active[r] = (states.active[r] as number) - gone.length;
      if (states.active[r] === 0) states.releaseSlot(r); // gives nothing to the lost executor
      if (failed !== undefined) this.#options.restarts.onFailure(failed, lost);
      host.afterTerminal(r);
    }
  }

  #regionOf(v: number): number {
    return this.#options.regions.regionOf[v] as number;
  }
}
