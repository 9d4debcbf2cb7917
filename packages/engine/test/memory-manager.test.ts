import assert from 'node:assert/strict';
import { totalmem } from 'node:os';
import { describe, it } from 'node:test';
import { defaultTaskMemoryBytes, MemoryManager, MIN_TASK_MEMORY_BYTES, runJob, defineJob } from '@weft/engine';
import { testingNoShuffleFactory } from './support/no-shuffle.js';

describe('the task memory manager', () => {
  it('shares one budget between its consumers and refuses a reservation past it', () => {
    const manager = new MemoryManager(100_000);
    const sort = manager.consumer('sort');
    const agg = manager.consumer('agg');
    assert.ok(sort.tryReserve(60_000));
    assert.ok(!agg.tryReserve(50_000), 'only 40000 bytes are left');
    assert.equal(agg.reservedBytes, 0);
    assert.ok(agg.tryReserve(40_000));
    assert.equal(manager.availableBytes, 0);
    sort.releaseAll();
    assert.equal(manager.reservedBytes, 40_000);
    assert.equal(manager.peakReservedBytes, 100_000);
    assert.throws(() => agg.checkRecordSize(100_001), (error: { code?: string; context?: Record<string, unknown> }) => error.code === 'WEFT_ERR_RECORD_TOO_LARGE' && error.context?.['operator'] === 'agg' && error.context['recordBytes'] === 100_001 && error.context['budgetBytes'] === 100_000);
    agg.checkRecordSize(100_000);
  });

  it('defaults to a share of the machine per core, never below the minimum', () => {
    const one = defaultTaskMemoryBytes(1);
    assert.ok(one >= MIN_TASK_MEMORY_BYTES && one <= totalmem() / 4);
    assert.ok(Math.abs(defaultTaskMemoryBytes(4) - Math.floor(one / 4)) <= 1, 'divided by the slots');
    assert.equal(defaultTaskMemoryBytes(10 ** 12), MIN_TASK_MEMORY_BYTES);
  });

  it('makes runJob refuse a budget too small to run at all, naming taskMemoryBytes, before anything runs', async () => {
    let built = false;
    const job = defineJob((ctx) => {
      built = true;
      ctx.fromArray([1, 2, 3]).collect('out');
    });
    for (const bad of [1024, MIN_TASK_MEMORY_BYTES - 1, 1.5, -1]) {
      await assert.rejects(runJob({ job, taskMemoryBytes: bad, shuffle: { pipelined: testingNoShuffleFactory(), blocking: testingNoShuffleFactory() } }), (error: { code?: string; context?: Record<string, unknown> }) => {
        assert.equal(error.code, 'WEFT_ERR_INVALID_ARGUMENT');
        assert.equal(error.context?.['field'], 'taskMemoryBytes');
        return true;
      });
    }
    assert.equal(built, false);
  });
});
