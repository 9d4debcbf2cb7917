import { resultPartitionTypeProperties } from '@weft/shuffle-api';
import type { ExecutionJobEdge, ExecutionTopology } from '../execution/execution-topology.js';
import type { PipelinedRegions } from '../regions/pipelined-regions.js';

/**
 * Which result partitions may be released while the job runs: Flink's RegionPartitionGroupReleaseStrategy
 * (with its ConsumerRegionGroupExecutionView). The partitions of every edge the scheduler releases
 * (`releasedBy: 'scheduler'`: BLOCKING, BLOCKING_PERSISTENT, HYBRID_*) are grouped into consumed partition
 * groups, as Flink's EdgeManagerBuildUtil groups them:
 *
 * - ALL_TO_ALL: all partitions of the edge form one group, consumed by every consumer subtask;
 * - POINTWISE with S producers and T consumers (docs/DESIGN.md's expansion): S ≥ T, one group per consumer
 *   j — the producers it reads; S < T, one group per producer i — its partition alone, consumed by the
 *   consumers it feeds.
 *
 * A group's consumer regions are the pipelined regions of its consumer subtasks. When a region finishes,
 * each group it consumes whose consumer regions have all finished is releasable — unless its type is
 * persistent (BLOCKING_PERSISTENT outlives the job). A finished region that is restarted is unfinished
 * again: its groups are not releasable until it finishes once more. Every partition is in exactly one
 * group. Pure bookkeeping: what to release, and how, is the job master's.
 */
export class PartitionGroupReleaseStrategy {
  /** Per group: its partitions (ExecutionTopology numbering) and whether it may ever be released. */
  readonly #groups: { readonly partitions: Int32Array; readonly releasable: boolean }[] = [];
  /** Per group: consumer regions not finished. */
  readonly #unfinished: number[] = [];
  /** Per region: the groups it consumes. */
  readonly #groupsOf: number[][];
  readonly #finished: Uint8Array;

  constructor(topology: ExecutionTopology, regions: PipelinedRegions) {
    this.#groupsOf = Array.from({ length: regions.regionCount }, () => []);
    this.#finished = new Uint8Array(regions.regionCount);
    for (const edge of topology.edges) {
      const properties = resultPartitionTypeProperties(edge.partitionType);
      if (edge.mustBePipelined || properties.releasedBy !== 'scheduler') continue;
      const releasable = !properties.persistent;
      const S = edge.source.parallelism;
      const T = edge.target.parallelism;
      if (edge.distribution === 'ALL_TO_ALL') {
        this.#add(edge, { start: 0, end: S }, { start: 0, end: T }, releasable, regions);
      } else if (S >= T) {
        for (let j = 0; j < T; j++) this.#add(edge, topology.producersOf(edge, j), { start: j, end: j + 1 }, releasable, regions);
      } else {
        for (let i = 0; i < S; i++) this.#add(edge, { start: i, end: i + 1 }, topology.consumersOf(edge, i), releasable, regions);
      }
    }
  }

  /** Number of consumed partition groups. */
  get groupCount(): number {
    return this.#groups.length;
  }

  /**
   * Region `region` finished: the partitions of each group it consumes that became releasable (all its
   * consumer regions finished, not persistent), group by group. Idempotent for a region still finished.
   */
  regionFinished(region: number): Int32Array[] {
    if (this.#finished[region] === 1) return [];
    this.#finished[region] = 1;
    const releasable: Int32Array[] = [];
    for (const g of this.#groupsOf[region] as number[]) {
      const left = (this.#unfinished[g] as number) - 1;
      this.#unfinished[g] = left;
      const group = this.#groups[g] as { partitions: Int32Array; releasable: boolean };
      if (left === 0 && group.releasable) releasable.push(group.partitions);
    }
    return releasable;
  }

  /** Region `region` is restarted: it no longer counts as finished for the groups it consumes. */
  regionUnfinished(region: number): void {
    if (this.#finished[region] === 0) return;
    this.#finished[region] = 0;
    for (const g of this.#groupsOf[region] as number[]) this.#unfinished[g] = (this.#unfinished[g] as number) + 1;
  }

  #add(edge: ExecutionJobEdge, producers: { start: number; end: number }, consumers: { start: number; end: number }, releasable: boolean, regions: PipelinedRegions): void {
    const g = this.#groups.length;
    const partitions = new Int32Array(producers.end - producers.start);
    for (let k = producers.start; k < producers.end; k++) partitions[k - producers.start] = edge.firstPartition + k;
    this.#groups.push({ partitions, releasable });
    let consumerRegions = 0;
    for (let j = consumers.start; j < consumers.end; j++) {
      const r = regions.regionOf[edge.target.firstExecutionVertex + j] as number;
      const list = this.#groupsOf[r] as number[];
      if (list[list.length - 1] === g) continue; // the region has it already (only group g is added now)
      list.push(g);
      consumerRegions++;
    }
    this.#unfinished.push(consumerRegions);
  }
}
