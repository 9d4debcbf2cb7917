import { createHash } from 'node:crypto';
import type { DistributionPattern } from '@weft/shuffle-api';
import { type ExchangeMode, partitionTypeFor } from '../api/exchange-mode.js';
import { invalidJob, type LogicalGraph, type LogicalInput, type LogicalNode } from '../api/logical-graph.js';
import { isEngineError } from '../errors/engine-error.js';
import { computeDefaultMaxParallelism } from '../keygroups/key-group-range-assignment.js';
import { validateTopology } from '../topology/validate-topology.js';
import type { ChainedOperator, JobPlan, PlannedEdge, PlannedVertex, ResolvedPartitioning } from './job-plan.js';
import { chainFusion } from './chain-fusion.js';
import type { PlanAdaptivity } from './adaptive-presets.js';

export interface BuildJobPlanRequest {
  readonly graph: LogicalGraph;
  readonly name: string;
  readonly exchangeMode: ExchangeMode;
  readonly defaultParallelism: number;
  /**
   * An adaptive plan (`--parallelism auto`): operators without an explicit or preset parallelism are
   * decided at run time; their vertices are planned at `options.maxParallelism` subtasks (the most they may
   * get) and every edge into or out of them is BLOCKING. @defaultValue none: every parallelism is fixed here
   */
  readonly adaptive?: PlanAdaptivity;
}

/** The parallelism of an operator decided at run time, while planning. */
const UNDECIDED = 0;

/** Operators that read two logical inputs, so they always head a chain. */
const TWO_INPUT_KINDS = new Set(['join', 'range-assign']);
const SINK_KINDS = new Set(['text-sink', 'collect-sink', 'two-phase-commit-sink']);

function describeNode(node: LogicalNode): string {
  return `operator ${JSON.stringify(node.name)} (${node.spec.kind})`;
}

/**
 * Plans a logical graph (Flink's StreamGraph → JobGraph): drops operators that feed no sink, resolves
 * parallelism and routing, fuses forward edges between operators of equal parallelism into chains, and
 * gives every remaining edge its distribution pattern and partition type under the exchange mode (a
 * per-edge override wins). Throws `WEFT_ERR_INVALID_JOB` naming the operator and field.
 */
