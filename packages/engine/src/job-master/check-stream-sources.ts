import { invalidEngineArgument } from '../errors/engine-error.js';
import type { JobPlan } from '../graph/job-plan.js';

/**
 * Refuses, before anything runs, a job with an external stream source (`ctx.readRedisStream`) on executors
 * outside the job master's process: its StreamConnector (RunJobOptions.streamConnectors) has no reference a
 * worker process or a cluster executor could rebuild it from, so the source would fail there once started.
 */
export function checkStreamSourcesInProcess(plan: JobPlan, executorKind: string): void {
  if (executorKind === 'inprocess') return;
  for (const vertex of plan.vertices) {
    const head = vertex.operators[0]?.node;
    if (head?.spec.kind !== 'stream-source') continue;
    throw invalidEngineArgument('executor', `source ${JSON.stringify(head.name)} (ctx.readRedisStream) runs in process only yet, not on ${executorKind} executors: its stream connector cannot be rebuilt there; run the job in process (weft run without --workers / --cluster)`);
  }
}
