// Streaming jobs end to end, in process over the in-memory pipelined shuffle: a bounded ctx.generate
// source, a keyed count whose table lives in keyed state, checkpoints taken by the job master, a task
// that throws at a seeded point restarted from the latest completed checkpoint, and restores with
// another parallelism. Every outcome is compared with a naive count computed here.
import assert from 'node:assert/strict';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import {
  type CheckpointingOptions,
  defineJob,
  type FaultInjectorFactory,
  InMemoryCheckpointStorage,
  InMemoryCheckpointStore,
  isEngineError,
  type JobResult,
  runJob,
} from '@weft/engine';
import { createMemoryShuffleServiceFactory } from '@weft/shuffle-memory';

const WORDS = ['alpha', 'beta', 'gamma', 'delta', 'epsilon', 'zeta', 'eta', 'theta', 'iota', 'kappa', 'lambda'];
/** Deterministic from the sequence number, so the expected counts are known. */
const wordOf = (seq: number): string => WORDS[(seq * 7 + (seq >> 3)) % WORDS.length] as string;

function referenceCounts(count: number): Map<string, number> {
  const counts = new Map<string, number>();
  for (let seq = 0; seq < count; seq++) counts.set(wordOf(seq), (counts.get(wordOf(seq)) ?? 0) + 1);
  return counts;
}

const wordCount = (count: number, ratePerSecond?: number) =>
  defineJob((ctx) => {
    ctx
      .generate(wordOf, { count, splits: 12, ...(ratePerSecond === undefined ? {} : { ratePerSecond }) })
      .keyBy((w) => w)
      .count()
      .collect('counts');
  }, { name: 'streaming-word-count' });

function countsOf(result: JobResult): Map<string, number> {
  assert.equal(result.status, 'succeeded', result.error?.message);
  const counts = new Map<string, number>();
  for (const [word, n] of (result.collected['counts'] ?? []) as [string, number][]) {
    assert.equal(counts.has(word), false, `${word} counted twice`);
    counts.set(word, n);
  }
  return counts;
}

/** Throws in `task`'s first attempt at its record `atRecord`. */
const throwOnce = (task: string, atRecord: number): FaultInjectorFactory => () => ({
  taskFault: ({ executionVertexId, attempt }) => (executionVertexId === task && attempt === 0 ? { kind: 'throw', atRecord } : undefined),
});

function run(request: { count: number; parallelism: number; checkpointing: CheckpointingOptions; rate?: number; faults?: FaultInjectorFactory; restarts?: number; jobId?: string }): Promise<JobResult> {
  const memory = createMemoryShuffleServiceFactory({ buffersPerPartition: 8 });
  return runJob({
    job: wordCount(request.count, request.rate),
    parallelism: request.parallelism,
    shuffle: { pipelined: memory, blocking: memory },
    checkpointing: request.checkpointing,
    restartStrategy: request.restarts === 0 ? { type: 'none' } : { type: 'fixed-delay', attempts: request.restarts ?? 2, delayMs: 0 },
    ...(request.jobId === undefined ? {} : { jobId: request.jobId }),
    ...(request.faults === undefined ? {} : { faults: request.faults }),
  });
}

