// What approximate recovery refuses, and what it runs on: any executors that serve each other's pipelined
// partitions (in process, local workers, a cluster's); not several over the in-memory pipelined shuffle.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { defineJob, isEngineError, runJob } from '@weft/engine';
import { createMemoryShuffleServiceFactory } from '@weft/shuffle-memory';
import { checkApproximateExecutors, checkApproximateRecovery } from '../src/job-master/check-approximate-recovery.js';

describe('checkApproximateRecovery', () => {
  it('runs without checkpoints, makes checkpoints at-least-once, and refuses exactly-once naming both options', () => {
    assert.equal(checkApproximateRecovery({ checkpointing: undefined }), undefined);
    const storage = { description: 'memory', write: async () => {}, read: async () => new Uint8Array(), delete: async () => {} };
    assert.equal(checkApproximateRecovery({ checkpointing: { intervalMs: 100, storage } })?.mode, 'at-least-once');
    assert.throws(
      () => checkApproximateRecovery({ checkpointing: { intervalMs: 100, mode: 'exactly-once', storage } }),
      (error: unknown) => isEngineError(error, 'WEFT_ERR_APPROXIMATE_REFUSED') && /exactly-once/.test(error.message) && error.context['conflictsWith'] !== undefined,
    );
  });

  it('refuses several executors once one of them serves its pipelined partitions only to itself, naming it', () => {
    const at = { host: '127.0.0.1', port: 1 };
    checkApproximateExecutors([{ id: 'inprocess-0' }]);
    checkApproximateExecutors([{ id: 'worker-0' }]);
    checkApproximateExecutors([{ id: 'worker-0', shuffleLocation: at }, { id: 'worker-1', shuffleLocation: at }]);
    assert.throws(
      () => checkApproximateExecutors([{ id: 'worker-0', shuffleLocation: at }, { id: 'worker-1' }]),
      (error: unknown) => isEngineError(error, 'WEFT_ERR_APPROXIMATE_REFUSED') && /executor worker-1/.test(error.message) && /--pipelined-shuffle network/.test(error.message),
    );
  });

  it('refuses adaptive parallelism with approximate recovery, naming both, before anything runs; each alone runs', async () => {
    const memory = createMemoryShuffleServiceFactory();
    const job = defineJob((ctx) => {
      ctx.range(0, 1000).keyBy((x) => x % 5).count().collect('counts');
    });
    const run = (extra: object) => runJob({ job, parallelism: 2, shuffle: { pipelined: memory, blocking: memory }, ...extra });
    await assert.rejects(
      run({ adaptive: true, exchangeMode: 'ALL_EDGES_PIPELINED_APPROXIMATE' }),
      (error: unknown) => isEngineError(error, 'WEFT_ERR_APPROXIMATE_REFUSED') && /approximate recovery .* cannot be combined with adaptive parallelism/.test(error.message),
    );
    const reference = Array.from({ length: 5 }, (_, k) => [k, 200]);
    for (const extra of [{ adaptive: true }, { exchangeMode: 'ALL_EDGES_PIPELINED_APPROXIMATE' }]) {
      const result = await run(extra);
      assert.equal(result.status, 'succeeded', result.error?.message);
      assert.deepEqual([...(result.collected['counts'] ?? [])].sort((a, b) => (a as [number])[0] - (b as [number])[0]), reference);
    }
  });
});
