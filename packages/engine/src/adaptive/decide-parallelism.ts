import { MAX_SUBPARTITIONS_PER_TASK } from './parallelism-and-input-infos.js';
import type { ResolvedInput } from './validate-parallelism-request.js';

/** What `decideParallelism` needs. */
export interface DecideParallelismRequest {
  readonly inputs: readonly ResolvedInput[];
  readonly minParallelism: number;
  readonly maxParallelism: number;
  readonly dataVolumePerTaskBytes: number;
}

/**
 * Flink's `DefaultVertexParallelismAndInputInfosDecider.decideParallelism`: the parallelism from bytes
 * alone, used before subpartitions are spread evenly. Broadcast inputs do not count (only broadcast
 * inputs: the min parallelism). `ceil(bytes / dataVolumePerTask)`, raised so that no subtask reads more
 * than `MAX_SUBPARTITIONS_PER_TASK` subpartitions of one input, then clamped to [min, max].
 */
export function decideParallelism(request: DecideParallelismRequest): number {
  const nonBroadcast = request.inputs.filter((input) => !input.broadcast);
  if (nonBroadcast.length === 0) return request.minParallelism;

  let totalBytes = 0;
  let maxSubpartitions = 0;
  for (const input of nonBroadcast) {
    let subpartitions = 0;
    for (const partition of input.bytes) {
      subpartitions += partition.length;
      for (const bytes of partition) totalBytes += bytes;
    }
    maxSubpartitions = Math.max(maxSubpartitions, subpartitions);
  }
  const byBytes = Math.ceil(totalBytes / request.dataVolumePerTaskBytes);
  const bySubpartitionLimit = Math.ceil(maxSubpartitions / MAX_SUBPARTITIONS_PER_TASK);
  const parallelism = Math.max(byBytes, bySubpartitionLimit);
  if (parallelism < request.minParallelism) return request.minParallelism;
  if (parallelism > request.maxParallelism) return request.maxParallelism;
  return parallelism;
}
