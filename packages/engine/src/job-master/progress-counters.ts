import type { ExecutionTopology } from '../execution/execution-topology.js';
import type { TaskMetrics } from '../runtime/task-deployment.js';
import type { TaskResult } from '../runtime/task-events.js';
import type { TaskProgress } from '../runtime/task-events.js';
import type { AdaptiveDecisions } from './adaptive-decisions.js';
import type { JobProgress, VertexProgress } from './job-progress.js';
import type { RegionStates } from './region-states.js';
import type { TaskAttempts } from './task-attempts.js';

export interface ProgressCountersRequest {
  readonly topology: ExecutionTopology;
  /** The finished attempt's result of each execution vertex, if it finished. */
  readonly results: readonly (TaskResult | undefined)[];
  /** Live counters of running attempts, by attempt id. */
  readonly live: ReadonlyMap<string, TaskMetrics>;
  /** The current attempt id of execution vertex `v`. */
  readonly attemptIdOf: (v: number) => string;
}

/**
 * Records read by sources and records/bytes shuffled, over finished and running attempts; and per job
 * vertex (topology order) the records its subtasks read and wrote to exchanges.
 */
export function progressCounters(request: ProgressCountersRequest): { recordsRead: number; recordsShuffled: number; bytesShuffled: number; vertices: VertexProgress[] } {
  const { topology, results, live } = request;
  let recordsRead = 0;
  let recordsShuffled = 0;
  let bytesShuffled = 0;
  const vertices: { id: string; recordsIn: number; recordsOut: number }[] = topology.vertices.map((v) => ({ id: v.id, recordsIn: 0, recordsOut: 0 }));
  const add = (metrics: TaskMetrics, vertex: number, source: boolean): void => {
    if (source) recordsRead += metrics.recordsIn;
    const totals = vertices[vertex] as { recordsIn: number; recordsOut: number };
    totals.recordsIn += metrics.recordsIn;
    for (const o of metrics.outputs) {
      recordsShuffled += o.records;
      bytesShuffled += o.bytes;
      totals.recordsOut += o.records;
    }
  };
  for (let v = 0; v < topology.executionVertexCount; v++) {
    const jobVertex = topology.jobVertexOf(v);
    const source = jobVertex.inputs.length === 0;
    const result = results[v];
    if (result !== undefined) {
      add(result.metrics, jobVertex.index, source);
      continue;
    }
    const metrics = live.get(request.attemptIdOf(v));
    if (metrics !== undefined) add(metrics, jobVertex.index, source);
  }
  return { recordsRead, recordsShuffled, bytesShuffled, vertices };
}

/** A running job's progress (JobScheduler.progress): tasks and regions finished of all (skipped reserved subtasks left out), and the counters. */
export function jobProgressOf(request: {
  readonly topology: ExecutionTopology;
  readonly slots: { progress(): readonly TaskProgress[] };
  readonly attempts: TaskAttempts;
  readonly decisions: AdaptiveDecisions;
  readonly states: RegionStates;
  readonly failures: number;
}): Omit<JobProgress, 'elapsedMs'> {
  const { topology, attempts, states } = request;
  const live = new Map<string, TaskMetrics>();
  for (const p of request.slots.progress()) live.set(p.attemptId, p.metrics);
  const counters = progressCounters({ topology, results: attempts.results, live, attemptIdOf: (v) => attempts.attemptIdOf(v) });
  const skipped = request.decisions.skippedCounts((v) => attempts.isDone(v));
  return {
    tasksFinished: attempts.finishedCount - skipped.done,
    tasksTotal: topology.executionVertexCount - skipped.total,
    tasksRunning: attempts.running.size,
    regionsFinished: states.finished,
    regionsTotal: states.count,
    ...counters,
    failures: request.failures,
  };
}
