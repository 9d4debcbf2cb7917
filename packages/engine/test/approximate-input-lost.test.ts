// The job master's side of a lost approximate input: a running consumer reports a channel that lost its
// producer attempt (`input-unavailable`), and once that producer is known to have finished and lost its
// outputs with its executor, the consumer fails over at once (WEFT_ERR_APPROXIMATE_INPUT_LOST) — in either
// order of the two reports; exactly once when several consumers, or several lost producers, meet; never
// when nobody waits or the channel resumed. Scripted executors (one slot each): `src` attempts finish at
// once, `cnt` attempts run until cancelled or told to finish. Topology: src (2) -ALL_TO_ALL approximate->
// cnt (2); partition `src->cnt#i` is src#i's. Expected restarts worked out by hand from DESIGN.md (a lost
// partition's producer restarts; consumer regions restart transitively).
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { setImmediate as tick } from 'node:timers/promises';
import { jobId, noopLogger, taskExecutorId } from '@weft/shuffle-api';
import { createFailoverStrategy, createRestartBackoffTimeStrategy, ExecutionTopology, type FailoverRecord, type JobPlan, type JobTopology } from '@weft/engine';
import { buildPipelinedRegions } from '../src/regions/pipelined-regions.js';
import { JobMaster } from '../src/job-master/job-master.js';
import { testingDescriptorOnlyMaster } from './support/descriptor-only-master.js';
import { SourcesFinishExecutor } from './support/scripted-executor.js';

const TOPOLOGY: JobTopology = {
  vertices: [
    { id: 'src', parallelism: 2 },
    { id: 'cnt', parallelism: 2 },
  ],
  edges: [{ id: 'src->cnt', source: 'src', target: 'cnt', distribution: 'ALL_TO_ALL', partitionType: 'PIPELINED_APPROXIMATE' }],
};
const PLAN = { name: 'approximate-input-lost', vertices: TOPOLOGY.vertices.map((v, index) => ({ id: v.id, index })), edges: TOPOLOGY.edges.map((e, index) => ({ id: e.id, index, targetInput: 0 })), logical: { nodes: [] } } as unknown as JobPlan;

class OneSlotExecutor extends SourcesFinishExecutor {
  /** The consumer attempt's channel of `partitionId` lost its producer attempt (or, `resumed`, reads a new one). */
  input(attemptId: string, partitionId: string, resumed = false): void {
    this.emit({ type: resumed ? 'input-resumed' : 'input-unavailable', attemptId, partitionId });
  }
}

async function turns(n = 50): Promise<void> {
  for (let i = 0; i < n; i++) await tick();
}

