import type { Logger, ShuffleMaster } from '@weft/shuffle-api';
import type { ExecutionTopology } from '../execution/execution-topology.js';
import type { JobPlan } from '../graph/job-plan.js';
import type { PipelinedRegions } from '../regions/pipelined-regions.js';
import type { DeploymentBuilder } from './deployment-builder.js';
import { PartitionGroupReleaseStrategy } from './partition-group-release-strategy.js';
import type { PartitionStates } from './partition-states.js';
import type { TaskAttempts } from './task-attempts.js';

export interface PartitionReleasesOptions {
  readonly plan: JobPlan;
  readonly topology: ExecutionTopology;
  readonly regions: PipelinedRegions;
  readonly blockingMaster: ShuffleMaster;
  /** Read only: which partitions are done (the scheduler writes them). */
  readonly partitions: PartitionStates;
  readonly builder: DeploymentBuilder;
  readonly attempts: TaskAttempts;
  readonly logger: Logger;
  /** Off: nothing is released before the job ends (`unregisterJob` releases it all). */
  readonly enabled: boolean;
}

/**
 * Releases partitions while the job runs (Flink's `jobmanager.partition.release-during-job-execution`):
 * when a region finishes, the partition groups PartitionGroupReleaseStrategy finds fully consumed are
 * released through the blocking ShuffleMaster. The scheduler marks each released partition released in
 * PartitionStates (it alone writes them) — from then on it is unavailable to the failover strategy,
 * exactly as the partitions a restart gives up, so a later failover that needs it re-runs its producer —
 * and its descriptor is taken from the DeploymentBuilder (a restart of its producer does not release it
 * twice).
 *
 * Releases are not awaited by the scheduler: a failed one is logged (`warn`) and the job goes on (the
 * job's end releases everything again). They cannot race a reader: a group is released only when every
 * region reading it has finished, and a region that reads it again is restarted first, with the
 * producer. Nor a writer: `settled(partitions)` is awaited before a restarted producer is rescheduled,
 * so the release of an old attempt never lands on the new one; `settled()` before the job's end.
 */
export class PartitionReleases {
  readonly #options: PartitionReleasesOptions;
  readonly #strategy: PartitionGroupReleaseStrategy | undefined;
  /** Plan edge index of each topology edge (task metrics count bytes by plan edge). */
  readonly #planEdgeIndex: Int32Array;
  readonly #inFlight = new Map<number, Promise<void>>();
  #released = 0;
  #bytes = 0;

  constructor(options: PartitionReleasesOptions) {
    this.#options = options;
    const { topology, regions, plan } = options;
    this.#strategy = options.enabled ? new PartitionGroupReleaseStrategy(topology, regions) : undefined;
    const planIndex = new Map(plan.edges.map((e) => [e.id, e.index]));
    this.#planEdgeIndex = Int32Array.from(topology.edges, (e) => planIndex.get(e.id) ?? -1);
  }

  /** Partitions released during the job so far. */
  get released(): number {
    return this.#released;
  }

  /** Bytes their producers wrote to them (framed records, before compression), as their task results report. */
  get bytesReleased(): number {
    return this.#bytes;
  }

  /**
   * Region `region` finished: releases the partition groups it was the last consumer region of, and
   * returns the partitions whose release began (done ones with a descriptor), for the scheduler to mark
   * released in PartitionStates.
   */
  regionFinished(region: number): number[] {
    if (this.#strategy === undefined) return [];
    const released: number[] = [];
    for (const group of this.#strategy.regionFinished(region)) for (const p of group) if (this.#release(p)) released.push(p);
    return released;
  }

  /** A finished region `region` is restarted: the groups it reads are not releasable until it finishes again. */
  regionUnfinished(region: number): void {
    this.#strategy?.regionUnfinished(region);
  }

  /** Resolves once the releases in flight of `partitions` (all of them when omitted) settled. */
  async settled(partitions?: Iterable<number>): Promise<void> {
    if (this.#inFlight.size === 0) return;
    if (partitions === undefined) {
      await Promise.all(this.#inFlight.values());
      return;
    }
    const waits: Promise<void>[] = [];
    for (const p of partitions) {
      const release = this.#inFlight.get(p);
      if (release !== undefined) waits.push(release);
    }
    await Promise.all(waits);
  }

  #release(p: number): boolean {
    const { partitions, builder, blockingMaster, logger } = this.#options;
    if (!partitions.isDone(p)) return false;
    const descriptor = builder.takeDescriptor(p);
    if (descriptor === undefined) return false;
    this.#released++;
    this.#bytes += this.#bytesOf(p);
    const partitionId = descriptor.partition.partitionId;
    logger.debug({ partitionId, attempt: descriptor.producer.attempt }, 'done -> released (its consumers finished)');
    const release: Promise<void> = blockingMaster
      .releasePartitionExternally(descriptor)
      .catch((error: unknown) => logger.warn({ partitionId, error: (error as Error).message }, 'releasing a consumed partition failed'))
      .finally(() => {
        if (this.#inFlight.get(p) === release) this.#inFlight.delete(p);
      });
    this.#inFlight.set(p, release);
    return true;
  }

  #bytesOf(p: number): number {
    const { topology, attempts } = this.#options;
    const edge = topology.edgeOfPartition(p);
    const result = attempts.results[topology.producerOfPartition(p)];
    const planEdge = this.#planEdgeIndex[edge.index];
    return result?.metrics.outputs.find((o) => o.edgeIndex === planEdge)?.bytes ?? 0;
  }
}
