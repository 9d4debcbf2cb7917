import type { ExecutionTopology } from '../execution/execution-topology.js';
import type { JobPlan } from '../graph/job-plan.js';
import type { TaskResult } from '../runtime/task-events.js';
import type { JobEventOf } from './job-events.js';
import { blockingOutputsOf } from './partition-states.js';

export interface TaskFinishedEventRequest {
  readonly plan: JobPlan;
  readonly topology: ExecutionTopology;
  /** The execution vertex (ExecutionTopology numbering) and its attempt that finished. */
  readonly v: number;
  readonly attempt: number;
  readonly result: TaskResult;
}

/**
 * The `task-finished` event of a finished attempt: the blocking partitions it committed (its
 * non-pipelined outputs), each with the framed bytes the task's metrics say it wrote there, its metrics,
 * and what its sinks wrote (a resumed run publishes from them).
 */
export function taskFinishedEvent(request: TaskFinishedEventRequest): JobEventOf<'task-finished'> {
  const { plan, topology, v, attempt, result } = request;
  const partitions = blockingOutputsOf(topology, v).map((p) => {
    const edgeId = topology.edgeOfPartition(p).id;
    const planEdge = plan.edges.find((e) => e.id === edgeId)?.index;
    const output = result.metrics.outputs.find((o) => o.edgeIndex === planEdge);
    const bytes = output?.bytes;
    const subpartitionBytes = output?.subpartitionBytes;
    return { partitionId: topology.resultPartitionId(p), ...(bytes === undefined ? {} : { bytes }), ...(subpartitionBytes === undefined ? {} : { subpartitionBytes }) };
  });
  return { type: 'task-finished', data: { executionVertexId: topology.executionVertexId(v), attempt, partitions, metrics: result.metrics, sinks: result.sinks, durationMs: result.durationMs } };
}