/** Runs the job on 4 one-slot executors; `script` acts once both sources finished and both counts run, then every count still running finishes. */
async function run(script: (job: { master: JobMaster; on: (attemptId: string) => OneSlotExecutor; lose: (attemptId: string) => void; input: (attemptId: string, partitionId: string, resumed?: boolean) => void }) => Promise<void>) {
  const topology = ExecutionTopology.from(TOPOLOGY);
  const regions = buildPipelinedRegions(topology);
  const failovers: FailoverRecord[] = [];
  let master: JobMaster | undefined;
  master = new JobMaster({
    jobId: jobId('job-approximate-input-lost'),
    plan: PLAN,
    topology,
    regions,
    blockingMaster: testingDescriptorOnlyMaster(),
    failover: createFailoverStrategy(topology, 'region', { regions, isPartitionAvailable: (id) => master?.isPartitionAvailable(id) ?? true }),
    restart: createRestartBackoffTimeStrategy({ type: 'fixed-delay', attempts: 5, delayMs: 10 }),
    logger: noopLogger,
    cancelTimeoutMs: 60_000,
    onFailover: (record) => failovers.push(record),
  });
  const executors = [0, 1, 2, 3].map((i) => new OneSlotExecutor(taskExecutorId(`e${i}`), 1));
  for (const executor of executors) executor.listener = master;
  const on = (attemptId: string): OneSlotExecutor => {
    const executor = executors.find((e) => e.ran.includes(attemptId));
    assert.ok(executor !== undefined, `${attemptId} was deployed`);
    return executor;
  };
  const outcome = master.run(executors);
  for (let i = 0; i < 1000 && !(executors.some((e) => e.running.has('cnt#0@0')) && executors.some((e) => e.running.has('cnt#1@0'))); i++) await tick();
  await turns();
  // the scenarios need each source alone on its executor, finished: its loss takes only its outputs
  for (const src of ['src#0@0', 'src#1@0']) assert.ok(!on(src).ran.some((id) => id.startsWith('cnt')), `${src} ran alone: ${executors.map((e) => `${e.id}: ${e.ran.join(' ')}`).join('; ')}`);
  await script({ master, on, lose: (attemptId) => master?.onExecutorLost(on(attemptId).id, new Error('killed')), input: (attemptId, partitionId, resumed) => on(attemptId).input(attemptId, partitionId, resumed) });
  await turns(200);
  await new Promise((resolve) => setTimeout(resolve, 50)); // past the restart delay
  for (let k = 0; k < 20; k++) {
    for (const e of executors) for (const id of [...e.running]) e.finish(id);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  const result = await outcome;
  assert.equal(result.status, 'succeeded', result.error?.message);
  return { result, failovers: failovers.map((f) => ({ failedTask: f.failedTask, code: (f.error as { code?: string } | undefined)?.code, lost: f.lostPartitions, restart: [...f.tasksToRestart].sort() })) };
}

const recordsOf = (result: { approximateRecoveries?: readonly { task: string; failedAttempt: number }[] }): string[] => (result.approximateRecoveries ?? []).map((r) => `${r.task}@${r.failedAttempt}`);

describe('a consumer waiting for a lost finished producer (job master)', () => {
  for (const order of ['input-unavailable first', 'executor lost first'] as const) {
    it(`fails over at once, restarting the producer with it (${order})`, async () => {
      const { result, failovers } = await run(async ({ lose, input }) => {
        if (order === 'executor lost first') lose('src#0@0');
        await turns();
        input('cnt#1@0', 'src->cnt#0');
        await turns();
        if (order === 'input-unavailable first') lose('src#0@0');
      });
      assert.deepEqual(failovers, [{ failedTask: 'cnt#1', code: 'WEFT_ERR_APPROXIMATE_INPUT_LOST', lost: ['src->cnt#0'], restart: ['cnt#0', 'cnt#1', 'src#0'] }]);
      assert.deepEqual(recordsOf(result), ['cnt#1@0'], 'one recovery, of the consumer that waited');
      assert.equal(result.failures, 1);
    });
  }

  it('two consumers waiting on the lost partition: one failover restarts both, one recovery', async () => {
    const { result, failovers } = await run(async ({ lose, input }) => {
      input('cnt#0@0', 'src->cnt#0');
      input('cnt#1@0', 'src->cnt#0');
      await turns();
      lose('src#0@0');
    });
    assert.equal(failovers.length, 1, JSON.stringify(failovers));
    assert.deepEqual(failovers[0]?.restart, ['cnt#0', 'cnt#1', 'src#0']);
    assert.equal(recordsOf(result).length, 1, JSON.stringify(result.approximateRecoveries));
    assert.equal(result.failures, 1);
  });

  it('a consumer waiting on two producers lost one after the other: one recovery for its attempt; its next attempt, deployed against the second lost partition, fails over again', async () => {
    const { result, failovers } = await run(async ({ lose, input }) => {
      input('cnt#0@0', 'src->cnt#0');
      input('cnt#0@0', 'src->cnt#1');
      await turns();
      // the second loss comes while the first failover's restart of cnt#0 is pending
      lose('src#0@0');
      lose('src#1@0');
      await turns(200);
      await new Promise((resolve) => setTimeout(resolve, 50));
      // the restarted consumer connects to the second lost partition: its channel is unavailable at once
      input('cnt#0@1', 'src->cnt#1');
    });
    assert.deepEqual(failovers, [
      { failedTask: 'cnt#0', code: 'WEFT_ERR_APPROXIMATE_INPUT_LOST', lost: ['src->cnt#0'], restart: ['cnt#0', 'cnt#1', 'src#0'] },
      { failedTask: 'cnt#0', code: 'WEFT_ERR_APPROXIMATE_INPUT_LOST', lost: ['src->cnt#1'], restart: ['cnt#0', 'cnt#1', 'src#1'] },
    ]);
    assert.deepEqual(recordsOf(result), ['cnt#0@0', 'cnt#0@1'], 'each failed attempt recorded once');
    assert.equal(result.failures, 2);
  });

  it('nobody waits (every consumer had the end): the loss restarts nothing', async () => {
    const { result, failovers } = await run(async ({ lose }) => lose('src#0@0'));
    assert.deepEqual(failovers, []);
    assert.equal(result.failures, 0);
  });

  it('a channel that resumed before the loss waits no more: nothing restarts', async () => {
    const { failovers } = await run(async ({ lose, input }) => {
      input('cnt#0@0', 'src->cnt#0');
      input('cnt#0@0', 'src->cnt#0', true);
      await turns();
      lose('src#0@0');
    });
    assert.deepEqual(failovers, []);
  });
});
