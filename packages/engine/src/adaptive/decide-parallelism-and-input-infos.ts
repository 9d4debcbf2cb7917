import { decideParallelism } from './decide-parallelism.js';
import { evenlyDistributeData } from './evenly-distribute-data.js';
import { evenlyDistributeSubpartitions } from './evenly-distribute-subpartitions.js';
import type { ParallelismAndInputInfos, ParallelismAndInputInfosRequest } from './parallelism-and-input-infos.js';
import { type ResolvedParallelismRequest, validateParallelismRequest } from './validate-parallelism-request.js';

/**
 * docs/DESIGN.md contract 6: the parallelism of a job vertex and the range of partitions and subpartitions
 * each of its subtasks reads, from the bytes its finished producers wrote — Flink 1.19's
 * `DefaultVertexParallelismAndInputInfosDecider`, step by step:
 *
 * - a source vertex (no inputs): `initialParallelism`, else `defaultSourceParallelism` capped at
 *   `maxParallelism`;
 * - no `initialParallelism`, every input `ALL_TO_ALL` and not all broadcast: the data is spread evenly
 *   (consecutive subpartition ranges of about `dataVolumePerTaskBytes`, the limit bisected until the
 *   range count is within [min, max]);
 * - otherwise, or when no such limit exists: the parallelism is `initialParallelism` or decided from the
 *   bytes, and the subpartitions are spread evenly (`VertexInputInfoComputationUtils`).
 *
 * A pure function of its request: the same bytes always give the same answer. The request is validated
 * first; a bad one throws `WEFT_ERR_INVALID_ARGUMENT` whose `context.field` names the field (e.g.
 * `request.inputs[0].bytes[2]`), as does a parallelism that would leave a subtask without a subpartition.
 */
export function decideParallelismAndInputInfos(request: ParallelismAndInputInfosRequest): ParallelismAndInputInfos {
  const resolved = validateParallelismRequest(request);
  const { inputs, initialParallelism, minParallelism, maxParallelism } = resolved;
  if (inputs.length === 0) {
    return { parallelism: initialParallelism ?? Math.min(resolved.defaultSourceParallelism, maxParallelism), inputs: [] };
  }
  const allToAll = inputs.every((input) => input.distribution === 'ALL_TO_ALL');
  const allBroadcast = inputs.every((input) => input.broadcast);
  if (initialParallelism === undefined && allToAll && !allBroadcast) {
    const decided = evenlyDistributeData({ inputs, minParallelism, maxParallelism, dataVolumePerTaskBytes: resolved.dataVolumePerTaskBytes });
    if (decided !== undefined) return decided;
  }
  return decideAndEvenlyDistributeSubpartitions(resolved);
}

/** Flink's `decideParallelismAndEvenlyDistributeSubpartitions`. */
function decideAndEvenlyDistributeSubpartitions(request: ResolvedParallelismRequest): ParallelismAndInputInfos {
  const parallelism = request.initialParallelism ?? decideParallelism(request);
  return { parallelism, inputs: evenlyDistributeSubpartitions(request.inputs, parallelism) };
}
