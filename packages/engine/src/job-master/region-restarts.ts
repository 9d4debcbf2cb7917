import type { Logger, ShuffleMaster } from '@weft/shuffle-api';
import type { EngineError } from '../errors/engine-error.js';
import type { ExecutionTopology } from '../execution/execution-topology.js';
import type { FailoverStrategy } from '../failover/failover-strategy.js';
import type { PipelinedRegions } from '../regions/pipelined-regions.js';
import type { RestartBackoffTimeStrategy } from '../restart/restart-backoff-time-strategy.js';
import type { DeploymentBuilder } from './deployment-builder.js';
import { decideFailover } from './failover-decision.js';
import type { FailoverRecord } from './failover-record.js';
import { blockingOutputsOf, type PartitionStates } from './partition-states.js';
import type { RegionStates } from './region-states.js';
import type { TaskAttempts } from './task-attempts.js';

/** What the restarts need of their job master. */
export interface RegionRestartsHost {
  /** Whether the job still runs: nothing restarts once it is failing or done. */
  isRunning(): boolean;
  failJob(error: EngineError): void;
  /** Cancels the region's tasks (or takes it out of the schedule when none runs). */
  cancelRegion(region: number, reason: string): void;
  /** The regions were reset: they wait for their inputs again and are scheduled. */
  rescheduled(regions: readonly number[]): void;
}

export interface RegionRestartsOptions {
  readonly jobName: string;
  readonly topology: ExecutionTopology;
  readonly regions: PipelinedRegions;
  readonly restart: RestartBackoffTimeStrategy;
  readonly failover: FailoverStrategy;
  /** Where the reset tasks' old partitions are released. */
  readonly blockingMaster: ShuffleMaster;
  readonly states: RegionStates;
  readonly attempts: TaskAttempts;
  readonly partitions: PartitionStates;
  readonly builder: DeploymentBuilder;
  readonly logger: Logger;
  /** Milliseconds since the job started. */
  readonly elapsedMs: () => number;
  readonly host: RegionRestartsHost;
}

/**
 * The failure path of a job master (Flink's DefaultScheduler restarting tasks): each task failure is
 * decided (decideFailover) — the job fails, or the regions of the tasks to restart are cancelled. Once
 * every task of every restarting region stopped, the restart strategy's backoff runs; then the regions'
 * tasks get new attempts, the partitions their old attempts produced are released (so a late commit of an
 * old attempt loses), and the job master reschedules them. A failure inside a region already restarting
 * is part of that restart. Each failover is recorded.
 */
export class RegionRestarts {
  /** Each failover, in order. */
  readonly failovers: FailoverRecord[] = [];
  readonly #options: RegionRestartsOptions;
  /** Regions cancelled for a restart, reset and rescheduled once all of their tasks stopped. */
  readonly #restarting = new Set<number>();
  #backoffTimer: ReturnType<typeof setTimeout> | undefined;
  #failures = 0;

  constructor(options: RegionRestartsOptions) {
    this.#options = options;
  }

  /** Task attempts that failed so far. */
  get failures(): number {
    return this.#failures;
  }

  isRestarting(region: number): boolean {
    return this.#restarting.has(region);
  }

  /** The one place failures go: restart (failover strategy + restart strategy) or fail the job. */
  onFailure(v: number, error: Error): void {
    const { topology, regions, host, logger } = this.#options;
    this.#failures++;
    const failedVertex = topology.executionVertexId(v);
    logger.info({ executionVertexId: failedVertex, attempt: this.#options.attempts.numberOf(v), error: error.message }, 'task failed');
    if (!host.isRunning() || this.#restarting.has(regions.regionOf[v] as number)) return;
    const decision = decideFailover({ ...this.#options, failed: v, error });
    if (!decision.restart) {
      host.failJob(decision.error);
      return;
    }
    this.failovers.push(decision.record);
    const restartRegions = new Set<number>();
    for (const u of decision.vertices) restartRegions.add(regions.regionOf[u] as number);
    logger.info({ executionVertexId: failedVertex, regions: [...restartRegions], tasks: decision.vertices.length, backoffMs: decision.record.backoffMs }, 'restarting regions');
    for (const r of restartRegions) {
      this.#restarting.add(r);
      host.cancelRegion(r, `region restarts after ${failedVertex} failed`);
    }
    this.maybeRestart();
  }

  /** Starts the backoff once the tasks of every restarting region stopped (called as tasks stop). */
  maybeRestart(): void {
    if (!this.#options.host.isRunning() || this.#restarting.size === 0 || this.#backoffTimer !== undefined) return;
    for (const r of this.#restarting) if ((this.#options.states.active[r] as number) > 0) return;
    const delay = this.#options.restart.getBackoffTimeMs();
    this.#backoffTimer = setTimeout(() => {
      this.#backoffTimer = undefined;
      void this.#resetRestartingRegions();
    }, delay);
  }

  /** Cancels a pending backoff (the job ends). */
  stop(): void {
    if (this.#backoffTimer !== undefined) clearTimeout(this.#backoffTimer);
    this.#backoffTimer = undefined;
  }

  async #resetRestartingRegions(): Promise<void> {
    const { topology, regions, blockingMaster, states, attempts, partitions, builder, host, logger } = this.#options;
    if (!host.isRunning()) return;
    const restarting = [...this.#restarting];
    // A region added to the restart after the backoff began may still have tasks stopping.
    if (restarting.some((r) => (states.active[r] as number) > 0)) return;
    const releases: Promise<void>[] = [];
    for (const r of restarting) {
      for (const v of regions.membersOf(r)) {
        attempts.reset(v);
        for (const partition of blockingOutputsOf(topology, v)) {
          partitions.markReset(partition);
          const old = builder.takeDescriptor(partition);
          if (old !== undefined) releases.push(blockingMaster.releasePartitionExternally(old).catch((error: unknown) => logger.warn({ partitionId: old.partition.partitionId, error: (error as Error).message }, 'releasing a restarted partition failed')));
        }
      }
    }
    await Promise.all(releases);
    if (!host.isRunning()) return;
    this.#restarting.clear();
    host.rescheduled(restarting);
  }
}
