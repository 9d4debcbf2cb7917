import type { DistributionPattern, ResultPartitionType } from '@weft/shuffle-api';
import type { ExchangeMode } from '../api/exchange-mode.js';
import type { LogicalGraph, LogicalNode, Partitioning } from '../api/logical-graph.js';
import type { JobTopology } from '../topology/job-topology.js';
import type { PlanAdaptivity } from './adaptive-presets.js';

/**
 * How an operator hands records to its only chained successor when the two are fused (Flink chains
 * operators; we also let a pair share a representation):
 * - `text-chunks`: a text source → the word splitter: whole chunks of UTF-8 bytes instead of line strings;
 * - `word-count`: the word splitter → the combiner of `keyBy().count()` (value as key): UTF-8 bytes the
 *   combiner scans and counts in a byte-arena table, instead of word strings.
 * The runtime takes the fused path when the successor it was built with offers it (a planted fault's
 * record counter in between does not: then records flow as usual, with the same result).
 */
export type ChainFusion = 'text-chunks' | 'word-count';

/** An operator inside a job vertex (a chain): what it feeds inside the chain and over the network. */
export interface ChainedOperator {
  readonly node: LogicalNode;
  /** Set when this operator is fused with its only chained successor (see ChainFusion). */
  readonly fusion?: ChainFusion;
  /** Positions in `PlannedVertex.operators` of the operators chained after this one. */
  readonly chained: readonly number[];
  /** Indexes in `JobPlan.edges` of the network edges fed by this operator. */
  readonly edges: readonly number[];
}

/**
 * A job vertex: operators fused into one task (Flink's operator chain). `operators[0]` is the head (a
 * source, or the operator reading the vertex's inputs); the rest follow in pre-order, so each operator
 * comes after the one feeding it. A chain may fork: an operator can feed several chained operators.
 */
export interface PlannedVertex {
  readonly id: string;
  readonly index: number;
  /** The operators' names joined by ` -> `. */
  readonly name: string;
  /** Each fused pair of its chain as `"<operator> => <operator> (<fusion>)"`; empty when none. */
  readonly fusions: readonly string[];
  /** Its parallelism; for a vertex decided at run time (`adaptive`), the most it may get (the topology's size). */
  readonly parallelism: number;
  /**
   * Set on a vertex whose parallelism is decided while the job runs (an adaptive plan): `decide` from the
   * bytes its producers wrote, or `follow` the producer of its forward input edge `edge` (a forward group:
   * the same parallelism, subtask i reads partition i).
   */
  readonly adaptive?: { readonly mode: 'decide' } | { readonly mode: 'follow'; readonly edge: number };
  readonly operators: readonly ChainedOperator[];
  readonly inputs: readonly number[];
  readonly outputs: readonly number[];
}

/** A routing rule with `default` resolved. */
export type ResolvedPartitioning = Exclude<Partitioning, { type: 'default' }>;

/** A job edge: an intermediate result from one operator of `source` to an input of `target`'s head. */
export interface PlannedEdge {
  readonly id: string;
  readonly index: number;
  readonly source: number;
  /** Position of the producing operator in the source vertex's `operators`. */
  readonly sourceOperator: number;
  readonly target: number;
  /** The head operator's logical input this edge feeds (0, or 1 for a join's right side). */
  readonly targetInput: number;
  readonly partitioning: ResolvedPartitioning;
  /** Key groups of a hash edge (Flink's max parallelism); 0 for other edges. */
  readonly maxParallelism: number;
  readonly distribution: DistributionPattern;
  readonly partitionType: ResultPartitionType;
}

/** A planned job: chains, edges with their partition types, and the topology (docs/DESIGN.md contract 1). */
export interface JobPlan {
  readonly name: string;
  readonly exchangeMode: ExchangeMode;
  readonly defaultParallelism: number;
  readonly logical: LogicalGraph;
  readonly vertices: readonly PlannedVertex[];
  readonly edges: readonly PlannedEdge[];
  /** Validated topology: the one `computePipelinedRegions` and `weft plan` read. */
  readonly topology: JobTopology;
  /** Set for an adaptive plan (`--parallelism auto`): what workers need to rebuild it. */
  readonly adaptive?: PlanAdaptivity;
  /** A digest of the plan's shape: workers check they built the same plan as the job master. */
  readonly fingerprint: string;
}
