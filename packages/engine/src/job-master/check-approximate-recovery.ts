import type { CheckpointingOptions } from '../checkpoint/checkpointing-options.js';
import { EngineError } from '../errors/engine-error.js';
import type { JobPlan } from '../graph/job-plan.js';

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
 * checkpoints). Returns the checkpointing options to run with: at-least-once unless a mode was given. Any
 * executor runs it (in process, local workers, a cluster's task executors) as long as its executors serve
 * each other's pipelined partitions (checkApproximateExecutors, once they started): the job master
 * registers each approximate partition and tells every executor a restarted producer's new attempt
 * (TaskExecutor.updatePartitionInfo).
 */
export function checkApproximateRecovery(request: { readonly checkpointing: CheckpointingOptions | undefined }): CheckpointingOptions | undefined {
  const { checkpointing } = request;
  if (checkpointing === undefined) return undefined;
  if (checkpointing.mode === 'exactly-once') throw refused("checkpointing.mode 'exactly-once' (weft run --checkpoint-mode exactly-once)", 'a failed task loses the records in flight, so neither its state nor its sinks can be exactly-once; use at-least-once checkpoints');
  return { ...checkpointing, mode: 'at-least-once' };
}

/**
 * Refuses, before anything runs, an approximate job that writes to an exactly-once sink — a
 * two-phase-commit sink (`sinkTo`, e.g. `fileCommitSink`) of the default `deliveryGuarantee`, named by
 * its operator: the records a failed task loses never reach it, so it would commit an output that misses
 * them while promising each record exactly once. A sink declared `deliveryGuarantee: 'none'` runs.
 */
export function checkApproximateSinks(plan: JobPlan): void {
  // anything not declared 'none' is exactly-once (fails closed for a spec made without the field)
  const nodes = plan.logical.nodes.filter((node) => node.spec.kind === 'two-phase-commit-sink' && node.spec.deliveryGuarantee !== 'none');
  if (nodes.length === 0) return;
  // two unnamed sinkTo are both "sinkTo": their uids (sinkTo, sinkTo-2) tell them apart
  const repeated = (name: string): boolean => nodes.filter((n) => n.name === name).length > 1;
  const sinks = nodes.map((node) => (repeated(node.name) ? `${JSON.stringify(node.name)} (uid ${node.uid})` : JSON.stringify(node.name)));
  throw refused(
    nodes.length === 1 ? `the exactly-once sink ${sinks[0] as string} (a two-phase-commit sink: DataSet.sinkTo)` : `the exactly-once sinks ${sinks.join(', ')} (two-phase-commit sinks: DataSet.sinkTo)`,
    "a failed task loses the records in flight, so the sink cannot get each record exactly once; declare that it promises nothing of them (sinkTo(…, { deliveryGuarantee: 'none' })), write to collect or (after a bounded source) writeText, or run without approximate recovery",
  );
}

/**
 * Refuses an approximate job with adaptive parallelism (`adaptive`, `weft run --parallelism auto`): an
 * operator whose parallelism is decided at run time reads its inputs only once their producers finished
 * (blocking edges), so nothing would be pipelined to recover approximately — the job would run blocking
 * while calling itself approximate.
 */
export function checkApproximateAdaptive(adaptive: unknown): void {
  if (adaptive === undefined) return;
  throw refused('adaptive parallelism (RunJobOptions adaptive, weft run --parallelism auto)', 'an operator whose parallelism is decided at run time reads its inputs once their producers finished (blocking edges), so there is no pipelined stream to recover approximately; give the job a parallelism');
}

/**
 * Refuses, once its executors started, an approximate job on several executors that do not serve each
 * other's pipelined partitions (no `shuffleLocation`: e.g. worker processes over the in-memory pipelined
 * shuffle): its tasks, a region each, would read partitions produced on another executor.
 */
export function checkApproximateExecutors(executors: readonly { readonly id: string; readonly shuffleLocation?: unknown }[]): void {
  if (executors.length < 2) return;
  const local = executors.find((e) => e.shuffleLocation === undefined);
  if (local === undefined) return;
  throw refused(`${executors.length} task executors whose pipelined shuffle serves only its own (executor ${local.id}; weft run --workers N --pipelined-shuffle memory)`, 'its tasks, a region each, read partitions produced on other executors; use a pipelined shuffle that serves other processes (weft run --pipelined-shuffle network)');
}
