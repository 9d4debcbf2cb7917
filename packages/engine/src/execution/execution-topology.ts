import {
  type DistributionPattern,
  type IndexRange,
  type ResultPartitionType,
  pointwiseConsumersOf,
  pointwiseProducersOf,
  resultPartitionTypeProperties,
} from '@weft/shuffle-api';
import { EngineError } from '../errors/engine-error.js';
import type { JobTopology } from '../topology/job-topology.js';
import { type ValidateTopologyOptions, validateTopology } from '../topology/validate-topology.js';

/** A job vertex inside an ExecutionTopology. */
export interface ExecutionJobVertex {
  readonly id: string;
  readonly parallelism: number;
  /** Index of this vertex in `ExecutionTopology.vertices`. */
  readonly index: number;
  /** Execution vertex index of subtask 0; subtask `i` is `firstExecutionVertex + i`. */
  readonly firstExecutionVertex: number;
  /** Indexes into `ExecutionTopology.edges` of the edges this vertex consumes. */
  readonly inputs: readonly number[];
  /** Indexes into `ExecutionTopology.edges` of the edges this vertex produces. */
  readonly outputs: readonly number[];
}

/** A job edge (intermediate result) inside an ExecutionTopology. */
export interface ExecutionJobEdge {
  readonly id: string;
  /** Index of this edge in `ExecutionTopology.edges`. */
  readonly index: number;
  readonly source: ExecutionJobVertex;
  readonly target: ExecutionJobVertex;
  readonly distribution: DistributionPattern;
  readonly partitionType: ResultPartitionType;
  /** PIPELINED or PIPELINED_BOUNDED: producer and consumers share a pipelined region. */
  readonly mustBePipelined: boolean;
  /**
   * PIPELINED_APPROXIMATE: pipelined, yet producer and consumers are in different regions; consumers are
   * deployed with their producers (they never wait for them to finish), and a restarted side reconnects.
   */
  readonly approximate: boolean;
  /** The partitions can be read again by a restarted consumer (BLOCKING, BLOCKING_PERSISTENT, HYBRID_FULL). */
  readonly reconsumable: boolean;
  /** Result partition index of producer subtask 0; producer `i` writes `firstPartition + i`. */
  readonly firstPartition: number;
}

/**
 * The execution-level view of a job topology, without materialising it: execution vertices
 * `"<vertexId>#<i>"` and result partitions `"<edgeId>#<producerIndex>"` are dense integer indexes, and
 * who-feeds-whom is answered as index ranges (ALL_TO_ALL: every subtask; POINTWISE: docs/DESIGN.md's rule).
 * An ALL_TO_ALL edge between P producers and Q consumers costs O(1) here, never O(P×Q) — the role Flink's
 * consumed partition groups and consumer vertex groups play.
 *
 * Execution vertices are numbered job vertex by job vertex, in the topology's topological order.
 * Immutable; build one with `ExecutionTopology.from`.
 */
export class ExecutionTopology {
  readonly topology: JobTopology;
  readonly vertices: readonly ExecutionJobVertex[];
  readonly edges: readonly ExecutionJobEdge[];
  /** Number of execution vertices (subtasks). */
  readonly executionVertexCount: number;
  /** Number of result partitions. */
  readonly partitionCount: number;
  readonly #vertexById: ReadonlyMap<string, ExecutionJobVertex>;
  readonly #edgeById: ReadonlyMap<string, ExecutionJobEdge>;
  /** Execution vertex index → job vertex index. */
  readonly #jobVertexOf: Int32Array;
  /** Result partition index → job edge index. */
  readonly #edgeOfPartition: Int32Array;

