// Streaming jobs end to end, in process over the in-memory pipelined shuffle: a bounded ctx.generate
// source, a keyed count whose table lives in keyed state, checkpoints taken by the job master, a task
// that throws at a seeded point restarted from the latest completed checkpoint, and restores with
// another parallelism. Every outcome is compared with a naive count computed here.
import assert from 'node:assert/strict';
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

function run(request: { count: number; parallelism: number; checkpointing: CheckpointingOptions; rate?: number; faults?: FaultInjectorFactory; restarts?: number }): Promise<JobResult> {
  const memory = createMemoryShuffleServiceFactory({ buffersPerPartition: 8 });
  return runJob({
    job: wordCount(request.count, request.rate),
    parallelism: request.parallelism,
    shuffle: { pipelined: memory, blocking: memory },
    checkpointing: request.checkpointing,
    restartStrategy: { type: 'fixed-delay', attempts: request.restarts ?? 2, delayMs: 0 },
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
    const result = await run({ count: 4000, parallelism: 2, rate: 8000, checkpointing: { intervalMs: 20, storage }, faults: throwOnce('count#1', 1200) });
    assert.deepEqual(countsOf(result), referenceCounts(4000));
    assert.equal(result.failures, 1);
    console.log(JSON.stringify(result.checkpoints));
    assert.ok((result.checkpoints?.tasksRestored ?? 0) > 0, `checkpoints: ${JSON.stringify(result.checkpoints)}`);
  });
});
