import type { ExecutionTopology } from '../execution/execution-topology.js';
import type { PipelinedRegions } from '../regions/pipelined-regions.js';
import type { DeploymentBuilder } from './deployment-builder.js';
import type { JobEvent } from './job-events.js';
import type { PartitionReleases } from './partition-releases.js';
import { blockingOutputsOf, type PartitionStates } from './partition-states.js';
import type { RecoveryPlan } from './recovery-plan.js';
import { RegionState, type RegionStates } from './region-states.js';
import type { TaskAttempts } from './task-attempts.js';

/** The scheduler's state a resumed run starts from. */
export interface ResumedSchedulerState {
  readonly topology: ExecutionTopology;
  readonly regions: PipelinedRegions;
  readonly attempts: TaskAttempts;
  readonly builder: DeploymentBuilder;
  readonly partitions: PartitionStates;
  readonly states: RegionStates;
  readonly releases: PartitionReleases;
  readonly emit: (event: JobEvent) => void;
}

/**
 * A resumed run starts where the earlier ones left off (RecoveryPlan): kept tasks stay finished with
 * their attempts (their partitions readable through the listed descriptors), the finished tasks that
 * run again get a `tasks-reset`, and every other task starts at an attempt above every logged one.
 * Regions whose tasks are all kept stay finished (`states.start`), and partition groups they were the last
 * readers of are released.
 */
export function restoreRecoveryPlan(recovery: RecoveryPlan, state: ResumedSchedulerState): void {
  const { topology, regions, attempts, builder, partitions, states, releases, emit } = state;
  for (let v = 0; v < topology.executionVertexCount; v++) attempts.restore(v, recovery.attempts[v] as number, recovery.kept.get(v));
  for (const [p, descriptor] of recovery.descriptors) {
    builder.restoreDescriptor(p, descriptor);
    partitions.markDone(p);
  }
  for (const v of recovery.kept.keys()) {
    for (const p of blockingOutputsOf(topology, v)) {
      if (recovery.descriptors.has(p)) continue;
      partitions.markDone(p);
      // a skipped subtask's partition is empty and never registered: done, as when it was skipped;
      // any other is gone (released once every reader finished): lost to a later failover, which re-runs its producer
      if (!recovery.skipped.has(v)) partitions.markReleased(p);
    }
  }
  if (recovery.reset.length > 0) {
    emit({ type: 'tasks-reset', data: { tasks: recovery.reset.map((v) => topology.executionVertexId(v)), reason: 'resumed: their region runs again (an unfinished task, or a partition it needs is missing)' } });
  }
  const keptRegion = (r: number): boolean => Array.from(regions.membersOf(r)).every((v) => recovery.kept.has(v));
  states.start({ isFinished: keptRegion, isDone: (p) => partitions.isDone(p) });
  for (let r = 0; r < states.count; r++) {
    if (states.stateOf(r) !== RegionState.FINISHED) continue;
    const released = releases.regionFinished(r);
    for (const p of released) partitions.markReleased(p);
    if (released.length > 0) emit({ type: 'partitions-released', data: { partitionIds: released.map((p) => topology.resultPartitionId(p)) } });
  }
}
