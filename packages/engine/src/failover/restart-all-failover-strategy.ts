import type { ExecutionTopology } from '../execution/execution-topology.js';
import type { FailoverStrategy, TaskFailure } from './failover-strategy.js';
import { requireLostPartitions } from './lost-partitions.js';

/** Restarts every task of the job, whatever failed (Flink's RestartAllFailoverStrategy). */
export class RestartAllFailoverStrategy implements FailoverStrategy {
  readonly name = 'all';
  readonly #topology: ExecutionTopology;

  constructor(topology: ExecutionTopology) {
    this.#topology = topology;
  }

  verticesToRestart(failure: TaskFailure): Int32Array {
    this.#topology.requireExecutionVertex(failure.failedVertex, 'failedVertex');
    requireLostPartitions(this.#topology, failure.lostPartitions);
    const all = new Int32Array(this.#topology.executionVertexCount);
    for (let v = 0; v < all.length; v++) all[v] = v;
    return all;
  }

  tasksToRestart(failure: TaskFailure): string[] {
    this.verticesToRestart(failure);
    return this.#topology.executionVertexIds();
  }
}
