import { checkCheckpointable } from '../checkpoint/check-checkpointable.js';
import { invalidEngineArgument } from '../errors/engine-error.js';
import { checkUnboundedCommits } from '../graph/check-unbounded-sinks.js';
import type { JobPlan } from '../graph/job-plan.js';
import { checkApproximateAdaptive, checkApproximateSinks } from './check-approximate-recovery.js';

/** A checkpointed (streaming) job with adaptive parallelism: refused, naming the option. */
export function checkCheckpointedAdaptive(checkpointed: boolean, adaptive: unknown): void {
  if (checkpointed && adaptive !== undefined) throw invalidEngineArgument('checkpointing', 'a checkpointed (streaming) job cannot have adaptive parallelism');
}

/**
 * The refusals `runJob` makes of a planned job before anything starts, given how it runs: checkpointed (or
 * approximate, which checkpoints at least once), with adaptive parallelism or not. `weft run --plan-only`
 * makes them too, so a plan it shows is one the run would accept. Throws the run's own errors:
 * WEFT_ERR_INVALID_ARGUMENT, WEFT_ERR_APPROXIMATE_REFUSED, WEFT_ERR_INVALID_JOB.
 */
export function checkPlanRunnable(request: { readonly plan: JobPlan; readonly checkpointed: boolean; readonly adaptive: unknown }): void {
  const { plan, checkpointed, adaptive } = request;
  checkCheckpointedAdaptive(checkpointed, adaptive);
  if (plan.exchangeMode === 'ALL_EDGES_PIPELINED_APPROXIMATE') {
    checkApproximateAdaptive(adaptive);
    checkApproximateSinks(plan);
  }
  if (checkpointed) checkCheckpointable(plan);
  checkUnboundedCommits(plan.logical, checkpointed);
}
