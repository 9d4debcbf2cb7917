import { EngineError } from '../errors/engine-error.js';
import type { ExecutionTopology } from '../execution/execution-topology.js';
import type { FailoverStrategy, TaskFailure } from './failover-strategy.js';
import { requireLostPartitions } from './lost-partitions.js';

/**
 * Restarts only the failed task (Flink's RestartIndividualFailoverStrategy). Correct only when tasks share
 * no data: a restarted producer would leave its consumers with a partial input, a restarted consumer could
 * not re-read pipelined input. So the constructor refuses (`WEFT_ERR_FAILOVER_STRATEGY_NOT_APPLICABLE`) a
 * job with any edge.
 */
export class RestartIndividualFailoverStrategy implements FailoverStrategy {
  readonly name = 'individual';
  readonly #topology: ExecutionTopology;

  constructor(topology: ExecutionTopology) {
    const edge = topology.edges[0];
    if (edge !== undefined) {
      throw new EngineError(
        'WEFT_ERR_FAILOVER_STRATEGY_NOT_APPLICABLE',
        `the individual failover strategy restarts only the failed task, but this job's tasks exchange data (edge ${JSON.stringify(edge.id)} and ${topology.edges.length - 1} more); use the region or all strategy`,
        { context: { field: 'strategy', strategy: 'individual', edgeId: edge.id } },
      );
    }
    this.#topology = topology;
  }

  verticesToRestart(failure: TaskFailure): Int32Array {
    const failed = this.#topology.requireExecutionVertex(failure.failedVertex, 'failedVertex');
    requireLostPartitions(this.#topology, failure.lostPartitions);
    return Int32Array.of(failed);
  }

  tasksToRestart(failure: TaskFailure): string[] {
    return Array.from(this.verticesToRestart(failure), (v) => this.#topology.executionVertexId(v));
  }
}