describe('streaming checkpoints, in process', () => {
  it('counts a bounded generated stream as a batch count would, taking checkpoints as it goes', async () => {
    const storage = new InMemoryCheckpointStorage();
    const result = await run({ count: 3000, parallelism: 3, rate: 15_000, checkpointing: { intervalMs: 20, storage } });
    assert.deepEqual(countsOf(result), referenceCounts(3000));
    assert.ok((result.checkpoints?.completed ?? 0) >= 1, `checkpoints: ${JSON.stringify(result.checkpoints)}`);
  });

  it('restarts a failed task region from the latest completed checkpoint with exactly-once counts', async () => {
    const storage = new InMemoryCheckpointStorage();
    const result = await run({ count: 4000, parallelism: 2, rate: 8000, checkpointing: { intervalMs: 20, storage }, faults: throwOnce('generate#1', 1200) });
    assert.deepEqual(countsOf(result), referenceCounts(4000));
    assert.equal(result.failures, 1);
    assert.ok((result.checkpoints?.tasksRestored ?? 0) > 0, `checkpoints: ${JSON.stringify(result.checkpoints)}`);
  });

  it('a collect sink fed mid-stream restores what it collected up to the checkpoint: after a throw, every value once', async () => {
    const memory = createMemoryShuffleServiceFactory({ buffersPerPartition: 8 });
    const count = 4000;
    const result = await runJob({
      job: defineJob((ctx) => ctx.generate((seq) => seq, { count, splits: 4, ratePerSecond: 8000 }).collect('values'), { name: 'streaming-collect' }),
      parallelism: 2,
      shuffle: { pipelined: memory, blocking: memory },
      checkpointing: { intervalMs: 20, storage: new InMemoryCheckpointStorage() },
      restartStrategy: { type: 'fixed-delay', attempts: 2, delayMs: 0 },
      faults: throwOnce('generate#1', 1200),
    });
    assert.equal(result.status, 'succeeded', result.error?.message);
    assert.equal(result.failures, 1);
    assert.ok((result.checkpoints?.tasksRestored ?? 0) > 0, `checkpoints: ${JSON.stringify(result.checkpoints)}`);
    const values = ((result.collected['values'] ?? []) as number[]).slice().sort((a, b) => a - b);
    assert.deepEqual(values, Array.from({ length: count }, (_, i) => i));
  });

  it('restores 4 -> 2 -> 3 subtasks from the latest checkpoint of a failed run, redistributing key groups and source splits', async () => {
    const storage = new InMemoryCheckpointStorage();
    const store = new InMemoryCheckpointStore();
    const checkpointing = (restoreFrom?: 'latest'): CheckpointingOptions => ({ intervalMs: 20, storage, store, ...(restoreFrom === undefined ? {} : { restoreFrom }) });
    const count = 6000;
    const first = await run({ jobId: 'rescale', count, parallelism: 4, rate: 12_000, checkpointing: checkpointing(), faults: throwOnce('generate#2', 700), restarts: 0 });
    assert.equal(first.status, 'failed');
    const firstCheckpoint = (await store.completed()).at(-1)?.checkpointId;
    assert.ok(firstCheckpoint !== undefined, 'the run at parallelism 4 completed a checkpoint before it failed');
    const second = await run({ jobId: 'rescale', count, parallelism: 2, rate: 12_000, checkpointing: checkpointing('latest'), faults: throwOnce('generate#0', 700), restarts: 0 });
    assert.equal(second.status, 'failed');
    assert.equal(second.checkpoints?.restoredFrom, firstCheckpoint);
    const third = await run({ jobId: 'rescale', count, parallelism: 3, checkpointing: checkpointing('latest') });
    assert.ok((third.checkpoints?.restoredFrom ?? 0) > firstCheckpoint, 'the run at parallelism 3 started from the run at 2');
    assert.deepEqual(countsOf(third), referenceCounts(count));
  });

  it('refuses a restore whose checkpoint is missing, corrupted or of another max parallelism, naming the checkpoint', async () => {
    const storage = new InMemoryCheckpointStorage();
    const store = new InMemoryCheckpointStore();
    const fresh = await run({ count: 0, parallelism: 1, checkpointing: { intervalMs: 20, storage, store, restoreFrom: 'latest' } }).catch((error: unknown) => error);
    assert.ok(isEngineError(fresh, 'WEFT_ERR_STATE_RESTORE'), String(fresh));
    assert.match((fresh as Error).message, /checkpoint latest: no such checkpoint/);
    const failed = await run({ count: 4000, parallelism: 2, rate: 8000, checkpointing: { intervalMs: 20, storage, store }, faults: throwOnce('generate#0', 1500), restarts: 0 });
    assert.equal(failed.status, 'failed');
    const latest = (await store.completed()).at(-1);
    assert.ok(latest !== undefined);
    const missing = await run({ count: 4000, parallelism: 2, checkpointing: { intervalMs: 20, storage, store, restoreFrom: latest.checkpointId + 100 } }).catch((error: unknown) => error);
    assert.match((missing as Error).message, new RegExp(`checkpoint ${latest.checkpointId + 100}: no such checkpoint \\(its completed checkpoints are ${latest.checkpointId}\\)`));
    // one byte of a keyed snapshot flipped: its checksum no longer matches
    const key = storage.keys().find((k) => k.includes(`chk-${latest.checkpointId}/`) && k.endsWith('.keyed')) as string;
    const bytes = await storage.read(key);
    const damaged = bytes.slice();
    damaged[damaged.length - 1] = (damaged[damaged.length - 1] as number) ^ 0xff;
    await storage.write(key, damaged);
    const corrupted = await run({ count: 4000, parallelism: 2, checkpointing: { intervalMs: 20, storage, store, restoreFrom: 'latest' } }).catch((error: unknown) => error);
    assert.ok(isEngineError(corrupted, 'WEFT_ERR_STATE_RESTORE'), String(corrupted));
    assert.match((corrupted as Error).message, new RegExp(`from checkpoint ${latest.checkpointId}: .*checksum does not match`));
    await storage.write(key, bytes);
    const otherMax = defineJob((ctx) => {
      ctx.generate(wordOf, { count: 4000, splits: 12 }).keyBy((w) => w, { maxParallelism: 64 }).count().collect('counts');
    }, { name: 'streaming-word-count' });
    const memory = createMemoryShuffleServiceFactory({ buffersPerPartition: 8 });
    const refused = await runJob({ job: otherMax, parallelism: 2, shuffle: { pipelined: memory, blocking: memory }, checkpointing: { intervalMs: 20, storage, store, restoreFrom: 'latest' } }).catch((error: unknown) => error);
    assert.match((refused as Error).message, new RegExp(`from checkpoint ${latest.checkpointId}: .*max parallelism 128, the job now has 64`));
  });

  it('at-least-once: a fault-free run counts exactly, a restored one counts every record at least once', async () => {
    const clean = await run({ count: 3000, parallelism: 2, rate: 15_000, checkpointing: { intervalMs: 20, mode: 'at-least-once', storage: new InMemoryCheckpointStorage() } });
    assert.deepEqual(countsOf(clean), referenceCounts(3000));
    const restored = await run({ count: 3000, parallelism: 2, rate: 8000, checkpointing: { intervalMs: 20, mode: 'at-least-once', storage: new InMemoryCheckpointStorage() }, faults: throwOnce('generate#1', 900) });
    const counts = countsOf(restored);
    for (const [word, n] of referenceCounts(3000)) assert.ok((counts.get(word) ?? 0) >= n, `${word}: ${counts.get(word)} < ${n}`);
  });

  it('a text sink fed mid-stream pre-commits at each checkpoint: after a throw and a restore 3 -> 2 its file holds every line once', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'weft-streaming-sink-'));
    try {
      const count = 6000;
      const lines = (path: string) =>
        defineJob((ctx) => {
          ctx.generate((seq) => `line ${seq} ${wordOf(seq)}`, { count, splits: 12, ratePerSecond: 12_000 }).map((l) => l.toUpperCase()).writeText(path);
        }, { name: 'streaming-lines' });
      const memory = createMemoryShuffleServiceFactory({ buffersPerPartition: 8 });
      const expected = Array.from({ length: count }, (_, seq) => `LINE ${seq} ${wordOf(seq).toUpperCase()}`).sort();
      const read = async (path: string): Promise<string[]> => (await readFile(path, 'utf8')).split('\n').filter((l) => l !== '').sort();
      const storage = new InMemoryCheckpointStorage();
      const store = new InMemoryCheckpointStore();
      const restarted = await runJob({ job: lines(join(dir, 'restarted.txt')), cwd: dir, jobId: 'lines-restarted', parallelism: 2, shuffle: { pipelined: memory, blocking: memory }, checkpointing: { intervalMs: 20, storage, store }, restartStrategy: { type: 'fixed-delay', attempts: 1, delayMs: 0 }, faults: throwOnce('generate#1', 1500) });
      assert.equal(restarted.status, 'succeeded', restarted.error?.message);
      assert.ok((restarted.checkpoints?.tasksRestored ?? 0) > 0);
      assert.deepEqual(await read(join(dir, 'restarted.txt')), expected);
      const rescaledStore = new InMemoryCheckpointStore();
      const failed = await runJob({ job: lines(join(dir, 'rescaled.txt')), cwd: dir, jobId: 'lines-rescaled', parallelism: 3, shuffle: { pipelined: memory, blocking: memory }, checkpointing: { intervalMs: 20, storage, store: rescaledStore }, faults: throwOnce('generate#2', 1000) });
      assert.equal(failed.status, 'failed');
      const restored = await runJob({ job: lines(join(dir, 'rescaled.txt')), cwd: dir, jobId: 'lines-rescaled', parallelism: 2, shuffle: { pipelined: memory, blocking: memory }, checkpointing: { intervalMs: 20, storage, store: rescaledStore, restoreFrom: 'latest' } });
      assert.ok((restored.checkpoints?.restoredFrom ?? 0) > 0);
      assert.equal(restored.status, 'succeeded', restored.error?.message);
      assert.deepEqual(await read(join(dir, 'rescaled.txt')), expected);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('refuses checkpointing options and jobs it cannot checkpoint, naming the option or the operator', async () => {
    const memory = createMemoryShuffleServiceFactory({ buffersPerPartition: 8 });
    const storage = new InMemoryCheckpointStorage();
    const refused = async (options: Partial<Parameters<typeof runJob>[0]>, field: string, message: RegExp): Promise<void> => {
      const error = await runJob({ job: wordCount(10), parallelism: 1, shuffle: { pipelined: memory, blocking: memory }, checkpointing: { intervalMs: 20, storage }, ...options }).catch((e: unknown) => e);
      assert.ok(isEngineError(error, 'WEFT_ERR_INVALID_ARGUMENT'), String(error));
      assert.equal(error.context?.['field'], field);
      assert.match(error.message, message);
    };
    await refused({ checkpointing: { intervalMs: 0, storage } }, 'checkpointing.intervalMs', /expected an integer > 0 \(milliseconds\), got 0/);
    await refused({ checkpointing: { intervalMs: 10, storage, every: 1 } as unknown as CheckpointingOptions }, 'checkpointing.every', /unknown option/);
    // local worker processes and a cluster's executors relay checkpoints; a provider that does not say it relays them is refused
    const provider = { kind: 'remote', start: () => Promise.reject(new Error('never started')), close: () => Promise.resolve() };
    await refused({ executor: provider }, 'checkpointing', /on a provider's executors that relay checkpoint messages \(TaskExecutorProvider.relaysCheckpoints\), not on remote executors/);
    await refused({ exchangeMode: 'ALL_EDGES_BLOCKING' }, 'checkpointing', /edge generate->count is BLOCKING/);
    await refused({ job: defineJob((ctx) => ctx.range(0, 10).collect('r')) }, 'checkpointing', /source "range" \(range-source\) cannot rewind/);
    await refused({ slotsPerExecutor: 1, parallelism: 2, job: defineJob((ctx) => ctx.generate((s) => s, { count: 10 }).collect('r')) }, 'slotsPerExecutor', /runs all its 2 pipelined regions at once, but the executor has 1 slots/);
  });
});
