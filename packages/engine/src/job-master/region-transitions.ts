import type { ExecutionTopology } from '../execution/execution-topology.js';
import type { TaskExecutor } from '../executor/task-executor.js';
import type { PipelinedRegions } from '../regions/pipelined-regions.js';
import type { RegionDeployment } from '../runtime/task-deployment.js';
import type { AdaptiveDecisions } from './adaptive-decisions.js';
import type { CancelTimeouts } from './cancel-timeouts.js';
import type { ExecutorSlots } from './executor-slots.js';
import type { JobEventEmitter } from './job-event-emitter.js';
import type { PartitionReleases } from './partition-releases.js';
import { blockingOutputsOf, type PartitionStates } from './partition-states.js';
import type { RegionPlacement } from './region-placement.js';
import { RegionState, type RegionStates } from './region-states.js';
import type { TaskAttempts } from './task-attempts.js';

const { READY, DEPLOYING, RUNNING, FINISHED, CANCELLING } = RegionState;

export interface RegionTransitionsOptions {
  readonly topology: ExecutionTopology;
  readonly regions: PipelinedRegions;
  /** The executors regions are placed on: a cancellation is sent only to those not lost. */
  readonly slots: ExecutorSlots;
  readonly states: RegionStates;
  readonly attempts: TaskAttempts;
  readonly partitions: PartitionStates;
  readonly releases: PartitionReleases;
  readonly decisions: AdaptiveDecisions;
  readonly cancelTimeouts: CancelTimeouts;
  /**
   * The executor each execution vertex's current attempt was deployed to, until it stopped: shared with
   * the scheduler, which clears a task's entry when the task stops.
   */
  readonly placedOn: (TaskExecutor | undefined)[];
  readonly events: JobEventEmitter;
}

/**
 * The region-level transitions of one job's scheduler (JobScheduler decides when each happens): a region
 * deploying, running, finished, cancelled, its tasks reset. Each writes where the region, its tasks and
 * their partitions stand (RegionStates, TaskAttempts, PartitionStates) and emits its JobEvent as it
 * happens; none decides what comes next (scheduling, restarts, the job's end are the scheduler's).
 */
export class RegionTransitions {
  readonly #options: RegionTransitionsOptions;

  constructor(options: RegionTransitionsOptions) {
    this.#options = options;
  }

  /** The region is being deployed to its placement, taking its slots; each task is placed on its executor. */
  markDeploying(region: number, placement: RegionPlacement): void {
    const members = this.#options.regions.membersOf(region);
    this.#options.states.deploying(region, placement.slots, members.length);
    for (let i = 0; i < members.length; i++) this.#options.placedOn[members[i] as number] = placement.executorOfMember[i];
  }

  /** The region's deployment is handed to its executors: a `task-deployed` per task; its blocking (and lost approximate) outputs are being produced. */
  markRunning(region: number, deployment: RegionDeployment, placement: RegionPlacement): void {
    const { topology, regions } = this.#options;
    this.#options.states.set(region, RUNNING);
    this.#options.attempts.markDeployed(regions.membersOf(region));
    // (a pipelined partition is never released, an approximate one only when lost with its executor)
    for (const task of deployment.tasks) for (const output of task.outputs) this.#options.partitions.markDeployed(topology.indexOfResultPartition(output.partition.partitionId));
    deployment.tasks.forEach((task, i) => {
      const executor = (placement.executorOfMember[i] as TaskExecutor).id;
      this.#options.events.emit({ type: 'task-deployed', data: { executionVertexId: task.executionVertexId, attempt: task.attempt, executor } });
    });
  }

  /** The region's tasks stopped all at once (its deployment failed or was cancelled before it was handed over). */
  unplace(region: number): void {
    for (const v of Array.from(this.#options.regions.membersOf(region))) this.#options.placedOn[v] = undefined;
  }

  /** Every task of the region finished: it gives its slot back; partition groups it was the last reader of are released. */
  markRegionFinished(region: number): void {
    const states = this.#options.states;
    states.set(region, FINISHED);
    states.finished++;
    states.releaseSlot(region);
    const released = this.#options.releases.regionFinished(region);
    for (const p of released) this.#options.partitions.markReleased(p);
    if (released.length > 0) this.#options.events.emit({ type: 'partitions-released', data: { partitionIds: released.map((p) => this.#options.topology.resultPartitionId(p)) } });
  }

  cancelRegion(r: number, reason: string): void {
    const { states, attempts, placedOn } = this.#options;
    const state = states.stateOf(r);
    if (state === READY) states.unready(r);
    if (state === RUNNING || state === DEPLOYING) {
      states.set(r, CANCELLING);
      states.version[r] = (states.version[r] as number) + 1;
      const members = Array.from(this.#options.regions.membersOf(r));
      const executors = states.executorsOf(r).filter((e) => !this.#options.slots.isLost(e.id));
      // an attempt that stopped already (its failure, or its end, reported: no longer placed) has nothing to cancel
      const attemptIds = members.filter((v) => !attempts.isDone(v) && placedOn[v] !== undefined).map((v) => attempts.attemptIdOf(v));
      if (state === RUNNING && executors.length > 0 && attemptIds.length > 0) {
        // every executor of the region is sent every attempt id: each cancels those it runs
        for (const executor of executors) executor.cancel(attemptIds, reason);
        this.#options.cancelTimeouts.arm(r, executors, (executor) => (states.active[r] as number) > 0 && members.some((v) => placedOn[v] === executor));
      }
      if (state === DEPLOYING) {
        states.active[r] = 0;
        this.unplace(r);
      }
      if (states.active[r] === 0) states.releaseSlot(r);
    } else if (state !== CANCELLING) {
      // A finished region runs again: it no longer counts as finished (nor for releases).
      if (state === FINISHED) {
        states.finished--;
        this.#options.releases.regionUnfinished(r);
      }
      states.set(r, CANCELLING);
    }
  }

  /** The tasks of `regions` get new attempts (`tasks-reset`); their blocking partitions are released. Returns those partitions. */
  resetTasks(regions: readonly number[], reason: string): number[] {
    const { topology } = this.#options;
    const vertices = regions.flatMap((r) => Array.from(this.#options.regions.membersOf(r))).sort((a, b) => a - b);
    const outputs: number[] = [];
    for (const v of vertices) {
      this.#options.attempts.reset(v);
      for (const partition of blockingOutputsOf(topology, v)) {
        outputs.push(partition);
        this.#options.partitions.markReset(partition);
      }
    }
    // skipped subtasks are reset with their regions (they finish again at once) but were never logged: not named
    this.#options.events.emit({ type: 'tasks-reset', data: { tasks: vertices.filter((v) => !this.#options.decisions.isSkipped(v)).map((v) => topology.executionVertexId(v)), reason } });
    return outputs;
  }
}
