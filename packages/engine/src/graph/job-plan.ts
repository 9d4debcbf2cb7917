import type { DistributionPattern, ResultPartitionType } from '@weft/shuffle-api';
import type { ExchangeMode } from '../api/exchange-mode.js';
import type { LogicalGraph, LogicalNode, Partitioning } from '../api/logical-graph.js';
import type { JobTopology } from '../topology/job-topology.js';

/** An operator inside a job vertex (a chain): what it feeds inside the chain and over the network. */
export interface ChainedOperator {
  readonly node: LogicalNode;
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
  readonly parallelism: number;
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
  /** A digest of the plan's shape: workers check they built the same plan as the job master. */
  readonly fingerprint: string;
}
