import type { PipelinedRegions } from '../regions/pipelined-regions.js';

/** The failover strategies: which tasks to restart when one fails. */
export const FailoverStrategyName = {
  /** Flink's RestartPipelinedRegionFailoverStrategy: the failed task's region and what it depends on. */
  REGION: 'region',
  /** Flink's RestartAllFailoverStrategy: every task of the job. */
  ALL: 'all',
  /** Only the failed task; refused for jobs whose tasks exchange data. */
  INDIVIDUAL: 'individual',
} as const;

export type FailoverStrategyName = (typeof FailoverStrategyName)[keyof typeof FailoverStrategyName];

export const FAILOVER_STRATEGY_NAMES: readonly FailoverStrategyName[] = Object.values(FailoverStrategyName);

export function isFailoverStrategyName(value: unknown): value is FailoverStrategyName {
  return typeof value === 'string' && (FAILOVER_STRATEGY_NAMES as readonly string[]).includes(value);
}

/**
 * Live availability of a result partition, asked by the runtime's partition tracker / ShuffleMaster:
 * true while the partition's data still exists. Only asked for partitions whose type can be re-read
 * (BLOCKING, BLOCKING_PERSISTENT, HYBRID_FULL); the others are never available to a restarted consumer.
 */
export type PartitionAvailability = (partitionId: string) => boolean;

/** One task failure, as the failover strategy is asked about it. */
export interface TaskFailure {
  /** The failed execution vertex, `"<vertexId>#<subtaskIndex>"`. */
  readonly failedVertex: string;
  /**
   * Result partitions known to be lost for this failure (`"<edgeId>#<producerIndex>"`): named in the
   * failure cause (a consumer could not read them) or gone with their worker. Their producers are
   * restarted even when the partition type could otherwise be re-read.
   */
  readonly lostPartitions?: Iterable<string>;
}

export interface FailoverStrategyOptions {
  /**
   * Live availability of re-readable partitions, consulted on every failure in addition to
   * `TaskFailure.lostPartitions`.
   * @defaultValue every partition that was not reported lost is available
   */
  readonly isPartitionAvailable?: PartitionAvailability;
  /**
   * The topology's pipelined regions, when the caller computed them already (the region strategy walks
   * them). @defaultValue computed from the topology
   */
  readonly regions?: PipelinedRegions;
}

/**
 * Decides which tasks restart when one fails (Flink's FailoverStrategy). Pure: it reads the topology and
 * the availability it is given, and changes nothing. Throws `WEFT_ERR_UNKNOWN_EXECUTION_VERTEX` or
 * `WEFT_ERR_UNKNOWN_PARTITION` (naming `failedVertex` / `lostPartitions`) for ids the job does not have.
 *
 * Not in the contract: when to restart (see RestartBackoffTimeStrategy), cancelling the tasks, or
 * releasing the partitions the restarted tasks produced — the scheduler does those.
 */
export interface FailoverStrategy {
  readonly name: FailoverStrategyName;
  /** Execution vertex indexes to restart (ExecutionTopology numbering), ascending. */
  verticesToRestart(failure: TaskFailure): Int32Array;
  /** Execution vertex ids to restart, in index order. Always includes the failed task. */
  tasksToRestart(failure: TaskFailure): string[];
}
