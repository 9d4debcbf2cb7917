import { invalidEngineArgument } from '../errors/engine-error.js';
import { ExecutionTopology } from '../execution/execution-topology.js';
import {
  FAILOVER_STRATEGY_NAMES,
  type FailoverStrategy,
  type FailoverStrategyName,
  type FailoverStrategyOptions,
  isFailoverStrategyName,
} from './failover-strategy.js';
import { RestartAllFailoverStrategy } from './restart-all-failover-strategy.js';
import { RestartIndividualFailoverStrategy } from './restart-individual-failover-strategy.js';
import { RestartPipelinedRegionFailoverStrategy } from './restart-pipelined-region-failover-strategy.js';

/**
 * The failover strategy `name` for a topology (a JobTopology JSON value, validated here, or an
 * ExecutionTopology). Building it is O(N + edges); ask it as often as tasks fail.
 */
export function createFailoverStrategy(
  topology: unknown,
  name: FailoverStrategyName = 'region',
  options: FailoverStrategyOptions = {},
): FailoverStrategy {
  if (!isFailoverStrategyName(name)) {
    throw invalidEngineArgument('strategy', `unknown failover strategy ${JSON.stringify(name)}; expected one of ${FAILOVER_STRATEGY_NAMES.join(', ')}`);
  }
  const execution = topology instanceof ExecutionTopology ? topology : ExecutionTopology.from(topology);
  switch (name) {
    case 'region':
      return new RestartPipelinedRegionFailoverStrategy(execution, options);
    case 'all':
      return new RestartAllFailoverStrategy(execution);
    case 'individual':
      return new RestartIndividualFailoverStrategy(execution);
  }
}

export interface ComputeTasksToRestartRequest {
  /** A job topology (docs/DESIGN.md contract 1) or an ExecutionTopology built from one. */
  readonly topology: unknown;
  /** The failed execution vertex, `"<vertexId>#<subtaskIndex>"`. */
  readonly failedVertex: string;
  /** Result partitions known lost (`"<edgeId>#<producerIndex>"`). @defaultValue [] */
  readonly lost?: readonly string[];
  /** @defaultValue 'region' */
  readonly strategy?: FailoverStrategyName;
}

/**
 * The plain form: the execution vertex ids to restart when `failedVertex` fails and the `lost` partitions
 * are gone, every other re-readable partition being available. What `weft plan --fail` prints.
 */
export function computeTasksToRestart(request: ComputeTasksToRestartRequest): string[] {
  const strategy = createFailoverStrategy(request.topology, request.strategy ?? 'region');
  return strategy.tasksToRestart({ failedVertex: request.failedVertex, lostPartitions: request.lost ?? [] });
}
