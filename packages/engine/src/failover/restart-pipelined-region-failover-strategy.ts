import type { ExecutionJobEdge, ExecutionTopology } from '../execution/execution-topology.js';
import { buildPipelinedRegions, type PipelinedRegions } from '../regions/pipelined-regions.js';
import type { FailoverStrategy, FailoverStrategyOptions, PartitionAvailability, TaskFailure } from './failover-strategy.js';
import { requireLostPartitions } from './lost-partitions.js';

/**
 * Flink's RestartPipelinedRegionFailoverStrategy, as docs/DESIGN.md fixes it. The regions to restart are found
 * by a breadth-first walk from the failed task's region; for each region reached:
 *
 * - every input partition produced outside the walk that is not available adds its producer's region.
 *   PIPELINED, PIPELINED_BOUNDED and HYBRID_SELECTIVE partitions are never available (their data cannot be
 *   read again); BLOCKING, BLOCKING_PERSISTENT and HYBRID_FULL ones are, unless listed in
 *   `TaskFailure.lostPartitions` or refused by `isPartitionAvailable`; PIPELINED_APPROXIMATE ones are too
 *   (DESIGN.md, FLIP-135: the upstream is not restarted — a restarted consumer reconnects to it and reads
 *   on from its restored position or the next whole record), unless listed as lost or refused (a finished
 *   producer's, lost with its task executor);
 * - every consumer region of its outputs is added (they would read a partition being produced again).
 *
 * An ALL_TO_ALL edge is visited once per walk, not once per subtask, so a failure costs O(N + partitions).
 */
export class RestartPipelinedRegionFailoverStrategy implements FailoverStrategy {
  readonly name = 'region';
  readonly regions: PipelinedRegions;
  readonly #topology: ExecutionTopology;
  readonly #isPartitionAvailable: PartitionAvailability | undefined;

  constructor(topology: ExecutionTopology, options: FailoverStrategyOptions = {}) {
    this.#topology = topology;
    this.regions = options.regions ?? buildPipelinedRegions(topology);
    this.#isPartitionAvailable = options.isPartitionAvailable;
  }

  verticesToRestart(failure: TaskFailure): Int32Array {
    const topology = this.#topology;
    const failed = topology.requireExecutionVertex(failure.failedVertex, 'failedVertex');
    const lost = new Set(requireLostPartitions(topology, failure.lostPartitions));
    const { regionOf, regionCount } = this.regions;

    const visited = new Uint8Array(regionCount);
    const queue = new Int32Array(regionCount);
    let tail = 0;
    const visit = (region: number): void => {
      if (visited[region] === 1) return;
      visited[region] = 1;
      queue[tail++] = region;
    };
    // ALL_TO_ALL edges whose whole input side / output side was already walked.
    const inputWalked = new Uint8Array(topology.edges.length);
    const outputWalked = new Uint8Array(topology.edges.length);

    const checkInput = (edge: ExecutionJobEdge, producer: number): void => {
      if (!this.#isAvailable(edge, producer, lost)) visit(regionOf[edge.source.firstExecutionVertex + producer] as number);
    };

    visit(regionOf[failed] as number);
    for (let head = 0; head < tail; head++) {
      for (const v of this.regions.membersOf(queue[head] as number)) {
        const vertex = topology.jobVertexOf(v);
        const subtask = v - vertex.firstExecutionVertex;
        for (const e of vertex.inputs) {
          const edge = topology.edges[e] as ExecutionJobEdge;
          if (edge.distribution === 'ALL_TO_ALL') {
            if (inputWalked[e] === 1) continue;
            inputWalked[e] = 1;
            for (let i = 0; i < edge.source.parallelism; i++) checkInput(edge, i);
          } else {
            const range = topology.producersOf(edge, subtask);
            for (let i = range.start; i < range.end; i++) checkInput(edge, i);
          }
        }
        for (const e of vertex.outputs) {
          const edge = topology.edges[e] as ExecutionJobEdge;
          const first = edge.target.firstExecutionVertex;
          if (edge.distribution === 'ALL_TO_ALL') {
            if (outputWalked[e] === 1) continue;
            outputWalked[e] = 1;
            for (let j = 0; j < edge.target.parallelism; j++) visit(regionOf[first + j] as number);
          } else {
            const range = topology.consumersOf(edge, subtask);
            for (let j = range.start; j < range.end; j++) visit(regionOf[first + j] as number);
          }
        }
      }
    }

    let size = 0;
    for (let k = 0; k < tail; k++) size += this.regions.sizeOf(queue[k] as number);
    const out = new Int32Array(size);
    let n = 0;
    for (let k = 0; k < tail; k++) {
      out.set(this.regions.membersOf(queue[k] as number), n);
      n += this.regions.sizeOf(queue[k] as number);
    }
    return out.sort();
  }

  tasksToRestart(failure: TaskFailure): string[] {
    return Array.from(this.verticesToRestart(failure), (v) => this.#topology.executionVertexId(v));
  }

  #isAvailable(edge: ExecutionJobEdge, producer: number, lost: ReadonlySet<number>): boolean {
    const approximate = edge.partitionType === 'PIPELINED_APPROXIMATE';
    if (!edge.reconsumable && !approximate) return false;
    const partition = edge.firstPartition + producer;
    if (lost.has(partition)) return false;
    return this.#isPartitionAvailable === undefined || this.#isPartitionAvailable(`${edge.id}#${producer}`);
  }
}
