import type { ExecutionJobEdge, ExecutionTopology } from '../execution/execution-topology.js';

const PENDING = 0;
const DONE = 1;
const RELEASED = 2;

/**
 * Where each result partition of a job stands: pending (not produced yet, or being produced), done
 * (finished, readable), or released (produced once, then given up — when its producer was reset, or
 * during the job once every consumer region of its group finished — and its producer not deployed again
 * yet). A released partition is lost to its readers; a pending one is not — its producer is on it
 * (Flink's partition tracker sees the same: a released partition is no longer tracked).
 */
export class PartitionStates {
  readonly #state: Uint8Array;
  #released = 0;

  constructor(partitionCount: number) {
    this.#state = new Uint8Array(partitionCount);
  }

  isDone(p: number): boolean {
    return this.#state[p] === DONE;
  }

  isReleased(p: number): boolean {
    return this.#state[p] === RELEASED;
  }

  markDone(p: number): void {
    if (this.#state[p] === RELEASED) this.#released--;
    this.#state[p] = DONE;
  }

  /** Released during the job (its consumers all finished): a done partition is released. */
  markReleased(p: number): void {
    if (this.#state[p] !== DONE) return;
    this.#state[p] = RELEASED;
    this.#released++;
  }

  /**
   * A finished producer's partition was lost — a PIPELINED_APPROXIMATE one with its task executor, a
   * blocking one with the storage that held it (JobShuffleContext.partitionsLost): released, so a failover
   * whose walk meets it restarts its producer (an approximate one from the latest checkpoint) and names it lost.
   */
  markLost(p: number): void {
    if (this.#state[p] === RELEASED) return;
    this.#state[p] = RELEASED;
    this.#released++;
  }

  /** Its producer was reset: produced data is released; data never produced stays pending. */
  markReset(p: number): void {
    this.markReleased(p);
  }

  /** Its producer's new attempt was deployed: it is being produced again. */
  markDeployed(p: number): void {
    if (this.#state[p] !== RELEASED) return;
    this.#state[p] = PENDING;
    this.#released--;
  }

  /**
   * The released partitions (approximate ones: lost) that tasks of `vertices` read: those a failover walk found unavailable
   * (besides the ones its failure named). Free when nothing is released.
   */
  releasedInputsOf(topology: ExecutionTopology, vertices: Int32Array): string[] {
    if (this.#released === 0) return [];
    const found = new Set<number>();
    for (const v of vertices) {
      const vertex = topology.jobVertexOf(v);
      for (const e of vertex.inputs) {
        const edge = topology.edges[e] as ExecutionJobEdge;
        // (an approximate partition is released only when lost: markLost)
        if (edge.mustBePipelined) continue;
        const range = topology.producersOf(edge, v - vertex.firstExecutionVertex);
        for (let k = range.start; k < range.end; k++) if (this.#state[edge.firstPartition + k] === RELEASED) found.add(edge.firstPartition + k);
      }
    }
    return [...found].sort((a, b) => a - b).map((p) => topology.resultPartitionId(p));
  }
}

/** The non-pipelined (and not approximate) result partitions execution vertex `v` produces (ExecutionTopology numbering). */
export function blockingOutputsOf(topology: ExecutionTopology, v: number): number[] {
  return outputsOf(topology, v, (edge) => !edge.mustBePipelined && !edge.approximate);
}

/** The PIPELINED_APPROXIMATE result partitions execution vertex `v` produces (ExecutionTopology numbering). */
export function approximateOutputsOf(topology: ExecutionTopology, v: number): number[] {
  return outputsOf(topology, v, (edge) => edge.approximate);
}

/** The result partitions execution vertex `v` produces on the output edges `kept` keeps. */
function outputsOf(topology: ExecutionTopology, v: number, kept: (edge: ExecutionJobEdge) => boolean): number[] {
  const vertex = topology.jobVertexOf(v);
  const partitions: number[] = [];
  for (const e of vertex.outputs) {
    const edge = topology.edges[e] as ExecutionJobEdge;
    if (kept(edge)) partitions.push(edge.firstPartition + v - vertex.firstExecutionVertex);
  }
  return partitions;
}
