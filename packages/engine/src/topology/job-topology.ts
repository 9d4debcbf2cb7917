import type { DistributionPattern, ResultPartitionType } from '@weft/shuffle-api';

/**
 * One operator of the job graph as written in a topology file (docs/DESIGN.md, contract 1).
 * Its subtasks are the execution vertices `"<id>#0"` … `"<id>#<parallelism-1>"`.
 */
export interface JobVertexJson {
  readonly id: string;
  /** Number of parallel subtasks: an integer in [1, MAX_PARALLELISM]. */
  readonly parallelism: number;
}

/**
 * One edge of the job graph as written in a topology file: an intermediate result produced by `source`
 * and consumed by `target`. Each producer subtask `i` writes the result partition `"<id>#<i>"`.
 */
export interface JobEdgeJson {
  /** @defaultValue `"<source>-><target>"` */
  readonly id?: string;
  readonly source: string;
  readonly target: string;
  readonly distribution: DistributionPattern;
  readonly partitionType: ResultPartitionType;
}

/**
 * The job topology JSON (docs/DESIGN.md, contract 1), used by `weft plan` and the planning functions:
 *
 * ```json
 * { "vertices": [ { "id": "a", "parallelism": 2 } ],
 *   "edges": [ { "id": "a->b", "source": "a", "target": "b",
 *                "distribution": "ALL_TO_ALL", "partitionType": "BLOCKING" } ] }
 * ```
 *
 * Fields not named here are ignored (and dropped by `validateTopology`).
 */
export interface JobTopologyJson {
  readonly vertices: readonly JobVertexJson[];
  readonly edges: readonly JobEdgeJson[];
}

/** An edge of a validated topology: its id is always set. */
export interface JobEdge extends JobEdgeJson {
  readonly id: string;
}

/**
 * A topology that passed `validateTopology`: ids are unique and well-formed, every edge names known
 * vertices, the graph is acyclic, and `vertices` is in a topological order (producers before consumers,
 * ties kept in file order). Plain JSON data; safe to serialize.
 */
export interface JobTopology {
  readonly vertices: readonly JobVertexJson[];
  readonly edges: readonly JobEdge[];
}

/** Largest parallelism of one vertex (Java's int range, as Flink). */
export const MAX_PARALLELISM = 2 ** 31 - 1;

/** The default edge id: `"<source>-><target>"`. */
export function defaultEdgeId(source: string, target: string): string {
  return `${source}->${target}`;
}
