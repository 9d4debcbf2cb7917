import type { ExecutionTopology } from '../execution/execution-topology.js';
import type { JobPlan } from '../graph/job-plan.js';
import type { JobEvent } from './job-events.js';
import type { JobSchedulerOptions } from './job-scheduler-options.js';

/** `job-submitted`, the first event of a run: what was submitted (module, hash, args, options), the topology, and where its text sinks stage. */
export function jobSubmittedEvent(plan: JobPlan, topology: ExecutionTopology, submission: JobSchedulerOptions['submission'], sinkTempDirs: readonly string[]): JobEvent {
  return {
    type: 'job-submitted',
    data: {
      name: plan.name,
      ...(submission ?? { jobModule: null, jobModuleHash: null, args: [], options: null }),
      topology: topology.topology,
      tasksTotal: topology.executionVertexCount,
      ...(sinkTempDirs.length > 0 ? { sinkTempDirs: [...sinkTempDirs] } : {}),
      vertexNames: Object.fromEntries(plan.vertices.map((v) => [v.id, v.name])),
    },
  };
}
