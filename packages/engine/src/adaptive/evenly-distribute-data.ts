import { adjustToClosestLegalParallelism } from './adjust-to-legal-parallelism.js';
import { MAX_SUBPARTITIONS_PER_TASK, type IndexRange, type ParallelismAndInputInfos } from './parallelism-and-input-infos.js';
import { computeSubpartitionRanges, countSubpartitionRanges } from './subpartition-ranges.js';
import type { ResolvedInput } from './validate-parallelism-request.js';

/** What `evenlyDistributeData` decides from: all inputs `ALL_TO_ALL`, at least one not broadcast. */
export interface EvenlyDistributeDataRequest {
  readonly inputs: readonly ResolvedInput[];
  readonly minParallelism: number;
  readonly maxParallelism: number;
  readonly dataVolumePerTaskBytes: number;
}

/**
 * Flink's `decideParallelismAndEvenlyDistributeData`: sums each subpartition's bytes over the partitions
 * of every non-broadcast input, cuts consecutive ranges of about `dataVolumePerTaskBytes` (each at most
 * `MAX_SUBPARTITIONS_PER_TASK / partitions` subpartitions wide), and bisects the limit when the range count
 * is outside [min, max]. Every subtask reads all partitions of every input, its range of subpartitions
 * (subpartition 0 of a broadcast input). `undefined` when no limit gives a legal parallelism.
 */
export function evenlyDistributeData(request: EvenlyDistributeDataRequest): ParallelismAndInputInfos | undefined {
  const { inputs, minParallelism, maxParallelism, dataVolumePerTaskBytes } = request;
  const nonBroadcast = inputs.filter((input) => !input.broadcast);
  const subpartitionCount = nonBroadcast[0]?.bytes[0]?.length ?? 0;
  const bytesBySubpartition = new Array<number>(subpartitionCount).fill(0);
  let maxPartitions = 0;
  for (const input of nonBroadcast) {
    maxPartitions = Math.max(maxPartitions, input.bytes.length);
    for (const partition of input.bytes) partition.forEach((bytes, s) => (bytesBySubpartition[s] = (bytesBySubpartition[s] ?? 0) + bytes));
  }
  // Java's int division: 0 when there are more partitions than MAX_SUBPARTITIONS_PER_TASK (one subpartition a range).
  const maxRangeSize = Math.trunc(MAX_SUBPARTITIONS_PER_TASK / maxPartitions);

  let ranges = computeSubpartitionRanges(bytesBySubpartition, dataVolumePerTaskBytes, maxRangeSize);
  if (ranges.length < minParallelism || ranges.length > maxParallelism) {
    const adjusted = adjustToClosestLegalParallelism({
      currentLimit: dataVolumePerTaskBytes,
      currentParallelism: ranges.length,
      minParallelism,
      maxParallelism,
      minLimit: bytesBySubpartition.reduce((min, bytes) => Math.min(min, bytes), Number.POSITIVE_INFINITY),
      maxLimit: bytesBySubpartition.reduce((sum, bytes) => sum + bytes, 0),
      parallelismOf: (limit) => countSubpartitionRanges(bytesBySubpartition, limit, maxRangeSize),
      rangesOf: (limit) => computeSubpartitionRanges(bytesBySubpartition, limit, maxRangeSize),
    });
    if (adjusted === undefined) return undefined;
    ranges = adjusted;
  }
  return { parallelism: ranges.length, inputs: inputs.map((input) => allPartitionsWithRanges(input, ranges)) };
}

function allPartitionsWithRanges(input: ResolvedInput, ranges: readonly IndexRange[]) {
  const partitions: IndexRange = { start: 0, end: input.bytes.length - 1 };
  return { subtasks: ranges.map((range) => ({ partitions, subpartitions: input.broadcast ? { start: 0, end: 0 } : range })) };
}
