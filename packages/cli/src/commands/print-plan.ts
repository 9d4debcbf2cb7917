import { availableParallelism } from 'node:os';
import { type AdaptiveBatchOptions, checkPlanRunnable, type ExchangeMode, loadJob, resolveAdaptiveBatchOptions } from '@weft/engine';
import { type CliIo, ExitCode } from '../command.js';

/** `--plan-only`: the job's topology (contract 1) — pretty for a person, one line with --json — once the run's refusals of the plan passed. */
export async function printPlan(
  jobPath: string,
  request: { args: string[]; parallelism: number | undefined; adaptive: AdaptiveBatchOptions | undefined; exchangeMode: ExchangeMode | undefined; checkpointed: boolean; cwd: string; json: boolean },
  io: CliIo,
): Promise<number> {
  // --parallelism auto: sources sized from their inputs (which must exist then), undecided vertices at their reserved size
  const adaptive = request.adaptive === undefined ? undefined : { options: resolveAdaptiveBatchOptions(request.adaptive) };
  const loaded = await loadJob({
    ...(adaptive === undefined ? {} : { adaptive }),
    job: jobPath,
    args: request.args,
    parallelism: request.parallelism ?? availableParallelism(),
    cwd: request.cwd,
    // a plan can be shown before its input exists
    checkInputs: false,
    ...(request.exchangeMode === undefined ? {} : { exchangeMode: request.exchangeMode }),
    // as runJob plans a checkpointed job that names no exchange mode
    ...(request.checkpointed ? { defaultExchangeMode: 'ALL_EDGES_PIPELINED' as const } : {}),
  });
  // a plan the run would refuse is refused here too, with the run's error
  checkPlanRunnable({ plan: loaded.plan, checkpointed: request.checkpointed, adaptive });
  io.stdout.write(request.json ? `${JSON.stringify(loaded.plan.topology)}\n` : `${JSON.stringify(loaded.plan.topology, null, 2)}\n`);
  return ExitCode.OK;
}
