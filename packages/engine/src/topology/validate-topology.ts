import { isDistributionPattern, isResultPartitionType, MAX_ID_LENGTH, RESULT_PARTITION_TYPES, validateId } from '@weft/shuffle-api';
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

/**
 * Longest vertex or edge id: they become parts of longer ids (`"<vertexId>#<subtask>@<attempt>"`,
 * `"<edgeId>#<producer>"`) that must stay within the shuffle API's MAX_ID_LENGTH.
 */
export const MAX_TOPOLOGY_ID_LENGTH = MAX_ID_LENGTH - 32;

/** Why ids are restricted, said with every refused one. */
const ID_RULES = `vertex and edge ids become parts of execution vertex ids, result partition ids and storage keys, so each is 1 to ${MAX_TOPOLOGY_ID_LENGTH} characters without "/", "\\", "..", "#" or control characters`;

/** A vertex or edge id: `validateId`'s rules (it becomes part of storage keys), no `#`, and room for suffixes. */
function checkId(path: string, name: string, value: unknown): string {
  const field = `${path}.${name}`;
  if (value === undefined) throw invalidTopology(field, 'missing');
  if (typeof value !== 'string') throw invalidTopology(field, `expected a string, got ${describe(value)}`);
  let problem: string | undefined;
  let cause: unknown;
  try {
    validateId(field, value);
  } catch (error) {
    cause = error;
    problem = (error as Error).message.replace(`invalid ${field}: `, '');
  }
  if (problem === undefined && value.includes('#')) problem = `must not contain "#" (it separates the subtask index): ${JSON.stringify(value)}`;
  if (problem === undefined && value.length > MAX_TOPOLOGY_ID_LENGTH) problem = `longer than ${MAX_TOPOLOGY_ID_LENGTH} characters (${value.length})`;
  if (problem === undefined) return value;
  throw invalidTopology(field, `${problem} (${ID_RULES})`, cause);
}

function requireField(record: Record<string, unknown>, path: string, name: string): unknown {
  const value = record[name];
  if (value === undefined) throw invalidTopology(`${path}.${name}`, 'missing');
  return value;
}

/**
 * Checks that `value` is a job topology (docs/DESIGN.md, contract 1) and returns it normalised: edge ids filled
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
    const id = checkId(path, 'id', raw['id']);
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
  const edgeSource = new Int32Array(rawEdges.length);
  const edgeTarget = new Int32Array(rawEdges.length);
  for (let i = 0; i < rawEdges.length; i++) {
    const path = `edges[${i}]`;
    const raw: unknown = rawEdges[i];
    if (!isRecord(raw)) throw invalidTopology(path, `expected an object, got ${describe(raw)}`);
    const source = checkId(path, 'source', raw['source']);
    const sourceIndex = vertexIndex.get(source);
    if (sourceIndex === undefined) throw invalidTopology(`${path}.source`, `unknown vertex ${JSON.stringify(source)}`);
    const target = checkId(path, 'target', raw['target']);
    const targetIndex = vertexIndex.get(target);
    if (targetIndex === undefined) throw invalidTopology(`${path}.target`, `unknown vertex ${JSON.stringify(target)}`);
    edgeSource[i] = sourceIndex;
    edgeTarget[i] = targetIndex;
    const id = raw['id'] === undefined ? defaultEdgeId(source, target) : checkId(path, 'id', raw['id']);
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

  const order = topologicalOrder(vertices.length, edgeSource, edgeTarget, edges);
  return { vertices: order.map((v) => vertices[v] as JobVertexJson), edges };
}

/** Kahn's algorithm over edge endpoint indexes, ties in file order; throws naming an edge that closes a cycle. */
function topologicalOrder(n: number, edgeSource: Int32Array, edgeTarget: Int32Array, edges: readonly JobEdge[]): number[] {
  const inDegree = new Int32Array(n);
  const outOffsets = new Int32Array(n + 1);
  for (let e = 0; e < edgeSource.length; e++) {
    const t = edgeTarget[e] as number;
    inDegree[t] = (inDegree[t] as number) + 1;
    const slot = (edgeSource[e] as number) + 1;
    outOffsets[slot] = (outOffsets[slot] as number) + 1;
  }
  for (let v = 0; v < n; v++) outOffsets[v + 1] = (outOffsets[v + 1] as number) + (outOffsets[v] as number);
  const fill = outOffsets.slice(0, n);
  const outTargets = new Int32Array(edgeSource.length);
  for (let e = 0; e < edgeSource.length; e++) {
    const s = edgeSource[e] as number;
    const at = fill[s] as number;
    outTargets[at] = edgeTarget[e] as number;
    fill[s] = at + 1;
  }
  // A FIFO queue seeded in file order: producers first, otherwise file order as far as it goes. O(V+E).
  const order: number[] = [];
  for (let v = 0; v < n; v++) if (inDegree[v] === 0) order.push(v);
  for (let head = 0; head < order.length; head++) {
    const v = order[head] as number;
    for (let k = outOffsets[v] as number; k < (outOffsets[v + 1] as number); k++) {
      const t = outTargets[k] as number;
      const left = (inDegree[t] as number) - 1;
      inDegree[t] = left;
      if (left === 0) order.push(t);
    }
  }
  if (order.length === n) return order;
  throw cycleError(edges, edgeSource, edgeTarget, inDegree);
}

function cycleError(edges: readonly JobEdge[], edgeSource: Int32Array, edgeTarget: Int32Array, inDegree: Int32Array): Error {
  // Kahn's algorithm left exactly the vertices on or behind a cycle with inDegree > 0, and each of them has
  // a predecessor among them: walk backwards until a vertex repeats, then read the cycle forwards.
  const incoming: number[][] = Array.from(inDegree, () => []);
  for (let e = 0; e < edgeTarget.length; e++) (incoming[edgeTarget[e] as number] as number[]).push(e);
  const seenAt = new Map<number, number>();
  const path: number[] = []; // edge indexes, walking backwards
  let v = inDegree.findIndex((d) => d > 0);
  while (!seenAt.has(v)) {
    seenAt.set(v, path.length);
    const previous = (incoming[v] as number[]).find((e) => (inDegree[edgeSource[e] as number] as number) > 0) as number;
    path.push(previous);
    v = edgeSource[previous] as number;
  }
  const cycle = path.slice(seenAt.get(v)).reverse();
  const first = edges[cycle[0] as number] as JobEdge;
  const names = [first.source, ...cycle.map((e) => (edges[e] as JobEdge).target)];
  const closing = Math.max(...cycle);
  return invalidTopology(`edges[${closing}]`, `closes a cycle in the job graph: ${names.join(' -> ')}`);
}
