import { type ExecutionJobEdge, ExecutionTopology } from '../execution/execution-topology.js';
import { DisjointSet } from './disjoint-set.js';
import { buildCsrGraph, stronglyConnectedComponents } from './strongly-connected-components.js';

/**
 * The pipelined regions of an ExecutionTopology: region `r`'s members are the execution vertex indexes
 * `members[memberOffsets[r] .. memberOffsets[r+1])`, ascending. Regions are numbered by their smallest
 * member, so region 0 holds execution vertex 0.
 */
export class PipelinedRegions {
  readonly topology: ExecutionTopology;
  readonly regionCount: number;
  /** Execution vertex index → region index. */
  readonly regionOf: Int32Array;
  readonly memberOffsets: Int32Array;
  readonly members: Int32Array;

  constructor(topology: ExecutionTopology, regionOf: Int32Array, regionCount: number) {
    this.topology = topology;
    this.regionOf = regionOf;
    this.regionCount = regionCount;
    const offsets = new Int32Array(regionCount + 1);
    for (let v = 0; v < regionOf.length; v++) {
      const slot = (regionOf[v] as number) + 1;
      offsets[slot] = (offsets[slot] as number) + 1;
    }
    for (let r = 0; r < regionCount; r++) offsets[r + 1] = (offsets[r + 1] as number) + (offsets[r] as number);
    const fill = offsets.slice(0, regionCount);
    const members = new Int32Array(regionOf.length);
    for (let v = 0; v < regionOf.length; v++) {
      const r = regionOf[v] as number;
      const at = fill[r] as number;
      members[at] = v;
      fill[r] = at + 1;
    }
    this.memberOffsets = offsets;
    this.members = members;
  }

  /** The execution vertex indexes of region `region`, ascending (a view, not a copy). */
  membersOf(region: number): Int32Array {
    return this.members.subarray(this.memberOffsets[region], this.memberOffsets[region + 1]);
  }

  /** Number of execution vertices in region `region`. */
  sizeOf(region: number): number {
    return (this.memberOffsets[region + 1] as number) - (this.memberOffsets[region] as number);
  }

  /** The regions as lists of execution vertex ids (`"<vertexId>#<i>"`). */
  toIds(): string[][] {
    const ids = this.topology.executionVertexIds();
    const out: string[][] = new Array<string[]>(this.regionCount);
    for (let r = 0; r < this.regionCount; r++) {
      const members = this.membersOf(r);
      const region = new Array<string>(members.length);
      for (let k = 0; k < members.length; k++) region[k] = ids[members[k] as number] as string;
      out[r] = region;
    }
    return out;
  }
}

/** Calls `visit(producer, consumer)` for each subtask pair a POINTWISE edge connects: max(P, Q) calls. */
export function forEachPointwisePair(topology: ExecutionTopology, edge: ExecutionJobEdge, visit: (producer: number, consumer: number) => void): void {
  const p = edge.source.parallelism;
  const q = edge.target.parallelism;
  if (p >= q) {
    for (let j = 0; j < q; j++) {
      const range = topology.producersOf(edge, j);
      for (let i = range.start; i < range.end; i++) visit(i, j);
    }
  } else {
    for (let i = 0; i < p; i++) {
      const range = topology.consumersOf(edge, i);
      for (let j = range.start; j < range.end; j++) visit(i, j);
    }
  }
}

/**
 * Pipelined regions exactly as docs/DESIGN.md and Flink's SchedulingPipelinedRegionComputeUtil define them:
 *
 * 1. union each execution vertex with the producers of its must-be-pipelined inputs (PIPELINED,
 *    PIPELINED_BOUNDED) — union-find;
 * 2. add a region → region edge for every other edge (BLOCKING, BLOCKING_PERSISTENT, HYBRID_*,
 *    PIPELINED_APPROXIMATE);
 * 3. merge every strongly connected component of that region graph into one region.
 *
 * O(N + Σ edges' P+Q): an ALL_TO_ALL edge never becomes P×Q pairs. In step 1 its producers and consumers
 * are all one set; in step 2 it becomes one virtual node with an edge from each distinct producer region
 * and to each distinct consumer region, which keeps reachability (and so the components) exact.
 * Iterative throughout.
 */
