import type { Logger } from '@weft/shuffle-api';
import type { EngineError } from '../errors/engine-error.js';
import type { ExecutionTopology } from '../execution/execution-topology.js';
import type { FaultInjector } from '../faults/fault-injector.js';
import type { PipelinedRegions } from '../regions/pipelined-regions.js';
import type { TaskResult } from '../runtime/task-events.js';
import type { AdaptiveDecisions } from './adaptive-decisions.js';
import type { DeploymentBuilder } from './deployment-builder.js';
import type { DeploymentLatencies } from './deployment-latencies.js';
import type { ExecutorSlots } from './executor-slots.js';
import type { JobEventEmitter } from './job-event-emitter.js';
import type { PartitionStates } from './partition-states.js';
import type { PlacementCounts } from './placement-counts.js';
import type { RegionDependencies } from './region-dependencies.js';
import { announceApproximate, handOut, RegionDeployer } from './region-deployer.js';
import { ApproximatePlacement, hasNoBlockingEdgeInside, placeRegion, type RegionPlacement } from './region-placement.js';
import type { RegionRestarts } from './region-restarts.js';
import { RegionState, type RegionStates } from './region-states.js';
import type { RegionTransitions } from './region-transitions.js';
import { stalledJobError } from './stalled-job.js';
import type { TaskAttempts } from './task-attempts.js';

const { READY, DEPLOYING, RUNNING } = RegionState;

/** What the region scheduler needs of its job scheduler. */
export interface RegionSchedulerHost {
  /** Whether the job runs: only then are regions scheduled. */
  isRunning(): boolean;
  failJob(error: EngineError): void;
  /** Execution vertex `v`'s current attempt finished (a skipped subtask: at once, never deployed). */
  finishTask(v: number, result: TaskResult): void;
  /** Building the region's deployment failed (e.g. registering a partition): it fails as its first task. */
  deployFailed(region: number, error: Error): void;
}

export interface RegionSchedulerOptions {
  readonly topology: ExecutionTopology;
  readonly regions: PipelinedRegions;
  /** The executors regions are placed on, with their free slots. */
  readonly slots: ExecutorSlots;
  readonly faults?: FaultInjector | undefined;
  readonly logger: Logger;
  readonly dependencies: RegionDependencies;
  readonly states: RegionStates;
  readonly attempts: TaskAttempts;
  readonly partitions: PartitionStates;
  readonly decisions: AdaptiveDecisions;
  readonly builder: DeploymentBuilder;
  /** Read only: whether restarts are under way (a job waiting for one is not stalled). */
  readonly restarts: RegionRestarts;
  readonly transitions: RegionTransitions;
  readonly events: JobEventEmitter;
  /** Counted at each deployment handed to its executors. */
  readonly latencies: DeploymentLatencies;
  readonly placements: PlacementCounts;
  /** An approximate job (single-task recoveries): its regions go to executors that serve each other when the builder can spread them. */
  readonly approximate: boolean;
  readonly host: RegionSchedulerHost;
}

/**
 * Deploys one job's ready regions while executors have free slots (the scheduling half of its
 * JobScheduler): an adaptive job's ready vertices are decided first, regions made only of skipped subtasks
 * finish at once, every other ready region is placed (placeRegion: whole on the executor with the most
 * free slots, or spread over executors' free slots) and deployed — RegionDeployer prepares it, the
 * transitions around it are RegionTransitions'. A job left with nothing to run and nothing under way is
 * failed as stalled.
 */
export class RegionScheduler {
  readonly #options: RegionSchedulerOptions;
  readonly #logger: Logger;
  readonly #deployer: RegionDeployer;
  /** Per region: may it be spread over executors (undefined: not asked yet). */
  readonly #spreadable: (boolean | undefined)[];
  readonly #approximatePlacement: ApproximatePlacement;

