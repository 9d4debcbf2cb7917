import { EngineError } from '../errors/engine-error.js';
import type { ExecutionTopology } from '../execution/execution-topology.js';
import type { RegionDependencies } from './region-dependencies.js';
import { RegionState, type RegionStates } from './region-states.js';

/**
 * A running job that can never move again: no region is ready, deploying, running or cancelling, no
 * restart is under way, yet some region has not finished — it waits for partitions no task will
 * produce. Only a task event or a restart's timer could change that, and none is coming, so the job
 * would wait forever; this names what it waits for instead (WEFT_ERR_ILLEGAL_STATE: a bug in the
 * scheduler or a recovery plan, failed loudly). Undefined when the job can still move. O(1) unless stalled.
 */
export function stalledJobError(states: RegionStates, restartUnderWay: boolean, dependencies: RegionDependencies, topology: ExecutionTopology, isDone: (p: number) => boolean): EngineError | undefined {
  if (states.finished === states.count || restartUnderWay) return undefined;
  for (const moving of [RegionState.READY, RegionState.DEPLOYING, RegionState.RUNNING, RegionState.CANCELLING]) if (states.countIn(moving) > 0) return undefined;
  const waiting: string[] = [];
  for (let r = 0; r < states.count && waiting.length < 3; r++) {
    if (states.stateOf(r) !== RegionState.WAITING) continue;
    const missing = Array.from(dependencies.inputsOf[r] as Int32Array).filter((p) => !isDone(p));
    const names = missing.slice(0, 3).map((p) => topology.resultPartitionId(p));
    waiting.push(`region ${r} waits for ${names.join(', ')}${missing.length > names.length ? ` and ${missing.length - names.length} more` : ''}`);
  }
  return new EngineError('WEFT_ERR_ILLEGAL_STATE', `the job cannot make progress: no task runs or can start, and ${states.count - states.finished} region(s) wait for partitions no task will produce (${waiting.join('; ')})`, {
    context: { regionsUnfinished: states.count - states.finished },
  });
}
