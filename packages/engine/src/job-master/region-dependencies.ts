import type { ExecutionJobEdge, ExecutionTopology } from '../execution/execution-topology.js';
import type { PipelinedRegions } from '../regions/pipelined-regions.js';

/**
 * Which result partitions each pipelined region must wait for — the non-pipelined partitions its tasks
 * read that are produced in other regions — and, inverted, which regions wait for each partition.
 * A region is schedulable when every partition it waits for is finished (docs/DESIGN.md: "a region starts
 * when all its blocking inputs are finished").
 */
export class RegionDependencies {
  /** Per region: the partition indexes (ExecutionTopology numbering) it waits for. */
  readonly inputsOf: readonly Int32Array[];
  readonly #consumerOffsets: Int32Array;
  readonly #consumers: Int32Array;

  constructor(topology: ExecutionTopology, regions: PipelinedRegions) {
    const stamp = new Int32Array(topology.partitionCount).fill(-1);
    const inputsOf: Int32Array[] = [];
    const counts = new Int32Array(topology.partitionCount);
    for (let r = 0; r < regions.regionCount; r++) {
      const list: number[] = [];
      for (const v of regions.membersOf(r)) {
        const vertex = topology.jobVertexOf(v);
        const subtask = v - vertex.firstExecutionVertex;
        for (const e of vertex.inputs) {
          const edge = topology.edges[e] as ExecutionJobEdge;
          // an approximate input is read while produced: its consumer is deployed with its producer
          if (edge.mustBePipelined || edge.approximate) continue;
          const range = topology.producersOf(edge, subtask);
          for (let k = range.start; k < range.end; k++) {
            const partition = edge.firstPartition + k;
            if (stamp[partition] === r) continue;
            if (regions.regionOf[edge.source.firstExecutionVertex + k] === r) continue;
            stamp[partition] = r;
            list.push(partition);
            counts[partition] = (counts[partition] as number) + 1;
          }
        }
      }
      inputsOf.push(Int32Array.from(list));
    }
    const offsets = new Int32Array(topology.partitionCount + 1);
    for (let p = 0; p < topology.partitionCount; p++) offsets[p + 1] = (offsets[p] as number) + (counts[p] as number);
    const fill = offsets.slice(0, topology.partitionCount);
    const consumers = new Int32Array(offsets[topology.partitionCount] as number);
    inputsOf.forEach((list, r) => {
      for (const p of list) {
        const at = fill[p] as number;
        consumers[at] = r;
        fill[p] = at + 1;
      }
    });
    this.inputsOf = inputsOf;
    this.#consumerOffsets = offsets;
    this.#consumers = consumers;
  }

  /** The regions waiting for partition `partition`. */
  consumersOf(partition: number): Int32Array {
    return this.#consumers.subarray(this.#consumerOffsets[partition], this.#consumerOffsets[partition + 1]);
  }
}
