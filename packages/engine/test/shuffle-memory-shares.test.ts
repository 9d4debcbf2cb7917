// Shuffle buffers within the task memory budget (issue 13): each task asks its shuffle for writers and
// gates sized from its budget (CreateWriterRequest.memoryBytes: an eighth of the budget split between its
// outputs; CreateInputGateRequest.memoryBytes: a sixteenth per gate), and closes a gate as soon as its input
// ended (a join's build-side gate before its probe side is opened), so its read buffers go then.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { CreateInputGateRequest, CreateWriterRequest, ShuffleServiceFactory } from '@weft/shuffle-api';
import { defineJob, runJob } from '@weft/engine';
import { gateMemoryBytes, gateReservedBytes, writerMemoryBytes, writerReservedBytes } from '../src/memory/shuffle-buffer-shares.js';
import { testingNoShuffleFactory } from './support/no-shuffle.js';
import { testingRecordingBlockingShuffle } from './support/recording-blocking-shuffle.js';

const BUDGET = 1024 * 1024;

const job = defineJob(
  (ctx) => {
    const customers = ctx.range(0, 300, { name: 'customers', parallelism: 1 }).map((i): [number, string] => [i, `c${i}`], { name: 'customer', parallelism: 1 });
    const orders = ctx.range(0, 600, { name: 'orders', parallelism: 1 }).map((i): [number, number] => [i % 400, i], { name: 'order', parallelism: 1 });
    const joined = orders
      .keyBy(([c]) => c)
      .leftOuterJoin(customers.keyBy(([id]) => id), (_o, c) => (c === null ? 'unmatched' : 'matched'), { name: 'join', build: 'right', parallelism: 1 });
    // two outputs of the join task: the share is split between them
    joined.keyBy().count({ name: 'pairs', parallelism: 1 }).collect('pairs');
    joined.keyBy().count({ name: 'again', parallelism: 1 }).collect('again');
  },
  { name: 'shares' },
);

/** The recording shuffle, its environment also noting each request's memoryBytes, in order with the gates' creation and closing. */
function sharingShuffle(): { factory: ShuffleServiceFactory; log: string[] } {
  const inner = testingRecordingBlockingShuffle();
  const log: string[] = [];
  const factory: ShuffleServiceFactory = {
    ...inner,
    createShuffleEnvironment: (context) => {
      const env = inner.createShuffleEnvironment(context);
      return {
        ...env,
        createResultPartitionWriter: async (request: CreateWriterRequest) => {
          log.push(`writer ${request.descriptor.producer.producerId.split('#')[0]} ${String(request.memoryBytes)}`);
          return env.createResultPartitionWriter(request);
        },
        createInputGate: async (request: CreateInputGateRequest) => {
          const consumer = String(request.consumerId).split('#')[0];
          log.push(`gate ${consumer} ${request.inputs.map((d) => d.partition.partitionId.split('->')[0]).join(',')} ${String(request.memoryBytes)}`);
          const gate = await env.createInputGate(request);
          return { ...gate, close: async () => { log.push(`gate closed ${consumer}`); await gate.close(); } };
        },
      };
    },
  };
  return { factory, log };
}

describe('shuffle buffers from the task memory budget', () => {
  it('sizes every writer and gate from the task budget and closes the build side’s gate before the probe side’s opens', async () => {
    const { factory, log } = sharingShuffle();
    const result = await runJob({
      job,
      executor: 'inprocess',
      exchangeMode: 'ALL_EDGES_BLOCKING',
      taskMemoryBytes: BUDGET,
      shuffle: { pipelined: testingNoShuffleFactory(), blocking: factory },
    });
    assert.equal(result.status, 'succeeded', String(result.error?.stack));
    // the oracle: order i names customer i % 400, customers are 0..299
    let matched = 0;
    for (let i = 0; i < 600; i++) if (i % 400 < 300) matched++;
    const expected = new Map([['matched', matched], ['unmatched', 600 - matched]]);
    assert.deepEqual(new Map(result.collected['pairs'] as [string, number][]), expected);
    assert.deepEqual(new Map(result.collected['again'] as [string, number][]), expected);
    const writers = log.filter((line) => line.startsWith('writer '));
    assert.ok(writers.length >= 4, log.join('; '));
    for (const line of writers) {
      // one output: an eighth of the budget; the join task's two outputs: a sixteenth each
      const expectedBytes = line.includes('join') ? BUDGET / 16 : BUDGET / 8;
      assert.equal(line.split(' ')[2], String(expectedBytes), line);
    }
    const gates = log.filter((line) => line.startsWith('gate ') && !line.startsWith('gate closed'));
    assert.ok(gates.length >= 4, log.join('; '));
    for (const line of gates) assert.equal(line.split(' ')[3], String(BUDGET / 16), line);
    const joinLog = log.filter((line) => / join/.test(line) && line.startsWith('gate'));
    assert.deepEqual(joinLog.slice(0, 3).map((line) => line.replace(/ \d+$/, '')), ['gate join customers', 'gate closed join', 'gate join orders'], log.join('; '));
  });

  it("asks the shuffle for at least its minimum but reserves only the share of a small budget: the operators keep the rest", () => {
    // 64 KiB budget (--task-memory 64k), one output: the writer is asked for 64 KiB (the minimum) and takes 8 KiB of the budget
    assert.equal(writerMemoryBytes(65_536, 1), 65_536);
    assert.equal(writerReservedBytes(65_536, 1), 8192);
    assert.equal(writerReservedBytes(65_536, 2), 4096);
    // a gate: asked for 16 KiB (four reads of 4 KiB), takes 4 KiB
    assert.equal(gateMemoryBytes(65_536), 16_384);
    assert.equal(gateReservedBytes(65_536), 4096);
    // a budget above the minimums: what is asked is what is reserved
    assert.equal(writerReservedBytes(BUDGET, 2), writerMemoryBytes(BUDGET, 2));
    assert.equal(writerReservedBytes(BUDGET, 2), BUDGET / 16);
    assert.equal(gateReservedBytes(BUDGET), gateMemoryBytes(BUDGET));
  });
});
