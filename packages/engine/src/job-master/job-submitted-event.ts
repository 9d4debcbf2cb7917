import { isAbsolute, resolve } from 'node:path';
import type { TwoPhaseCommitStaging } from '../api/two-phase-commit-sink.js';
import type { ExecutionTopology } from '../execution/execution-topology.js';
import type { JobPlan } from '../graph/job-plan.js';
import type { JobEvent } from './job-events.js';
import type { JobSchedulerOptions } from './job-scheduler-options.js';

/** Where the plan's two-phase-commit sinks stage (their factories' `staging`), a local `file-commit` dir resolved against `cwd` (a `<scheme>://` one as it is). */
export function twoPhaseStagingOf(plan: JobPlan, cwd: string): { sink: string; staging: TwoPhaseCommitStaging }[] {
  const out: { sink: string; staging: TwoPhaseCommitStaging }[] = [];
  for (const node of plan.logical.nodes) {
    if (node.spec.kind !== 'two-phase-commit-sink') continue;
    const staging = node.spec.create.staging;
    if (staging === undefined || staging === null || typeof staging.kind !== 'string') continue;
    const dir = staging['dir'];
    const local = typeof dir === 'string' && !isAbsolute(dir) && !/^[a-z][a-z0-9+.-]*:\/\//iu.test(dir);
    out.push({ sink: node.name, staging: staging.kind === 'file-commit' && local ? { ...staging, dir: resolve(cwd, dir) } : staging });
  }
  return out;
}

/** `job-submitted`, the first event of a run: what was submitted (module, hash, args, options), the topology, and where its text sinks and two-phase-commit sinks stage. */
export function jobSubmittedEvent(plan: JobPlan, topology: ExecutionTopology, submission: JobSchedulerOptions['submission'], staging: { readonly sinkTempDirs: readonly string[]; readonly cwd: string }): JobEvent {
  const { sinkTempDirs } = staging;
  const twoPhaseStaging = twoPhaseStagingOf(plan, staging.cwd);
  return {
    type: 'job-submitted',
    data: {
      name: plan.name,
      ...(submission ?? { jobModule: null, jobModuleHash: null, args: [], options: null }),
      topology: topology.topology,
      tasksTotal: topology.executionVertexCount,
      ...(sinkTempDirs.length > 0 ? { sinkTempDirs: [...sinkTempDirs] } : {}),
      ...(twoPhaseStaging.length > 0 ? { twoPhaseStaging } : {}),
      vertexNames: Object.fromEntries(plan.vertices.map((v) => [v.id, v.name])),
    },
  };
}
