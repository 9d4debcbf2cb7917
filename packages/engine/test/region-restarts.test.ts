// When restarted regions are rescheduled: each failover waits for its own restart backoff, counted from
// its own failure (Flink's DefaultScheduler schedules restartTasks getBackoffTimeMs() after the failure),
// and for its regions' tasks to stop — whichever ends later. Driven by fake timers (node:test's mock
// timers: setTimeout and Date), so every time below is exact. RegionRestarts is the job master's failure
// path; the job master around it is played by a small host that records what it is asked to do.
import assert from 'node:assert/strict';
import { afterEach, beforeEach, describe, it, mock } from 'node:test';
import { type JobId, noopLogger, type ShuffleMaster } from '@weft/shuffle-api';
import { createFailoverStrategy, createRestartBackoffTimeStrategy, ExecutionTopology } from '@weft/engine';
import { buildPipelinedRegions } from '../src/regions/pipelined-regions.js';
import type { DeploymentBuilder } from '../src/job-master/deployment-builder.js';
import { ExecutorSlots } from '../src/job-master/executor-slots.js';
import { PartitionStates } from '../src/job-master/partition-states.js';
import { RegionDependencies } from '../src/job-master/region-dependencies.js';
import { RegionRestarts } from '../src/job-master/region-restarts.js';
import { RegionState, RegionStates } from '../src/job-master/region-states.js';
import { TaskAttempts } from '../src/job-master/task-attempts.js';
import { TWO_STAGE_TOPOLOGY } from './support/two-stage-topology.js';

/** Regions {numbers#0, double#0}, {numbers#1, double#1}, {sum#0} (TWO_STAGE_TOPOLOGY). */
const topologyJson = TWO_STAGE_TOPOLOGY;

function setUp(delayMs: number) {
  const topology = ExecutionTopology.from(topologyJson);
  const regions = buildPipelinedRegions(topology);
  const dependencies = new RegionDependencies(topology, regions);
  const states = new RegionStates(dependencies, new ExecutorSlots(), noopLogger);
  const attempts = new TaskAttempts(topology);
  const partitions = new PartitionStates(topology.partitionCount);
  const regionOf = (task: string): number => regions.regionOf[topology.indexOfExecutionVertex(task)] as number;
  const names = (region: number): string => Array.from(regions.membersOf(region), (v) => topology.executionVertexId(v)).join('+');
  /** `<time> <tasks of the region>` for each region rescheduled, in order. */
  const rescheduled: string[] = [];
  const restarts = new RegionRestarts({
    jobId: 'staggered' as JobId,
    jobName: 'staggered',
    topology,
    regions,
    restart: createRestartBackoffTimeStrategy({ type: 'fixed-delay', attempts: 10, delayMs }),
    failover: createFailoverStrategy(topology, 'region', { regions }),
    blockingMaster: {} as ShuffleMaster,
    states,
    attempts,
    partitions,
    builder: { takeDescriptor: () => undefined } as unknown as DeploymentBuilder,
    logger: noopLogger,
    elapsedMs: () => Date.now(),
    now: () => Date.now(),
    host: {
      isRunning: () => true,
      failJob: (error) => assert.fail(error),
      cancelRegion: (region) => states.set(region, RegionState.CANCELLING),
      rescheduled: (restarted) => {
        for (const r of restarted) rescheduled.push(`${Date.now()} ${names(r)}`);
      },
    },
  });
  /** Every region runs, its tasks active (deployed, not stopped). */
  for (let r = 0; r < regions.regionCount; r++) {
    states.set(r, RegionState.RUNNING);
    states.active[r] = regions.membersOf(r).length;
  }
  const fail = (task: string): void => {
    const r = regionOf(task);
    states.active[r] = (states.active[r] as number) - 1;
    restarts.onFailure(topology.indexOfExecutionVertex(task), new Error(`${task} failed`));
    restarts.maybeRestart();
  };
  /** The region's remaining tasks report `cancelled` (the job master calls maybeRestart as tasks stop). */
  const stopped = (task: string): void => {
    states.active[regionOf(task)] = 0;
    restarts.maybeRestart();
  };
  return { restarts, rescheduled, fail, stopped };
}

/** Moves the fake clock on by `ms`, running the timers due, then lets the resets (async) settle. */
async function advance(ms: number): Promise<void> {
  mock.timers.tick(ms);
  for (let i = 0; i < 5; i++) await new Promise<void>((resolve) => setImmediate(resolve));
}

describe('restart backoffs of staggered failovers', () => {
  beforeEach(() => mock.timers.enable({ apis: ['setTimeout', 'Date'], now: 0 }));
  afterEach(() => mock.timers.reset());

  it('reschedules each failover’s regions its own backoff after its own failure', async () => {
    const { restarts, rescheduled, fail, stopped } = setUp(3000);
    try {
      fail('numbers#0'); // at 0: restarts {numbers#0, double#0} and its consumer {sum#0}
      stopped('double#0');
      await advance(1016);
      fail('double#1'); // at 1016: restarts {numbers#1, double#1} and {sum#0}, which it takes over
      stopped('numbers#1');
      stopped('sum#0');
      await advance(1983);
      assert.deepEqual(rescheduled, [], 'nothing is due before 3000');
      await advance(1);
      assert.deepEqual(rescheduled, ['3000 numbers#0+double#0'], 'the first failover alone is due at 0 + 3000');
      await advance(1015);
      assert.deepEqual(rescheduled, ['3000 numbers#0+double#0'], 'the second is not due before 1016 + 3000');
      await advance(1);
      assert.deepEqual(rescheduled, ['3000 numbers#0+double#0', '4016 numbers#1+double#1', '4016 sum#0']);
      assert.equal(restarts.failovers.length, 2);
      assert.deepEqual(restarts.failovers.map((f) => f.backoffMs), [3000, 3000]);
    } finally {
      restarts.stop();
    }
  });

  it('counts the time the region’s tasks take to stop toward the backoff', async () => {
    const { restarts, rescheduled, fail, stopped } = setUp(3000);
    try {
      fail('numbers#0'); // at 0; double#0 and sum#0 are still stopping
      stopped('sum#0');
      await advance(2000);
      stopped('double#0'); // at 2000: cancellation took 2000 of the 3000
      await advance(999);
      assert.deepEqual(rescheduled, []);
      await advance(1);
      assert.deepEqual(rescheduled, ['3000 numbers#0+double#0', '3000 sum#0'], 'due 3000 after the failure, not after the tasks stopped');
    } finally {
      restarts.stop();
    }
  });

  it('waits for tasks still stopping when the backoff already passed', async () => {
    const { restarts, rescheduled, fail, stopped } = setUp(3000);
    try {
      fail('numbers#0');
      stopped('sum#0');
      await advance(5000);
      assert.deepEqual(rescheduled, [], 'double#0 has not stopped yet');
      stopped('double#0'); // at 5000
      await advance(0);
      assert.deepEqual(rescheduled, ['5000 numbers#0+double#0', '5000 sum#0']);
    } finally {
      restarts.stop();
    }
  });

  it('cancels every pending backoff when stopped', async () => {
    const { restarts, rescheduled, fail, stopped } = setUp(3000);
    fail('numbers#0');
    stopped('double#0');
    stopped('sum#0');
    restarts.stop();
    await advance(10_000);
    assert.deepEqual(rescheduled, []);
  });
});
