// A streaming job's checkpoints at the end of its run, in process: the retention table (hand-written,
// Flink's ExternalizedCheckpointCleanup), then real runs over in-memory checkpoint storage and store —
// success removes every record and every snapshot (a planted leftover of a checkpoint that never
// completed included), a failure keeps the latest and restores from it, a cancellation keeps them by
// default and removes them with 'delete-on-cancellation', 'retain' keeps a succeeded job's.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { type CheckpointRetention, type CheckpointingOptions, defineJob, discardJobCheckpoints, discardsCheckpointsAtEnd, type FaultInjectorFactory, InMemoryCheckpointStorage, InMemoryCheckpointStore, isEngineError, type JobResult, runJob } from '@weft/engine';
import { createMemoryShuffleServiceFactory } from '@weft/shuffle-memory';

const wordOf = (seq: number): string => `w${seq % 13}`;
const wordCount = (count: number, ratePerSecond?: number) =>
  defineJob((ctx) => {
    ctx.generate(wordOf, { count, splits: 6, ...(ratePerSecond === undefined ? {} : { ratePerSecond }) }).keyBy((w) => w).count().collect('counts');
  }, { name: 'retention-word-count' });

/** Throws in `task`'s first attempt at its record `atRecord`. */
const throwOnce = (task: string, atRecord: number): FaultInjectorFactory => () => ({
  taskFault: ({ executionVertexId, attempt }) => (executionVertexId === task && attempt === 0 ? { kind: 'throw', atRecord } : undefined),
});

function run(request: { count: number; rate?: number; checkpointing: CheckpointingOptions; faults?: FaultInjectorFactory; signal?: AbortSignal; jobId?: string }): Promise<JobResult> {
  const memory = createMemoryShuffleServiceFactory({ buffersPerPartition: 8 });
  return runJob({
    job: wordCount(request.count, request.rate),
    jobId: request.jobId ?? 'retention',
    parallelism: 2,
    shuffle: { pipelined: memory, blocking: memory },
    checkpointing: request.checkpointing,
    restartStrategy: { type: 'none' },
    ...(request.faults === undefined ? {} : { faults: request.faults }),
    ...(request.signal === undefined ? {} : { signal: request.signal }),
  });
}

function total(result: JobResult): number {
  assert.equal(result.status, 'succeeded', result.error?.message);
  return ((result.collected['counts'] ?? []) as [string, number][]).reduce((n, [, c]) => n + c, 0);
}

