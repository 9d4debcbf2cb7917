import { invalidEngineArgument } from '../errors/engine-error.js';
import type { IndexRange, SubtaskInputInfo, VertexInputInfo } from './parallelism-and-input-infos.js';
import type { ResolvedInput } from './validate-parallelism-request.js';

/**
 * Flink's `VertexInputInfoComputationUtils.computeVertexInputInfos` for a dynamic graph: the input ranges
 * of `parallelism` subtasks when subpartitions (not bytes) are spread evenly. `ALL_TO_ALL`: every subtask
 * reads all partitions and its share of the subpartitions (a broadcast input: subpartition 0). `POINTWISE`:
 * partitions are spread over the subtasks, and when there are fewer partitions than subtasks the
 * subtasks sharing a partition split its subpartitions.
 */
export function evenlyDistributeSubpartitions(inputs: readonly ResolvedInput[], parallelism: number): VertexInputInfo[] {
  return inputs.map((input, i) => {
    const field = `request.inputs[${i}]`;
    return input.distribution === 'POINTWISE'
      ? pointwiseInputInfo(field, input, parallelism)
      : allToAllInputInfo(field, input, parallelism);
  });
}

/** Flink's `computeVertexInputInfoForAllToAll`. */
function allToAllInputInfo(field: string, input: ResolvedInput, parallelism: number): VertexInputInfo {
  const partitions: IndexRange = { start: 0, end: input.bytes.length - 1 };
  const subpartitionCount = subpartitionsOf(input, 0);
  const subtasks: SubtaskInputInfo[] = [];
  for (let i = 0; i < parallelism; i++) {
    const subpartitions = input.broadcast
      ? { start: 0, end: 0 }
      : consumedSubpartitionRange({ field: `${field}.bytes[0]`, consumerIndex: i, consumers: parallelism, subpartitionCount });
    subtasks.push({ partitions, subpartitions });
  }
  return { subtasks };
}

/** Flink's `computeVertexInputInfoForPointwise`. */
function pointwiseInputInfo(field: string, input: ResolvedInput, parallelism: number): VertexInputInfo {
  const sources = input.bytes.length;
  const subtasks: SubtaskInputInfo[] = [];
  if (sources >= parallelism) {
    for (let index = 0; index < parallelism; index++) {
      const start = Math.floor((index * sources) / parallelism);
      const end = Math.floor(((index + 1) * sources) / parallelism);
      const subpartitions = consumedSubpartitionRange({
        field: `${field}.bytes[${start}]`,
        consumerIndex: index,
        consumers: 1,
        subpartitionCount: subpartitionsOf(input, start),
      });
      subtasks.push({ partitions: { start, end: end - 1 }, subpartitions });
    }
  } else {
    for (let partition = 0; partition < sources; partition++) {
      const start = Math.floor((partition * parallelism + sources - 1) / sources);
      const end = Math.floor(((partition + 1) * parallelism + sources - 1) / sources);
      for (let i = start; i < end; i++) {
        const subpartitions = consumedSubpartitionRange({
          field: `${field}.bytes[${partition}]`,
          consumerIndex: i,
          consumers: end - start,
          subpartitionCount: subpartitionsOf(input, partition),
        });
        subtasks.push({ partitions: { start: partition, end: partition }, subpartitions });
      }
    }
  }
  return { subtasks };
}

/** What `consumedSubpartitionRange` splits. */
interface ConsumedSubpartitionRangeRequest {
  /** The partition whose subpartitions are split, for the error message. */
  readonly field: string;
  /** The consumer subtask's index; Flink takes it modulo `consumers`. */
  readonly consumerIndex: number;
  readonly consumers: number;
  readonly subpartitionCount: number;
}

/**
 * Flink's `computeConsumedSubpartitionRange` (non-broadcast, dynamic graph): consumer `k` of `n` reads
 * `[k * count / n, (k + 1) * count / n - 1]`. Flink asserts `n <= count`; here that is an invalid
 * argument naming the partition: every subtask must read at least one subpartition.
 */
export function consumedSubpartitionRange(request: ConsumedSubpartitionRangeRequest): IndexRange {
  const { consumers, subpartitionCount } = request;
  const index = request.consumerIndex % consumers;
  if (consumers > subpartitionCount) {
    throw invalidEngineArgument(
      request.field,
      `${consumers} subtasks would share its ${subpartitionCount} subpartitions; each must read at least one, so producers must write at least as many subpartitions as the parallelism can reach (the engine writes maxParallelism)`,
    );
  }
  const start = Math.floor((index * subpartitionCount) / consumers);
  const nextStart = Math.floor(((index + 1) * subpartitionCount) / consumers);
  return { start, end: nextStart - 1 };
}

function subpartitionsOf(input: ResolvedInput, partition: number): number {
  return input.bytes[partition]?.length ?? 0;
}