  constructor(options: RegionSchedulerOptions) {
    this.#options = options;
    const { topology, regions, dependencies, builder, logger } = options;
    this.#logger = logger;
    this.#deployer = new RegionDeployer({ topology, dependencies, builder, faults: options.faults, logger });
    this.#spreadable = new Array<boolean | undefined>(regions.regionCount);
    this.#approximatePlacement = new ApproximatePlacement(options.approximate && builder.canSpread);
  }

  /** Deploys ready regions while executors have free slots; a job that can no longer go on fails (stalledJobError). */
  scheduleReady(): void {
    if (!this.#options.host.isRunning()) return;
    if (this.#options.decisions.any) this.#decideReady();
    const { regions, topology, slots } = this.#options;
    while (this.#options.states.hasReady) {
      const free = this.#approximatePlacement.free(slots.available());
      if (free.length === 0) return;
      const region = this.#options.states.nextReady() as number;
      const placement = placeRegion({ members: regions.membersOf(region), topology, free, spreadable: this.#canSpread(region) }) as RegionPlacement;
      void this.#deploy(region, placement);
    }
    const stalled = stalledJobError(this.#options.states, this.#options.restarts.anyUnderWay, this.#options.dependencies, this.#options.topology, (p) => this.#options.partitions.isDone(p));
    if (stalled !== undefined) this.#options.host.failJob(stalled);
  }

  #canSpread(region: number): boolean {
    if (!this.#options.builder.canSpread) return false;
    this.#spreadable[region] ??= hasNoBlockingEdgeInside(this.#options.topology, this.#options.regions, region);
    return this.#spreadable[region];
  }

  /**
   * An adaptive job: every ready region's vertex is decided first (its producers all finished: every edge
   * of an adaptive vertex is BLOCKING) — `vertex-initialized` with the decision is emitted before any of
   * its tasks deploys — and ready regions made only of skipped subtasks finish at once, without a slot.
   */
  #decideReady(): void {
    const { regions, states, decisions } = this.#options;
    const skip: number[] = [];
    for (const r of states.readyRegions()) {
      const members = regions.membersOf(r);
      for (const decision of decisions.decideVerticesOf(members, this.#options.attempts.results)) {
        this.#logger.info({ vertexId: decision.vertexId, parallelism: decision.parallelism, bytesIn: decision.bytesIn }, 'undecided -> decided');
        this.#options.events.emit({ type: 'vertex-initialized', data: decision });
      }
      if (Array.from(members).every((v) => decisions.isSkipped(v))) skip.push(r);
    }
    for (const r of skip) {
      if (states.stateOf(r) !== READY) continue; // skipped meanwhile, by a finish this loop caused
      states.unready(r);
      this.#skipRegion(r);
    }
  }

  /** A region of skipped subtasks: finished at once (never deployed, no slot, no partition registered). */
  #skipRegion(region: number): void {
    const { states, attempts, host } = this.#options;
    const members = this.#options.regions.membersOf(region);
    states.set(region, RUNNING);
    states.remaining[region] = members.length;
    states.active[region] = members.length;
    for (const v of Array.from(members)) {
      if (!host.isRunning()) return;
      host.finishTask(v, { attemptId: attempts.attemptIdOf(v), durationMs: 0, metrics: { recordsIn: 0, outputs: [] }, sinks: [] });
    }
  }

  async #deploy(region: number, placement: RegionPlacement): Promise<void> {
    const { states, transitions } = this.#options;
    transitions.markDeploying(region, placement);
    const version = states.version[region];
    const prepared = await this.#deployer.prepare(region, placement, () => states.version[region] === version && states.stateOf(region) === DEPLOYING);
    if (prepared.kind === 'stale') return;
    if (prepared.kind === 'failed') {
      if (states.version[region] === version) this.#options.host.deployFailed(region, prepared.error);
      return;
    }
    const { deployment } = prepared;
    transitions.markRunning(region, deployment, placement);
    this.#options.latencies.deployed(deployment.tasks.map((t) => t.attemptId));
    this.#options.placements.deployed(placement);
    handOut(deployment, placement);
    announceApproximate(deployment, this.#options.slots.live);
  }
}