export function buildPipelinedRegions(topology: ExecutionTopology): PipelinedRegions {
  const n = topology.executionVertexCount;
  const sets = new DisjointSet(n);
  for (const edge of topology.edges) {
    if (!edge.mustBePipelined) continue;
    const s = edge.source.firstExecutionVertex;
    const t = edge.target.firstExecutionVertex;
    if (edge.distribution === 'ALL_TO_ALL') {
      for (let i = 0; i < edge.source.parallelism; i++) sets.union(s, s + i);
      for (let j = 0; j < edge.target.parallelism; j++) sets.union(s, t + j);
    } else {
      forEachPointwisePair(topology, edge, (i, j) => sets.union(s + i, t + j));
    }
  }

  // Raw regions, numbered by smallest member.
  const raw = new Int32Array(n);
  const rootToRaw = new Int32Array(n).fill(-1);
  let rawCount = 0;
  for (let v = 0; v < n; v++) {
    const root = sets.find(v);
    if (rootToRaw[root] === -1) rootToRaw[root] = rawCount++;
    raw[v] = rootToRaw[root] as number;
  }

  // The region graph: raw regions 0..rawCount-1, then one virtual node per non-pipelined ALL_TO_ALL edge.
  let capacity = 0;
  let virtualCount = 0;
  for (const edge of topology.edges) {
    if (edge.mustBePipelined) continue;
    const p = edge.source.parallelism;
    const q = edge.target.parallelism;
    if (edge.distribution === 'ALL_TO_ALL') {
      capacity += p + q;
      virtualCount++;
    } else {
      capacity += Math.max(p, q);
    }
  }
  if (capacity === 0) return new PipelinedRegions(topology, raw, rawCount);

  const from = new Int32Array(capacity);
  const to = new Int32Array(capacity);
  let count = 0;
  const stamp = new Int32Array(rawCount).fill(-1);
  let nextVirtual = rawCount;
  for (const edge of topology.edges) {
    if (edge.mustBePipelined) continue;
    const s = edge.source.firstExecutionVertex;
    const t = edge.target.firstExecutionVertex;
    if (edge.distribution === 'ALL_TO_ALL') {
      const node = nextVirtual++;
      const producerMark = 2 * edge.index;
      const consumerMark = producerMark + 1;
      for (let i = 0; i < edge.source.parallelism; i++) {
        const r = raw[s + i] as number;
        if (stamp[r] === producerMark) continue;
        stamp[r] = producerMark;
        from[count] = r;
        to[count++] = node;
      }
      for (let j = 0; j < edge.target.parallelism; j++) {
        const r = raw[t + j] as number;
        if (stamp[r] === consumerMark) continue;
        stamp[r] = consumerMark;
        from[count] = node;
        to[count++] = r;
      }
    } else {
      forEachPointwisePair(topology, edge, (i, j) => {
        const a = raw[s + i] as number;
        const b = raw[t + j] as number;
        if (a === b) return;
        from[count] = a;
        to[count++] = b;
      });
    }
  }

  const graph = buildCsrGraph(rawCount + virtualCount, from, to, count);
  const { componentOf } = stronglyConnectedComponents(graph);
  // Final regions: one per component that holds a raw region, numbered by smallest member.
  const componentToRegion = new Int32Array(rawCount + virtualCount).fill(-1);
  const rawToRegion = new Int32Array(rawCount);
  let regionCount = 0;
  for (let r = 0; r < rawCount; r++) {
    const c = componentOf[r] as number;
    if (componentToRegion[c] === -1) componentToRegion[c] = regionCount++;
    rawToRegion[r] = componentToRegion[c] as number;
  }
  if (regionCount === rawCount) return new PipelinedRegions(topology, raw, rawCount);
  const regionOf = new Int32Array(n);
  for (let v = 0; v < n; v++) regionOf[v] = rawToRegion[raw[v] as number] as number;
  return new PipelinedRegions(topology, regionOf, regionCount);
}

/**
 * docs/DESIGN.md contract 3: the pipelined regions of a job topology (contract 1) as lists of execution vertex
 * ids. Validates the topology first (`WEFT_ERR_INVALID_TOPOLOGY`). Regions are ordered by their first
 * member and members by job vertex (topological order) then subtask; callers must not rely on either.
 */
export function computePipelinedRegions(topology: unknown): string[][] {
  const execution = topology instanceof ExecutionTopology ? topology : ExecutionTopology.from(topology);
  return buildPipelinedRegions(execution).toIds();
}
