import { decideParallelismAndInputInfos } from '../adaptive/decide-parallelism-and-input-infos.js';
import type { ConsumedInputInfo } from '../adaptive/parallelism-and-input-infos.js';
import { splitSkewedSubpartitions } from '../adaptive/split-skewed-subpartitions.js';
import { EngineError } from '../errors/engine-error.js';
import type { ExecutionTopology } from '../execution/execution-topology.js';
import type { JobPlan, PlannedEdge, PlannedVertex } from '../graph/job-plan.js';
import type { TaskResult } from '../runtime/task-events.js';
import type { VertexInitializedData } from './job-events.js';

export interface AdaptiveDecisionsOptions {
  readonly plan: JobPlan;
  readonly topology: ExecutionTopology;
}

/**
 * The run-time parallelism of an adaptive job's vertices (`--parallelism auto`; Flink's adaptive batch
 * scheduler): a vertex planned `adaptive` (JobPlan) is decided once every producer of it finished, from
 * the bytes each of their subpartitions holds, by `decideParallelismAndInputInfos` (contract 6), and the
 * decision is kept for the rest of the run — a restart of its region reuses it — and logged
 * (`vertex-initialized`), so a resumed run restores it instead of deciding again.
 *
 * The topology does not change: an adaptive vertex is planned with `maxParallelism` subtasks, its
 * reserved size. Once decided to `p`, subtasks `p…` are *skipped*: they count as finished at once,
 * without being deployed, logged or given partitions; producers of the vertex's inputs wrote
 * `maxParallelism` subpartitions (1 for a broadcast input), of which each decided subtask reads a range.
 * Fixed vertices answer their planned parallelism. A decided join (probe side) or partial aggregate then
 * has its skewed key groups split across extra subtasks (splitSkewedSubpartitions, Flink 2.x's skewed
 * join), within the reserved size; the split is part of the logged decision (`skewedSplits`).
 */
export class AdaptiveDecisions {
  readonly #plan: JobPlan;
  readonly #topology: ExecutionTopology;
  readonly #decided = new Map<number, VertexInitializedData>();
  /** Topology vertex index → its plan vertex; topology edge index → its plan edge (the orders may differ). */
  readonly #plannedVertex: PlannedVertex[];
  readonly #plannedEdge: PlannedEdge[];

  constructor(options: AdaptiveDecisionsOptions) {
    this.#plan = options.plan;
    this.#topology = options.topology;
    const vertexById = new Map(options.plan.vertices.map((v) => [v.id, v]));
    const edgeById = new Map(options.plan.edges.map((e) => [e.id, e]));
    this.#plannedVertex = options.topology.vertices.map((v) => vertexById.get(v.id) as PlannedVertex);
    this.#plannedEdge = options.topology.edges.map((e) => edgeById.get(e.id) as PlannedEdge);
  }

  /** Whether the plan has any vertex decided at run time. */
  get any(): boolean {
    return this.#plan.vertices.some((v) => v.adaptive !== undefined);
  }

  /** Whether job vertex `vertex` (topology index) is decided at run time. */
  isAdaptive(vertex: number): boolean {
    return this.#planned(vertex).adaptive !== undefined;
  }

  /** Its parallelism: planned (fixed), decided, or undefined while an adaptive vertex is undecided. */
  parallelismOf(vertex: number): number | undefined {
    const planned = this.#planned(vertex);
    if (planned.adaptive === undefined) return planned.parallelism;
    return this.#decided.get(vertex)?.parallelism;
  }

  /** The decision of an adaptive vertex, once made (or restored). */
  decisionOf(vertex: number): VertexInitializedData | undefined {
    return this.#decided.get(vertex);
  }