export function buildJobPlan(request: BuildJobPlanRequest): JobPlan {
  const { graph, exchangeMode, defaultParallelism } = request;
  const nodes = graph.nodes;
  if (!Number.isInteger(defaultParallelism) || defaultParallelism < 1) throw invalidJob('parallelism', `expected an integer >= 1, got ${String(defaultParallelism)}`);

  // 1. Keep what reaches a sink.
  const live = new Uint8Array(nodes.length);
  const stack: number[] = [];
  for (const node of nodes) if (SINK_KINDS.has(node.spec.kind)) stack.push(node.index);
  if (stack.length === 0) throw invalidJob('sinks', 'the job has no sink: end it with writeText(path), collect(name) or sinkTo(factory)');
  while (stack.length > 0) {
    const index = stack.pop() as number;
    if (live[index] === 1) continue;
    live[index] = 1;
    for (const input of nodes[index]?.inputs ?? []) stack.push(input.producer);
  }
  const textSinks = new Map<string, string>();
  for (const node of nodes) {
    if (node.spec.kind !== 'text-sink') continue;
    const other = textSinks.get(node.spec.path);
    if (other !== undefined) throw invalidJob(`${describeNode(node)}: path`, `${JSON.stringify(node.spec.path)} is also written by operator ${JSON.stringify(other)}`);
    textSinks.set(node.spec.path, node.name);
  }

  // 2. Parallelism and routing.
  const adaptive = request.adaptive;
  const parallelism = adaptive === undefined ? nodes.map((n) => n.parallelism ?? defaultParallelism) : adaptiveParallelism(nodes, adaptive);
  const routing = new Map<LogicalInput, ResolvedPartitioning>();
  for (const node of nodes) {
    if (live[node.index] !== 1) continue;
    const p = parallelism[node.index] as number;
    if (node.spec.kind === 'sort-boundaries' && p !== 1) throw invalidJob(`${describeNode(node)}: parallelism`, 'must be 1');
    for (const input of node.inputs) {
      const producer = nodes[input.producer] as LogicalNode;
      const q = parallelism[input.producer] as number;
      let partitioning = input.partitioning;
      if (partitioning.type === 'default') partitioning = p === q ? { type: 'forward' } : { type: 'rebalance' };
      if (adaptive !== undefined && (p === UNDECIDED || q === UNDECIDED)) {
        if (partitioning.type === 'rescale') throw invalidJob(`${describeNode(node)}: parallelism`, 'rescale() needs fixed parallelisms on both sides with --parallelism auto; set them with setParallelism, or use rebalance()');
        if (input.exchange !== undefined && input.exchange !== 'BLOCKING') {
          throw invalidJob(`${describeNode(node)}: exchange`, `${input.exchange} cannot feed or leave an operator whose parallelism is decided at run time (--parallelism auto): its producers must have finished`);
        }
      }
      if (partitioning.type === 'forward' && p !== q) {
        const has = (n: number): string => (n === UNDECIDED ? 'one decided at run time (--parallelism auto)' : String(n));
        throw invalidJob(`${describeNode(node)}: parallelism`, `a forward input needs equal parallelism, but ${JSON.stringify(producer.name)} has ${has(q)} and this operator ${has(p)}; set both or use rebalance()`);
      }
      if (partitioning.type === 'hash' && partitioning.maxParallelism !== undefined && p !== UNDECIDED && partitioning.maxParallelism < p) {
        throw invalidJob(`${describeNode(node)}: parallelism`, `${p} is more than the key groups of its keyBy (maxParallelism ${partitioning.maxParallelism})`);
      }
      routing.set(input, partitioning as ResolvedPartitioning);
    }
  }

  // 3. Chains: a one-input operator fuses with its producer over an unforced forward edge.
  const chainedTo = new Int32Array(nodes.length).fill(-1);
  const children: number[][] = nodes.map(() => []);
  for (const node of nodes) {
    if (live[node.index] !== 1 || node.inputs.length !== 1 || !node.chaining || TWO_INPUT_KINDS.has(node.spec.kind)) continue;
    const input = node.inputs[0] as LogicalInput;
    if (routing.get(input)?.type !== 'forward' || input.exchange !== undefined || input.noChain === true) continue;
    chainedTo[node.index] = input.producer;
    (children[input.producer] as number[]).push(node.index);
  }

  // 4. Vertices, in logical (topological) order of their heads.
  const vertexOf = new Int32Array(nodes.length).fill(-1);
  const positionOf = new Int32Array(nodes.length).fill(-1);
  const building: { id: string; head: LogicalNode; order: number[] }[] = [];
  for (const node of nodes) {
    if (live[node.index] !== 1 || chainedTo[node.index] !== -1) continue;
    const vertex = building.length;
    const order: number[] = [];
    const walk = [node.index];
    while (walk.length > 0) {
      const n = walk.pop() as number;
      vertexOf[n] = vertex;
      positionOf[n] = order.length;
      order.push(n);
      const next = children[n] as number[];
      for (let k = next.length - 1; k >= 0; k--) walk.push(next[k] as number);
    }
    building.push({ id: node.uid, head: node, order });
  }

  const undecided = (n: number): boolean => parallelism[n] === UNDECIDED;
  // 5. Edges: every input that is not chained.
  const edges: PlannedEdge[] = [];
  const edgeIds = new Set<string>();
  const edgesFrom: number[][] = nodes.map(() => []);
  const vertexInputs: number[][] = building.map(() => []);
  const vertexOutputs: number[][] = building.map(() => []);
  for (const node of nodes) {
    if (live[node.index] !== 1 || chainedTo[node.index] !== -1) continue;
    const target = vertexOf[node.index] as number;
    for (const input of node.inputs) {
      const partitioning = routing.get(input) as ResolvedPartitioning;
      const source = vertexOf[input.producer] as number;
      const base = `${(building[source] as { id: string }).id}->${(building[target] as { id: string }).id}`;
      let id = base;
      for (let n = 2; edgeIds.has(id); n++) id = `${base}-${n}`;
      edgeIds.add(id);
      const pointwise = partitioning.type === 'forward' || partitioning.type === 'rescale';
      const distribution: DistributionPattern = pointwise ? 'POINTWISE' : 'ALL_TO_ALL';
      const index = edges.length;
      edges.push({
        id,
        index,
        source,
        sourceOperator: positionOf[input.producer] as number,
        target,
        targetInput: input.inputIndex,
        partitioning,
        maxParallelism: partitioning.type === 'hash' ? (partitioning.maxParallelism ?? (undecided(node.index) ? (adaptive as PlanAdaptivity).options.maxParallelism : computeDefaultMaxParallelism(parallelism[node.index] as number))) : 0,
        distribution,
        partitionType: input.exchange ?? (undecided(node.index) || undecided(input.producer) ? 'BLOCKING' : partitionTypeFor(exchangeMode, { forward: partitioning.type === 'forward', pointwise })),
      });
      (edgesFrom[input.producer] as number[]).push(index);
      (vertexInputs[target] as number[]).push(index);
      (vertexOutputs[source] as number[]).push(index);
    }
  }

  const vertices: PlannedVertex[] = building.map((b, index) => {
    const operators: ChainedOperator[] = b.order.map((n) => {
      const node = nodes[n] as LogicalNode;
      const next = children[n] as number[];
      const out = edgesFrom[n] as number[];
      const fusion = next.length === 1 && out.length === 0 ? chainFusion(node, nodes[next[0] as number] as LogicalNode) : undefined;
      return {
        node,
        chained: next.map((c) => positionOf[c] as number),
        edges: out,
        ...(fusion === undefined ? {} : { fusion }),
      };
    });
    const fusions: string[] = [];
    for (const o of operators) {
      const next = o.fusion === undefined ? undefined : operators[o.chained[0] as number];
      if (next !== undefined) fusions.push(`${o.node.name} => ${next.node.name} (${o.fusion})`);
    }
    const p = parallelism[b.head.index] as number;
    const follows = p === UNDECIDED ? (vertexInputs[index] as number[]).find((e) => (edges[e] as PlannedEdge).partitioning.type === 'forward') : undefined;
    return {
      id: b.id,
      index,
      name: operators.map((o) => o.node.name).join(' -> '),
      fusions,
      parallelism: p === UNDECIDED ? (adaptive as PlanAdaptivity).options.maxParallelism : p,
      ...(p === UNDECIDED ? { adaptive: follows === undefined ? { mode: 'decide' as const } : { mode: 'follow' as const, edge: follows } } : {}),
      operators,
      inputs: vertexInputs[index] as number[],
      outputs: vertexOutputs[index] as number[],
    };
  });

  const topologyJson = {
    vertices: vertices.map((v) => ({ id: v.id, parallelism: v.parallelism })),
    edges: edges.map((e) => ({
      id: e.id,
      source: (vertices[e.source] as PlannedVertex).id,
      target: (vertices[e.target] as PlannedVertex).id,
      distribution: e.distribution,
      partitionType: e.partitionType,
    })),
  };
  let topology;
  try {
    topology = validateTopology(topologyJson);
  } catch (error) {
    if (isEngineError(error)) throw invalidJob('topology', error.message, error);
    throw error;
  }
  const shape = {
    topology: topologyJson,
    operators: vertices.map((v) => v.operators.map((o) => [o.node.uid, o.node.spec.kind, o.chained, o.edges, o.fusion ?? null])),
    routing: edges.map((e) => [e.partitioning.type, e.targetInput, e.sourceOperator, e.maxParallelism]),
    adaptive: adaptive === undefined ? null : [adaptive, vertices.map((v) => v.adaptive ?? null)],
  };
  const fingerprint = createHash('sha256').update(JSON.stringify(shape)).digest('hex').slice(0, 32);
  return { name: request.name, exchangeMode, defaultParallelism, logical: graph, vertices, edges, topology, fingerprint, ...(adaptive === undefined ? {} : { adaptive }) };
}

/**
 * An adaptive plan's parallelism per operator: explicit, else preset (PlanAdaptivity.presets), else the
 * parallelism of the producer of its default or forward input when that one is known (Flink's forward
 * groups: such operators chain as they would with one default parallelism), else UNDECIDED. Nodes come in
 * topological order, so every producer is resolved first.
 */
function adaptiveParallelism(nodes: readonly LogicalNode[], adaptive: PlanAdaptivity): number[] {
  const parallelism: number[] = [];
  for (const node of nodes) {
    let p = node.parallelism ?? adaptive.presets[node.uid];
    if (p === undefined) {
      const forward = node.inputs.find((input) => input.partitioning.type === 'default' || input.partitioning.type === 'forward');
      p = forward === undefined ? UNDECIDED : (parallelism[forward.producer] as number);
    }
    parallelism.push(p);
  }
  return parallelism;
}
