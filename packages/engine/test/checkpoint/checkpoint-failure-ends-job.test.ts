// A streaming job whose checkpoints fail more times in a row than tolerated ends as a *failed* job, with
// WEFT_ERR_CHECKPOINT_FAILED in its error, its event log ending in `job-failed`. Before, the coordinator's
// failure went through the caller's abort: the job ended as `job-cancelled`, "was aborted".
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { type CheckpointStorage, defineJob, InMemoryCheckpointStorage, type JobEvent, runJob } from '@weft/engine';
import { createMemoryShuffleServiceFactory } from '@weft/shuffle-memory';

/** A storage whose every write fails (a full disk, a store that refuses): no checkpoint can complete. */
class RefusingStorage extends InMemoryCheckpointStorage implements CheckpointStorage {
  override async write(key: string): Promise<void> {
    throw new Error(`refused to write ${key}: disk full`);
  }
}

describe('checkpoint failures beyond the tolerated', () => {
  it('end the job as failed (job-failed, WEFT_ERR_CHECKPOINT_FAILED), not cancelled', { timeout: 20_000 }, async () => {
    const memory = createMemoryShuffleServiceFactory();
    const events: JobEvent[] = [];
    const job = defineJob((ctx) => {
      ctx
        .generate((seq) => `w${seq % 7}`, { count: 1_000_000, splits: 1, ratePerSecond: 20_000 })
        .keyBy((w) => w)
        .count({ combine: false })
        .collect('counts');
    }, { name: 'refused-checkpoints' });
    const result = await runJob({
      job,
      parallelism: 1,
      shuffle: { pipelined: memory, blocking: memory },
      restartStrategy: { type: 'none' },
      checkpointing: { intervalMs: 20, tolerableFailures: 1, storage: new RefusingStorage() },
      eventListener: { onJobEvent: (event) => void events.push(event) },
    });
    assert.equal(result.status, 'failed');
    const chain: string[] = [];
    for (let e: unknown = result.error; e instanceof Error; e = e.cause) chain.push(`${(e as { code?: string }).code ?? '-'}: ${e.message}`);
    assert.ok(chain.some((c) => c.startsWith('WEFT_ERR_CHECKPOINT_FAILED: ') && /2 checkpoint failures in a row, 1 tolerated/.test(c)), chain.join('\n'));
    assert.ok(!chain.some((c) => /aborted/.test(c)), chain.join('\n'));
    const last = events.at(-1);
    assert.equal(last?.type, 'job-failed', `the last event: ${JSON.stringify(last)}`);
  });
});
