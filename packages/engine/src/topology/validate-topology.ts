import { isDistributionPattern, isResultPartitionType, RESULT_PARTITION_TYPES, validateId } from '@weft/shuffle-api';
import { invalidTopology } from '../errors/engine-error.js';
import { type JobEdge, type JobTopology, type JobVertexJson, defaultEdgeId, MAX_PARALLELISM } from './job-topology.js';

export interface ValidateTopologyOptions {
  /**
   * Refuse a topology with more execution vertices (the sum of all parallelisms) than this.
   * @defaultValue 10_000_000
   */
  readonly maxExecutionVertices?: number;
}

export const DEFAULT_VALIDATE_TOPOLOGY_OPTIONS: Required<ValidateTopologyOptions> = Object.freeze({
  maxExecutionVertices: 10_000_000,
});

const DISTRIBUTIONS = ['ALL_TO_ALL', 'POINTWISE'];

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function describe(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'an array';
  if (typeof value === 'string') return JSON.stringify(value.length > 60 ? `${value.slice(0, 60)}…` : value);
  if (typeof value === 'object') return 'an object';
  return String(value);
}

/** A job or edge id: `validateId`'s rules (it may become part of a storage key) and no `#`. */
function checkId(field: string, value: unknown): string {
  if (value === undefined) throw invalidTopology(field, 'missing');
  if (typeof value !== 'string') throw invalidTopology(field, `expected a string, got ${describe(value)}`);
  try {
    validateId(field, value);
  } catch (error) {
    throw invalidTopology(field, (error as Error).message.replace(`invalid ${field}: `, ''), error);
  }
  if (value.includes('#')) {
    throw invalidTopology(field, `must not contain "#" (it separates the subtask index): ${JSON.stringify(value)}`);
  }
  return value;
}

function requireField(record: Record<string, unknown>, path: string, name: string): unknown {
  const value = record[name];
  if (value === undefined) throw invalidTopology(`${path}.${name}`, 'missing');
  return value;
}

/**
 * Checks that `value` is a job topology (DESIGN.md, contract 1) and returns it normalised: edge ids filled
 * in, vertices in topological order, unknown fields dropped. Throws `WEFT_ERR_INVALID_TOPOLOGY` naming the
 * offending field (`vertices[2].parallelism`, `edges[3].partitionType`, …) for: a missing field, a wrong
 * type, an id that is empty or unsafe, a duplicate vertex or edge id, a parallelism that is not an integer
 * >= 1, an unknown distribution or partition type, an edge naming an unknown vertex, and a cycle.
 */
export function validateTopology(value: unknown, options: ValidateTopologyOptions = {}): JobTopology {
  const maxExecutionVertices = options.maxExecutionVertices ?? DEFAULT_VALIDATE_TOPOLOGY_OPTIONS.maxExecutionVertices;
  if (!isRecord(value)) throw invalidTopology('topology', `expected an object, got ${describe(value)}`);
  const rawVertices = value['vertices'];
  const rawEdges = value['edges'];
  if (rawVertices === undefined) throw invalidTopology('vertices', 'missing');
  if (!Array.isArray(rawVertices)) throw invalidTopology('vertices', `expected an array, got ${describe(rawVertices)}`);
  if (rawVertices.length === 0) throw invalidTopology('vertices', 'a job needs at least one vertex');
  if (rawEdges === undefined) throw invalidTopology('edges', 'missing (use [] for a job without edges)');
  if (!Array.isArray(rawEdges)) throw invalidTopology('edges', `expected an array, got ${describe(rawEdges)}`);

  const vertices: JobVertexJson[] = [];
  const vertexIndex = new Map<string, number>();
  let executionVertices = 0;
  for (let i = 0; i < rawVertices.length; i++) {
    const path = `vertices[${i}]`;
    const raw: unknown = rawVertices[i];
    if (!isRecord(raw)) throw invalidTopology(path, `expected an object, got ${describe(raw)}`);
    const id = checkId(`${path}.id`, raw['id']);
    const previous = vertexIndex.get(id);
    if (previous !== undefined) throw invalidTopology(`${path}.id`, `duplicate vertex id ${JSON.stringify(id)} (also vertices[${previous}])`);
    const parallelism = requireField(raw, path, 'parallelism');
    if (typeof parallelism !== 'number' || !Number.isInteger(parallelism)) {
      throw invalidTopology(`${path}.parallelism`, `expected an integer >= 1, got ${describe(parallelism)}`);
    }
    if (parallelism < 1 || parallelism > MAX_PARALLELISM) {
      throw invalidTopology(`${path}.parallelism`, `${parallelism} is outside [1, ${MAX_PARALLELISM}]`);
    }
    executionVertices += parallelism;
    if (executionVertices > maxExecutionVertices) {
      throw invalidTopology(`${path}.parallelism`, `the job has more than ${maxExecutionVertices} execution vertices (the sum of all parallelisms)`);
    }
    vertexIndex.set(id, i);
    vertices.push({ id, parallelism });
  }

  const edges: JobEdge[] = [];
  const edgeIndex = new Map<string, number>();
  for (let i = 0; i < rawEdges.length; i++) {
    const path = `edges[${i}]`;
    const raw: unknown = rawEdges[i];
    if (!isRecord(raw)) throw invalidTopology(path, `expected an object, got ${describe(raw)}`);
    const source = checkId(`${path}.source`, raw['source']);
    if (!vertexIndex.has(source)) throw invalidTopology(`${path}.source`, `unknown vertex ${JSON.stringify(source)}`);
    const target = checkId(`${path}.target`, raw['target']);
    if (!vertexIndex.has(target)) throw invalidTopology(`${path}.target`, `unknown vertex ${JSON.stringify(target)}`);
    const id = raw['id'] === undefined ? defaultEdgeId(source, target) : checkId(`${path}.id`, raw['id']);
    const previous = edgeIndex.get(id);
    if (previous !== undefined) {
      const hint = raw['id'] === undefined ? ' (the default id "<source>-><target>"; give one of the edges an explicit "id")' : '';
      throw invalidTopology(`${path}.id`, `duplicate edge id ${JSON.stringify(id)}${hint}, also edges[${previous}]`);
    }
    const distribution = requireField(raw, path, 'distribution');
    if (!isDistributionPattern(distribution)) {
      throw invalidTopology(`${path}.distribution`, `unknown distribution ${describe(distribution)}; expected one of ${DISTRIBUTIONS.join(', ')}`);
    }
    const partitionType = requireField(raw, path, 'partitionType');
    if (!isResultPartitionType(partitionType)) {
      throw invalidTopology(`${path}.partitionType`, `unknown partition type ${describe(partitionType)}; expected one of ${RESULT_PARTITION_TYPES.join(', ')}`);
    }
    edgeIndex.set(id, i);
    edges.push({ id, source, target, distribution, partitionType });
  }

  const order = topologicalOrder(vertices, edges, vertexIndex);
  return { vertices: order.map((v) => vertices[v] as JobVertexJson), edges };
}

