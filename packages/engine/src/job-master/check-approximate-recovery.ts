import type { CheckpointingOptions } from '../checkpoint/checkpointing-options.js';
import { EngineError } from '../errors/engine-error.js';

/** `WEFT_ERR_APPROXIMATE_REFUSED` naming both options. */
function refused(conflictsWith: string, why: string): EngineError {
  return new EngineError('WEFT_ERR_APPROXIMATE_REFUSED', `approximate recovery (exchangeMode ALL_EDGES_PIPELINED_APPROXIMATE, weft run --approximate-recovery) cannot be combined with ${conflictsWith}: ${why}`, {
    context: { option: 'exchangeMode', conflictsWith },
  });
}

/**
 * Refuses, before anything runs, an approximate job (ALL_EDGES_PIPELINED_APPROXIMATE) with what it cannot
 * honour: exactly-once checkpoints (a failure loses the records in flight to and from the failed task, so
 * no sink can be exactly-once either: the text sink of a checkpointed job is only as exact as its
 * checkpoints) and executors outside this process (the approximate partitions live in the in-memory
 * shuffle of the job master's process). Returns the checkpointing options to run with: at-least-once
 * unless a mode was given.
 */
export function checkApproximateRecovery(request: { readonly executorKind: string; readonly checkpointing: CheckpointingOptions | undefined }): CheckpointingOptions | undefined {
  const { executorKind, checkpointing } = request;
  if (executorKind !== 'inprocess') throw refused(`executor '${executorKind}' (weft run --workers/--cluster)`, 'its approximate partitions live in the in-memory shuffle of one process; run it in process (executor inprocess)');
  if (checkpointing === undefined) return undefined;
  if (checkpointing.mode === 'exactly-once') throw refused("checkpointing.mode 'exactly-once' (weft run --checkpoint-mode exactly-once)", 'a failed task loses the records in flight, so neither its state nor its sinks can be exactly-once; use at-least-once checkpoints');
  return { ...checkpointing, mode: 'at-least-once' };
}