  private constructor(topology: JobTopology) {
    this.topology = topology;
    const vertices: ExecutionJobVertex[] = [];
    const byId = new Map<string, ExecutionJobVertex & { inputs: number[]; outputs: number[] }>();
    let next = 0;
    topology.vertices.forEach((v, index) => {
      const vertex = { id: v.id, parallelism: v.parallelism, index, firstExecutionVertex: next, inputs: [], outputs: [] };
      next += v.parallelism;
      vertices.push(vertex);
      byId.set(v.id, vertex);
    });
    this.executionVertexCount = next;
    const edges: ExecutionJobEdge[] = [];
    let partitions = 0;
    topology.edges.forEach((e, index) => {
      const source = byId.get(e.source);
      const target = byId.get(e.target);
      if (source === undefined || target === undefined) throw new Error(`unreachable: edge ${e.id} of a validated topology names an unknown vertex`);
      const properties = resultPartitionTypeProperties(e.partitionType);
      edges.push({
        id: e.id,
        index,
        source,
        target,
        distribution: e.distribution,
        partitionType: e.partitionType,
        mustBePipelined: properties.mustBePipelined,
        approximate: e.partitionType === 'PIPELINED_APPROXIMATE',
        reconsumable: properties.reconsumable,
        firstPartition: partitions,
      });
      partitions += source.parallelism;
      source.outputs.push(index);
      target.inputs.push(index);
    });
    this.partitionCount = partitions;
    this.vertices = vertices;
    this.edges = edges;
    this.#vertexById = byId;
    this.#edgeById = new Map(edges.map((e) => [e.id, e]));
    this.#jobVertexOf = new Int32Array(this.executionVertexCount);
    for (const v of vertices) this.#jobVertexOf.fill(v.index, v.firstExecutionVertex, v.firstExecutionVertex + v.parallelism);
    this.#edgeOfPartition = new Int32Array(partitions);
    for (const e of edges) this.#edgeOfPartition.fill(e.index, e.firstPartition, e.firstPartition + e.source.parallelism);
  }

  /** Validates `topology` (see `validateTopology`) and expands it. */
  static from(topology: unknown, options?: ValidateTopologyOptions): ExecutionTopology {
    return new ExecutionTopology(validateTopology(topology, options));
  }

  /** The job vertex with this id, if any. */
  vertex(id: string): ExecutionJobVertex | undefined {
    return this.#vertexById.get(id);
  }

  /** The job edge with this id, if any. */
  edge(id: string): ExecutionJobEdge | undefined {
    return this.#edgeById.get(id);
  }