/** Kahn's algorithm, ties in file order; throws naming an edge that closes a cycle. */
function topologicalOrder(vertices: readonly JobVertexJson[], edges: readonly JobEdge[], vertexIndex: ReadonlyMap<string, number>): number[] {
  const n = vertices.length;
  const inDegree = new Int32Array(n);
  const outgoing: number[][] = vertices.map(() => []);
  edges.forEach((edge, e) => {
    const s = vertexIndex.get(edge.source) as number;
    const t = vertexIndex.get(edge.target) as number;
    (outgoing[s] as number[]).push(e);
    inDegree[t] = (inDegree[t] as number) + 1;
  });
  // A min-heap would keep file order strictly; a FIFO queue seeded in file order is stable enough and O(V+E).
  const order: number[] = [];
  for (let v = 0; v < n; v++) if (inDegree[v] === 0) order.push(v);
  for (let head = 0; head < order.length; head++) {
    for (const e of outgoing[order[head] as number] as number[]) {
      const t = vertexIndex.get((edges[e] as JobEdge).target) as number;
      const left = (inDegree[t] as number) - 1;
      inDegree[t] = left;
      if (left === 0) order.push(t);
    }
  }
  if (order.length === n) return order;
  throw cycleError(edges, vertexIndex, inDegree);
}

function cycleError(edges: readonly JobEdge[], vertexIndex: ReadonlyMap<string, number>, inDegree: Int32Array): Error {
  // Kahn's algorithm left exactly the vertices on or behind a cycle with inDegree > 0, and each of them has
  // a predecessor among them: walk backwards until a vertex repeats, then read the cycle forwards.
  const incoming: number[][] = Array.from(inDegree, () => []);
  edges.forEach((edge, e) => (incoming[vertexIndex.get(edge.target) as number] as number[]).push(e));
  const sourceOf = (e: number): number => vertexIndex.get((edges[e] as JobEdge).source) as number;
  const seenAt = new Map<number, number>();
  const path: number[] = []; // edge indexes, walking backwards
  let v = inDegree.findIndex((d) => d > 0);
  while (!seenAt.has(v)) {
    seenAt.set(v, path.length);
    const previous = (incoming[v] as number[]).find((e) => (inDegree[sourceOf(e)] as number) > 0) as number;
    path.push(previous);
    v = sourceOf(previous);
  }
  const cycle = path.slice(seenAt.get(v)).reverse();
  const first = edges[cycle[0] as number] as JobEdge;
  const names = [first.source, ...cycle.map((e) => (edges[e] as JobEdge).target)];
  const closing = Math.max(...cycle);
  return invalidTopology(`edges[${closing}]`, `closes a cycle in the job graph: ${names.join(' -> ')}`);
}
