// A job that can never move again fails naming what it waits for, instead of waiting forever.
// Topology: `numbers` (2) -PIPELINED-> `double` (2) -BLOCKING, all-to-all-> `sum` (1): regions
// {numbers#0, double#0}, {numbers#1, double#1}, {sum#0}; sum waits for double->sum#0 and #1.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { noopLogger } from '@weft/shuffle-api';
import { ExecutionTopology, isEngineError } from '@weft/engine';
import { buildPipelinedRegions } from '../src/regions/pipelined-regions.js';
import { ExecutorSlots } from '../src/job-master/executor-slots.js';
import { RegionDependencies } from '../src/job-master/region-dependencies.js';
import { RegionState, RegionStates } from '../src/job-master/region-states.js';
import { stalledJobError } from '../src/job-master/stalled-job.js';
import { TWO_STAGE_TOPOLOGY } from './support/two-stage-topology.js';

const topologyJson = TWO_STAGE_TOPOLOGY;

describe('stalledJobError', () => {
  it('is undefined while a region can move, and names the waiting region and its missing partition once none can', () => {
    const topology = ExecutionTopology.from(topologyJson);
    const regions = buildPipelinedRegions(topology);
    const dependencies = new RegionDependencies(topology, regions);
    const states = new RegionStates(dependencies, new ExecutorSlots(), noopLogger);
    const sum = regions.regionOf[topology.indexOfExecutionVertex('sum#0')] as number;
    const [a, b] = [0, 1].map((i) => regions.regionOf[topology.indexOfExecutionVertex(`double#${i}`)] as number) as [number, number];
    const done = new Set<string>();
    const stalled = (restartUnderWay = false) => stalledJobError(states, restartUnderWay, dependencies, topology, (p) => done.has(topology.resultPartitionId(p)));
    states.start();
    assert.equal(stalled(), undefined, 'the source regions are ready');
    states.set(a, RegionState.RUNNING);
    states.set(b, RegionState.RUNNING);
    states.unready(a);
    states.unready(b);
    assert.equal(stalled(), undefined, 'two regions run');
    states.set(a, RegionState.FINISHED);
    states.finished++;
    done.add('double->sum#0');
    states.set(b, RegionState.CANCELLING);
    assert.equal(stalled(), undefined, 'one is cancelling: its restart may come');
    states.set(b, RegionState.FINISHED);
    states.finished++;
    assert.equal(stalled(true), undefined, 'a restart is under way');
    // double#1 finished, but its partition was never marked done: sum waits for what no task will produce
    const error = stalled();
    assert.ok(isEngineError(error, 'WEFT_ERR_ILLEGAL_STATE'), String(error));
    assert.match(error.message, new RegExp(`region ${sum} waits for double->sum#1\\b`));
    assert.doesNotMatch(error.message, /double->sum#0/);
    done.add('double->sum#1');
    states.set(sum, RegionState.FINISHED);
    states.finished++;
    assert.equal(stalled(), undefined, 'every region finished');
  });
});