  /** Every decision made or restored so far, in vertex order. */
  decisions(): VertexInitializedData[] {
    return [...this.#decided.entries()].sort((a, b) => a[0] - b[0]).map(([, d]) => d);
  }

  /** Execution vertex `v` is a reserved subtask of a decided adaptive vertex beyond its parallelism: it never runs. */
  isSkipped(v: number): boolean {
    const vertex = this.#topology.jobVertexOf(v);
    const decided = this.#decided.get(vertex.index);
    return decided !== undefined && v - vertex.firstExecutionVertex >= decided.parallelism;
  }

  /**
   * A decision logged by an earlier run (replayed `vertex-initialized` with `decided`): kept as it is.
   * Throws WEFT_ERR_EVENT_LOG when it does not fit the plan (the caller then restarts the job cleanly).
   */
  restore(data: VertexInitializedData): void {
    const vertex = this.#topology.vertex(data.vertexId);
    const bad = (problem: string): EngineError => new EngineError('WEFT_ERR_EVENT_LOG', `the event log does not fit the job: ${problem}`, { context: { problem } });
    if (vertex === undefined) throw bad(`it decided vertex ${data.vertexId}, which the job does not have`);
    if (!this.isAdaptive(vertex.index)) throw bad(`it decided vertex ${data.vertexId}, whose parallelism the job fixes`);
    if (!Number.isInteger(data.parallelism) || data.parallelism < 1 || data.parallelism > vertex.parallelism) throw bad(`vertex ${data.vertexId} was decided to ${data.parallelism}, outside [1, ${vertex.parallelism}]`);
    const inputs = data.inputs ?? [];
    if (inputs.length !== vertex.inputs.length || inputs.some((input, i) => input.edgeId !== this.#topology.edges[vertex.inputs[i] as number]?.id || input.subtasks.length !== data.parallelism)) {
      throw bad(`the logged input ranges of vertex ${data.vertexId} do not match its inputs`);
    }
    this.#decided.set(vertex.index, data);
  }

  /**
   * Decides adaptive vertex `vertex` from `bytesOf(partition)` (the finished producer's bytes per
   * subpartition, topology partition index; undefined: none reported, counted as empty). Every producer
   * vertex must be decided already. Returns the decision, to be logged before any of its tasks deploys.
   */
  decide(vertex: number, bytesOf: (partition: number) => readonly number[] | undefined): VertexInitializedData {
    const existing = this.#decided.get(vertex);
    if (existing !== undefined) return existing;
    const planned = this.#planned(vertex);
    const adaptive = planned.adaptive;
    const options = this.#plan.adaptive?.options;
    if (adaptive === undefined || options === undefined) throw new EngineError('WEFT_ERR_ILLEGAL_STATE', `vertex ${planned.id} has a fixed parallelism`);
    const tv = this.#topology.vertices[vertex];
    if (tv === undefined) throw new Error(`unreachable: no topology vertex ${vertex}`);
    let bytesIn = 0;
    const inputs: ConsumedInputInfo[] = tv.inputs.map((e) => {
      const edge = this.#topology.edges[e];
      const plannedEdge = this.#plannedEdge[e];
      if (edge === undefined || plannedEdge === undefined) throw new Error(`unreachable: no edge ${e}`);
      const producers = this.parallelismOf(edge.source.index);
      if (producers === undefined) throw new EngineError('WEFT_ERR_ILLEGAL_STATE', `vertex ${planned.id} cannot be decided before its producer ${edge.source.id}`);
      const broadcast = plannedEdge.partitioning.type === 'broadcast';
      const subpartitions = broadcast || edge.distribution === 'POINTWISE' ? 1 : tv.parallelism;
      const bytes: number[][] = [];
      for (let k = 0; k < producers; k++) {
        const reported = bytesOf(edge.firstPartition + k);
        const row = reported !== undefined && reported.length === subpartitions ? [...reported] : new Array<number>(subpartitions).fill(0);
        bytes.push(row);
        for (const b of row) bytesIn += b;
      }
      return { distribution: edge.distribution, ...(broadcast ? { broadcast: true } : {}), bytes };
    });
    // follow: the producer of its forward input edge (a plan edge index)
    const followed = adaptive.mode === 'follow' ? this.#topology.edge(this.#plan.edges[adaptive.edge]?.id ?? '') : undefined;
    const initialParallelism = followed === undefined ? undefined : this.parallelismOf(followed.source.index);
    const maxParallelism = Math.min(options.maxParallelism, tv.parallelism);
    const base = decideParallelismAndInputInfos({
      inputs,
      minParallelism: options.minParallelism,
      maxParallelism,
      dataVolumePerTaskBytes: options.dataVolumePerTaskBytes,
      ...(initialParallelism === undefined ? {} : { initialParallelism }),
    });
    // Flink 2.x's skewed join: a join's probe side split by producer ranges, its build side replicated
    // and a partial aggregate's input split the same way (its merging stage follows behind a hash edge)
    const head = planned.operators[0]?.node.spec;
    const splittable = (e: number): boolean => {
      if (head?.kind === 'join') return options.skewedJoin !== 'none' && this.#plannedEdge[e]?.targetInput === 1 - head.build;
      return head?.kind === 'aggregate' && head.partial === true;
    };
    const decided =
      initialParallelism !== undefined || !tv.inputs.some(splittable)
        ? { ...base, splits: [] }
        : splitSkewedSubpartitions({
            inputs,
            decision: base,
            splittable: tv.inputs.map(splittable),
            skewedFactor: options.skewedFactor,
            skewedThresholdBytes: options.skewedThresholdBytes,
            dataVolumePerTaskBytes: options.dataVolumePerTaskBytes,
            maxParallelism,
          });
    const data: VertexInitializedData = {
      vertexId: planned.id,
      parallelism: decided.parallelism,
      decided: true,
      bytesIn,
      inputs: decided.inputs.map((input, i) => ({ edgeId: (this.#topology.edges[tv.inputs[i] as number] as { id: string }).id, subtasks: input.subtasks.map((s) => ({ partitions: { ...s.partitions }, subpartitions: { ...s.subpartitions } })) })),
      ...(decided.splits.length === 0
        ? {}
        : { skewedSplits: decided.splits.map((x) => ({ operator: head?.kind === 'join' ? ('join' as const) : ('aggregate' as const), subpartition: x.subpartition, bytes: x.bytes, parts: x.parts, edgeIds: tv.inputs.filter(splittable).map((e) => (this.#topology.edges[e] as { id: string }).id) })) }),
    };
    this.#decided.set(vertex, data);
    return data;
  }

  /**
   * Decides every undecided adaptive vertex of `members` (a ready region's execution vertices: their
   * producers finished) from the finished producers' results; returns the new decisions, in order.
   */
  decideVerticesOf(members: ArrayLike<number>, results: readonly (TaskResult | undefined)[]): VertexInitializedData[] {
    const made: VertexInitializedData[] = [];
    for (let k = 0; k < members.length; k++) {
      const vertex = this.#topology.jobVertexOf(members[k] as number).index;
      if (!this.isAdaptive(vertex) || this.#decided.has(vertex)) continue;
      made.push(this.decide(vertex, (p) => this.#subpartitionBytesOf(p, results)));
    }
    return made;
  }

  /** Skipped subtasks so far, and how many of them count as finished now. */
  skippedCounts(isDone: (v: number) => boolean): { total: number; done: number } {
    let total = 0;
    let done = 0;
    for (const [index, d] of this.#decided) {
      const vertex = this.#topology.vertices[index];
      if (vertex === undefined) continue;
      for (let i = d.parallelism; i < vertex.parallelism; i++) {
        total++;
        if (isDone(vertex.firstExecutionVertex + i)) done++;
      }
    }
    return { total, done };
  }

  /** What the finished producer of partition `p` reported of it, per subpartition. */
  #subpartitionBytesOf(p: number, results: readonly (TaskResult | undefined)[]): readonly number[] | undefined {
    const edge = this.#topology.edgeOfPartition(p);
    const result = results[this.#topology.producerOfPartition(p)];
    const planEdge = this.#plannedEdge[edge.index]?.index;
    return result?.metrics.outputs.find((o) => o.edgeIndex === planEdge)?.subpartitionBytes;
  }

  #planned(vertex: number): PlannedVertex {
    const planned = this.#plannedVertex[vertex];
    if (planned === undefined) throw new Error(`unreachable: no plan vertex ${vertex}`);
    return planned;
  }
}
