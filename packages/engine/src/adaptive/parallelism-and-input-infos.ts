import type { DistributionPattern } from '@weft/shuffle-api';

/**
 * The request and answer of `decideParallelismAndInputInfos` (docs/DESIGN.md, contract 6): Flink 1.19's
 * `DefaultVertexParallelismAndInputInfosDecider`, fed with the bytes the finished producers of one job
 * vertex wrote. Plain JSON data both ways: a decision is logged and replayed, never recomputed.
 *
 * Not in the contract, on purpose: a vertex's own max parallelism apart from `maxParallelism` (Flink's
 * `vertexMaxParallelism`; the engine passes one bound), Flink 1.20's vertex min parallelism, and Flink
 * 2.x's skewed-subpartition splitting (issue 14's step 3 builds on this decider, it does not change it).
 */

/** An inclusive range of indexes, `[start, end]` (Flink's `IndexRange`). */
export interface IndexRange {
  readonly start: number;
  readonly end: number;
}

/** One consumed input of the vertex being decided: one intermediate result, with its bytes. */
export interface ConsumedInputInfo {
  /** How the consumer is connected to the producers (Flink's `DistributionPattern`). */
  readonly distribution: DistributionPattern;
  /**
   * Every consumer subtask reads the whole result (a broadcast `ALL_TO_ALL` edge). Its partitions have
   * exactly one subpartition, and its bytes do not count toward the decided parallelism (Flink's
   * "broadcast results are usually very small"). Only `ALL_TO_ALL` inputs can be broadcast.
   * @defaultValue false
   */
  readonly broadcast?: boolean;
  /**
   * `bytes[p][s]`: bytes of subpartition `s` of result partition `p` (the partition written by producer
   * subtask `p`). At least one partition, each with at least one subpartition. Every partition of an
   * `ALL_TO_ALL` input has the same number of subpartitions, the same for all its non-broadcast
   * `ALL_TO_ALL` inputs (the consumer's key-group count, in the engine).
   */
  readonly bytes: readonly (readonly number[])[];
}

/** What `decideParallelismAndInputInfos` decides from. */
export interface ParallelismAndInputInfosRequest {
  /** The consumed inputs, in the vertex's input order. None: a source vertex. */
  readonly inputs: readonly ConsumedInputInfo[];
  /**
   * Lower bound of a decided parallelism, an integer in [1, 32768]
   * (Flink's `execution.batch.adaptive.auto-parallelism.min-parallelism`).
   * Required; Flink's default is `DEFAULT_ADAPTIVE_BATCH_OPTIONS.minParallelism` (1).
   */
  readonly minParallelism: number;
  /**
   * Upper bound of a decided parallelism, an integer in [minParallelism, 32768]
   * (Flink's `execution.batch.adaptive.auto-parallelism.max-parallelism`).
   * Required; Flink's default is `DEFAULT_ADAPTIVE_BATCH_OPTIONS.maxParallelism` (128).
   */
  readonly maxParallelism: number;
  /**
   * Bytes each subtask is expected to read, a safe integer >= 1
   * (Flink's `execution.batch.adaptive.auto-parallelism.avg-data-volume-per-task`).
   * Required; Flink's default is `DEFAULT_ADAPTIVE_BATCH_OPTIONS.dataVolumePerTaskBytes` (16 MiB).
   */
  readonly dataVolumePerTaskBytes: number;
  /**
   * A parallelism already decided (set explicitly on the vertex, or logged by an earlier job master): it
   * is kept as it is, whatever the bounds, and only the input ranges are computed. An integer in [1, 32768].
   * @defaultValue undefined (decide it)
   */
  readonly initialParallelism?: number;
  /**
   * Parallelism of a source vertex without `initialParallelism`, capped at `maxParallelism`
   * (Flink's `execution.batch.adaptive.auto-parallelism.default-source-parallelism`). An integer in [1, 32768].
   * @defaultValue `maxParallelism` (Flink 1.19, FLINK-34143)
   */
  readonly defaultSourceParallelism?: number;
}

/** What one consumer subtask reads of one input (Flink's `ExecutionVertexInputInfo`). */
export interface SubtaskInputInfo {
  /** The result partitions it reads (producer subtask indexes). */
  readonly partitions: IndexRange;
  /** The subpartitions it reads of each of those partitions. */
  readonly subpartitions: IndexRange;
}

/** What the subtasks read of one input (Flink's `JobVertexInputInfo`): `subtasks[i]` is subtask `i`'s. */
export interface VertexInputInfo {
  readonly subtasks: readonly SubtaskInputInfo[];
}

/** The decision (Flink's `ParallelismAndInputInfos`): `inputs[i]` answers `request.inputs[i]`. */
export interface ParallelismAndInputInfos {
  readonly parallelism: number;
  readonly inputs: readonly VertexInputInfo[];
}

/**
 * Flink 1.19's defaults for the adaptive batch scheduler's `execution.batch.adaptive.auto-parallelism.*`
 * options. The default source parallelism has no constant: unset, it is the max parallelism.
 */
export const DEFAULT_ADAPTIVE_BATCH_OPTIONS = Object.freeze({
  /** `min-parallelism`: 1. */
  minParallelism: 1,
  /** `max-parallelism`: 128 (Flink falls back to `parallelism.default` when that is set instead). */
  maxParallelism: 128,
  /** `avg-data-volume-per-task`: 16 MiB. */
  dataVolumePerTaskBytes: 16 * 1024 * 1024,
});

/**
 * Flink's `MAX_NUM_SUBPARTITIONS_PER_TASK_CONSUME`: the most subpartitions of one result that one subtask
 * may read (partitions × subpartitions of its range). Raises the decided parallelism when a result has more.
 */
export const MAX_SUBPARTITIONS_PER_TASK = 32768;
