// Region scheduling (issue 4): a region starts only when every blocking partition it reads is finished and
// a slot is free. Checked on what a recording blocking shuffle saw the tasks do: which tasks had writers
// or gates open at the same time, and whether any gate was created over an unfinished partition.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { defineJob, type JobResult, runJob } from '@weft/engine';
import { testingNoShuffleFactory } from './support/no-shuffle.js';
import { type ShuffleRecord, testingRecordingBlockingShuffle } from './support/recording-blocking-shuffle.js';

const ORDERS = 3000;
const CUSTOMERS = 40;

/** Orders joined with customers, revenue summed per region: 4 job vertices, every edge BLOCKING. */
const job = defineJob(
  (ctx) => {
    const orders = ctx.range(0, ORDERS, { name: 'orders', parallelism: 3 }).map((i) => ({ customer: (i * 7) % CUSTOMERS, amount: i % 100 }), { name: 'order', parallelism: 3 });
    const customers = ctx.range(0, CUSTOMERS, { name: 'customers', parallelism: 2 }).map((c) => ({ customer: c, region: `r${c % 5}` }), { name: 'customer', parallelism: 2 });
    orders
      .keyBy((o) => o.customer)
      .join(customers.keyBy((c) => c.customer), (o, c) => [c.region, o.amount] as [string, number], { name: 'join', parallelism: 2 })
      .keyBy(([region]) => region)
      .reduce(([r, a], [, b]) => [r, a + b] as [string, number], { name: 'sum', parallelism: 3 })
      .collect('revenue');
  },
  { name: 'scheduling' },
);

function expectedRevenue(): [string, number][] {
  const sums = new Map<string, number>();
  for (let i = 0; i < ORDERS; i++) {
    const region = `r${((i * 7) % CUSTOMERS) % 5}`;
    sums.set(region, (sums.get(region) ?? 0) + (i % 100));
  }
  return [...sums].sort();
}

async function runRecorded(slots: number): Promise<{ result: JobResult; records: ShuffleRecord[] }> {
  const blocking = testingRecordingBlockingShuffle();
  const result = await runJob({ job, parallelism: 2, executor: 'inprocess', slotsPerExecutor: slots, exchangeMode: 'ALL_EDGES_BLOCKING', shuffle: { pipelined: testingNoShuffleFactory(), blocking } });
  assert.equal(result.status, 'succeeded', String(result.error?.stack));
  assert.deepEqual([...(result.collected['revenue'] as [string, number][])].sort(), expectedRevenue());
  return { result, records: blocking.records };
}

/** The task attempts that had a writer or a gate open at once, at the busiest moment, and how many. */
function mostAtOnce(records: readonly ShuffleRecord[]): number {
  const first = new Map<string, number>();
  const last = new Map<string, number>();
  records.forEach((r, i) => {
    if (r.kind === 'released') return; // the job master's doing, not a task's
    if (!first.has(r.attempt)) first.set(r.attempt, i);
    last.set(r.attempt, i);
  });
  let most = 0;
  for (let i = 0; i < records.length; i++) {
    let open = 0;
    for (const [attempt, from] of first) if (from <= i && i <= (last.get(attempt) as number)) open++;
    most = Math.max(most, open);
  }
  return most;
}

describe('region scheduling', () => {
  it('runs one region at a time on an executor with one slot', async () => {
    const { result, records } = await runRecorded(1);
    assert.equal(result.regions, result.tasks, 'all-blocking: every task is a region of its own');
    assert.equal(result.tasks, 3 + 2 + 2 + 3);
    assert.equal(mostAtOnce(records), 1);
  });

  it('runs at most as many regions at once as there are slots, and uses them', async () => {
    const { records } = await runRecorded(2);
    assert.equal(mostAtOnce(records), 2, 'two source regions run side by side, never three');
  });

  it('creates no consumer gate before every partition it reads has finished, however many slots are free', async () => {
    for (const slots of [1, 4, 16]) {
      const { result, records } = await runRecorded(slots);
      const gates = records.filter((r): r is Extract<ShuffleRecord, { kind: 'gate-created' }> => r.kind === 'gate-created');
      // join (2 subtasks x 2 inputs) + sum (3 subtasks x 1 input)
      assert.equal(gates.length, 2 * 2 + 3, `slots ${slots}`);
      assert.deepEqual(gates.filter((g) => g.unfinished.length > 0), [], `slots ${slots}: gates over unfinished partitions`);
      const finished = new Set(records.filter((r) => r.kind === 'writer-finished').map((r) => (r as { partitionId: string }).partitionId));
      for (const gate of gates) for (const id of gate.partitionIds) assert.ok(finished.has(id), `${id} read by ${gate.attempt} was finished`);
      // each producer's partition is finished before a gate reads it: its gate comes after all of them
      for (const gate of gates) {
        const at = records.indexOf(gate);
        for (const id of gate.partitionIds) {
          const done = records.findIndex((r) => r.kind === 'writer-finished' && r.partitionId === id);
          assert.ok(done >= 0 && done < at, `slots ${slots}: ${id} finished (record ${done}) before ${gate.attempt} opened its gate (record ${at})`);
        }
      }
      assert.equal(result.tasks, 10);
    }
  });
});