  /** The job vertex an execution vertex index belongs to. */
  jobVertexOf(executionVertex: number): ExecutionJobVertex {
    return this.vertices[this.#jobVertexOf[executionVertex] as number] as ExecutionJobVertex;
  }

  /** The job edge a result partition index belongs to. */
  edgeOfPartition(partition: number): ExecutionJobEdge {
    return this.edges[this.#edgeOfPartition[partition] as number] as ExecutionJobEdge;
  }

  /** The execution vertex that produces a result partition index (its edge's producer subtask). */
  producerOfPartition(partition: number): number {
    const edge = this.edgeOfPartition(partition);
    return edge.source.firstExecutionVertex + partition - edge.firstPartition;
  }

  /** `"<vertexId>#<subtaskIndex>"` of an execution vertex index. */
  executionVertexId(executionVertex: number): string {
    const vertex = this.jobVertexOf(executionVertex);
    return `${vertex.id}#${executionVertex - vertex.firstExecutionVertex}`;
  }

  /** `"<edgeId>#<producerSubtaskIndex>"` of a result partition index. */
  resultPartitionId(partition: number): string {
    const edge = this.edgeOfPartition(partition);
    return `${edge.id}#${partition - edge.firstPartition}`;
  }

  /** The index of an execution vertex id, or -1 when the topology has no such subtask. */
  indexOfExecutionVertex(id: string): number {
    const split = splitIndexedId(id);
    if (split === undefined) return -1;
    const vertex = this.#vertexById.get(split.name);
    if (vertex === undefined || split.index >= vertex.parallelism) return -1;
    return vertex.firstExecutionVertex + split.index;
  }

  /** The index of a result partition id, or -1 when the topology has no such partition. */
  indexOfResultPartition(id: string): number {
    const split = splitIndexedId(id);
    if (split === undefined) return -1;
    const edge = this.#edgeById.get(split.name);
    if (edge === undefined || split.index >= edge.source.parallelism) return -1;
    return edge.firstPartition + split.index;
  }

  /** Like `indexOfExecutionVertex`, but throws `WEFT_ERR_UNKNOWN_EXECUTION_VERTEX` naming `field`. */
  requireExecutionVertex(id: string, field = 'executionVertexId'): number {
    const index = this.indexOfExecutionVertex(id);
    if (index >= 0) return index;
    throw new EngineError('WEFT_ERR_UNKNOWN_EXECUTION_VERTEX', `${field}: unknown execution vertex ${JSON.stringify(id)}; ${this.#describeSubtasks(id)}`, {
      context: { field, executionVertexId: id },
    });
  }

  /** Like `indexOfResultPartition`, but throws `WEFT_ERR_UNKNOWN_PARTITION` naming `field`. */
  requireResultPartition(id: string, field = 'partitionId'): number {
    const index = this.indexOfResultPartition(id);
    if (index >= 0) return index;
    const split = splitIndexedId(id);
    const edge = split === undefined ? undefined : this.#edgeById.get(split.name);
    const hint =
      edge !== undefined
        ? `edge ${JSON.stringify(edge.id)} has partitions #0..#${edge.source.parallelism - 1}`
        : this.edges.length === 0
          ? 'the topology has no edges, so it has no result partitions'
          : `expected "<edgeId>#<producerSubtaskIndex>" with one of the edge ids ${listIds(this.edges.map((e) => e.id))}`;
    throw new EngineError('WEFT_ERR_UNKNOWN_PARTITION', `${field}: unknown result partition ${JSON.stringify(id)}; ${hint}`, {
      context: { field, partitionId: id },
    });
  }

  /** Consumer subtasks (of `edge.target`) that read producer subtask `producer`'s partition. */
  consumersOf(edge: ExecutionJobEdge, producer: number): IndexRange {
    if (edge.distribution === 'ALL_TO_ALL') return { start: 0, end: edge.target.parallelism };
    return pointwiseConsumersOf(producer, edge.source.parallelism, edge.target.parallelism);
  }

  /** Producer subtasks (of `edge.source`) whose partitions consumer subtask `consumer` reads. */
  producersOf(edge: ExecutionJobEdge, consumer: number): IndexRange {
    if (edge.distribution === 'ALL_TO_ALL') return { start: 0, end: edge.source.parallelism };
    return pointwiseProducersOf(consumer, edge.source.parallelism, edge.target.parallelism);
  }

  /** Every execution vertex id, in index order. Materialises N strings: for reports, not for hot paths. */
  executionVertexIds(): string[] {
    const ids: string[] = new Array<string>(this.executionVertexCount);
    for (const v of this.vertices) {
      for (let i = 0; i < v.parallelism; i++) ids[v.firstExecutionVertex + i] = `${v.id}#${i}`;
    }
    return ids;
  }

  #describeSubtasks(id: string): string {
    const split = splitIndexedId(id);
    const vertex = split === undefined ? undefined : this.#vertexById.get(split.name);
    if (vertex !== undefined) return `vertex ${JSON.stringify(vertex.id)} has subtasks #0..#${vertex.parallelism - 1}`;
    return `expected "<vertexId>#<subtaskIndex>" with one of the vertex ids ${listIds(this.vertices.map((v) => v.id))}`;
  }
}

function listIds(ids: readonly string[]): string {
  const shown = ids.slice(0, 10).map((id) => JSON.stringify(id)).join(', ');
  return ids.length > 10 ? `${shown}, … (${ids.length} in all)` : shown;
}

/** Splits `"<name>#<index>"` at the last `#`; the index must be a canonical non-negative decimal integer. */
function splitIndexedId(id: string): { name: string; index: number } | undefined {
  if (typeof id !== 'string') return undefined;
  const hash = id.lastIndexOf('#');
  if (hash <= 0) return undefined;
  const digits = id.slice(hash + 1);
  if (!/^(0|[1-9][0-9]{0,9})$/.test(digits)) return undefined;
  return { name: id.slice(0, hash), index: Number(digits) };
}