describe('checkpoint retention at the end of a run', () => {
  it('follows the retention table: success deletes unless retain; failure keeps unless delete; cancellation keeps only with retain-on-cancellation and retain', () => {
    const table: Record<CheckpointRetention, [succeeded: boolean, cancelled: boolean, failed: boolean]> = {
      'retain-on-cancellation': [true, false, false],
      'delete-on-cancellation': [true, true, false],
      delete: [true, true, true],
      retain: [false, false, false],
    };
    for (const [retention, [succeeded, cancelled, failed]] of Object.entries(table) as [CheckpointRetention, [boolean, boolean, boolean]][]) {
      assert.equal(discardsCheckpointsAtEnd(retention, 'succeeded'), succeeded, `${retention} succeeded`);
      assert.equal(discardsCheckpointsAtEnd(retention, 'cancelled'), cancelled, `${retention} cancelled`);
      assert.equal(discardsCheckpointsAtEnd(retention, 'failed'), failed, `${retention} failed`);
    }
  });

  it('a succeeded run removes every completed checkpoint and every snapshot, a leftover of one that never completed included', async () => {
    const storage = new InMemoryCheckpointStorage();
    const store = new InMemoryCheckpointStore();
    // what a crashed master's checkpoint 0… left: below every id this run takes, recorded nowhere
    await store.nextCheckpointId();
    await storage.write('checkpoints/retention/chk-1/count%230/count.keyed', new Uint8Array([1, 2, 3]));
    await storage.write('checkpoints/other-job/chk-1/count%230/count.keyed', new Uint8Array([4]));
    const result = await run({ count: 3000, rate: 10_000, checkpointing: { intervalMs: 20, storage, store } });
    assert.equal(total(result), 3000);
    assert.ok((result.checkpoints?.completed ?? 0) >= 1, JSON.stringify(result.checkpoints));
    assert.deepEqual(await store.completed(), []);
    assert.deepEqual(storage.keys(), ['checkpoints/other-job/chk-1/count%230/count.keyed'], 'only another job\'s snapshot is left');
    assert.equal(result.checkpoints?.retention, 'retain-on-cancellation');
    assert.equal(result.checkpoints?.discarded?.checkpoints, 1, JSON.stringify(result.checkpoints));
    assert.ok((result.checkpoints?.discarded?.objects ?? 0) >= 2, JSON.stringify(result.checkpoints));
  });

  it('a failed run keeps its latest completed checkpoint and a new run restores from it; that run succeeding removes it', async () => {
    const storage = new InMemoryCheckpointStorage();
    const store = new InMemoryCheckpointStore();
    const failed = await run({ count: 4000, rate: 8000, checkpointing: { intervalMs: 20, storage, store }, faults: throwOnce('generate#1', 1500) });
    assert.equal(failed.status, 'failed');
    const kept = await store.completed();
    assert.equal(kept.length, 1, 'the latest completed checkpoint is kept');
    assert.equal(failed.checkpoints?.discarded, undefined);
    assert.ok(storage.keys().some((k) => k.startsWith(`checkpoints/retention/chk-${kept[0]?.checkpointId}/`)), storage.keys().join(' '));
    const restored = await run({ count: 4000, checkpointing: { intervalMs: 20, storage, store, restoreFrom: 'latest' } });
    assert.equal(restored.checkpoints?.restoredFrom, kept[0]?.checkpointId);
    assert.equal(total(restored), 4000);
    assert.deepEqual(await store.completed(), []);
    assert.deepEqual(storage.keys(), []);
  });

  it('a cancelled run keeps its checkpoints by default and removes them with delete-on-cancellation', async () => {
    for (const retention of ['retain-on-cancellation', 'delete-on-cancellation'] as const) {
      const storage = new InMemoryCheckpointStorage();
      const store = new InMemoryCheckpointStore();
      const cancel = new AbortController();
      const unbounded = run({ count: 1_000_000, rate: 5000, signal: cancel.signal, checkpointing: { intervalMs: 20, storage, store, retention } });
      while ((await store.completed()).length === 0) await new Promise((r) => setTimeout(r, 10));
      cancel.abort(new Error('cancelled by the test'));
      const result = await unbounded;
      assert.equal(result.status, 'failed');
      if (retention === 'retain-on-cancellation') {
        assert.equal((await store.completed()).length, 1, retention);
        assert.ok(storage.keys().length > 0, retention);
      } else {
        assert.deepEqual(await store.completed(), [], retention);
        assert.deepEqual(storage.keys(), [], retention);
      }
    }
  });

  it('a store that fails halfway leaves no record whose snapshots are gone: records are removed before data', async () => {
    const storage = new InMemoryCheckpointStorage();
    class FailingSecondRemove extends InMemoryCheckpointStore {
      #removes = 0;
      override async remove(checkpointId: number): Promise<void> {
        if (++this.#removes === 2) throw new Error('the metadata store went away');
        await super.remove(checkpointId);
      }
    }
    const store = new FailingSecondRemove();
    for (const id of [await store.nextCheckpointId(), await store.nextCheckpointId()]) {
      const key = `checkpoints/halfway/chk-${id}/count%230/count.keyed`;
      await storage.write(key, new Uint8Array([id]));
      await store.addCompleted({ checkpointId: id, triggeredAtMs: 1, completedAtMs: 2, tasks: { 'count#0': { operators: { count: { keyed: key } } } } });
    }
    await assert.rejects(discardJobCheckpoints({ jobId: 'halfway', store, storage }), /went away/);
    const left = await store.completed();
    assert.deepEqual(left.map((c) => c.checkpointId), [2]);
    assert.deepEqual(storage.keys(), ['checkpoints/halfway/chk-2/count%230/count.keyed'], 'the one still recorded has its data; the unrecorded one has none');
  });

  it("'retain' keeps a succeeded run's checkpoints; a bad retention is refused naming the option", async () => {
    const storage = new InMemoryCheckpointStorage();
    const store = new InMemoryCheckpointStore();
    const result = await run({ count: 2000, rate: 10_000, checkpointing: { intervalMs: 20, storage, store, retention: 'retain' } });
    assert.equal(total(result), 2000);
    assert.equal((await store.completed()).length, 1);
    assert.ok(storage.keys().length > 0);
    const refused = await run({ count: 10, checkpointing: { intervalMs: 20, storage, retention: 'keep' as CheckpointRetention } }).catch((e: unknown) => e);
    assert.ok(isEngineError(refused, 'WEFT_ERR_INVALID_ARGUMENT'), String(refused));
    assert.match((refused as Error).message, /checkpointing\.retention/);
  });
});
