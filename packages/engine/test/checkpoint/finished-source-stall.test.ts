// A source subtask that finishes while the others run stops the job's checkpoints (a finished task takes no
// checkpoint: Flink before FLIP-147). Weft does not take them then, but says so: the checkpoint summary's
// `stalled` names the finished source once STALLED_TRIGGERS triggers found it, and a job whose sources all
// have work reports nothing.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { defineJob, InMemoryCheckpointStorage, runJob, STALLED_TRIGGERS } from '@weft/engine';
import { createMemoryShuffleServiceFactory } from '@weft/shuffle-memory';

async function run(splits: number) {
  const memory = createMemoryShuffleServiceFactory();
  const job = defineJob((ctx) => {
    ctx.generate((seq) => `w${seq % 5}`, { name: 'words', count: 6_000, splits, ratePerSecond: 10_000 }).keyBy((w) => w).count({ combine: false }).collect('counts');
  }, { name: `stall-${splits}` });
  return runJob({ job, parallelism: 3, shuffle: { pipelined: memory, blocking: memory }, checkpointing: { intervalMs: 20, storage: new InMemoryCheckpointStorage() } });
}

describe('checkpoints stopped by a source that finished early', () => {
  it('are reported: the summary names the finished source, the triggers skipped, and none completed since', { timeout: 30_000 }, async () => {
    const result = await run(2); // one of the 3 source subtasks has no split: it finishes at once, the others run ~0.6 s
    assert.equal(result.status, 'succeeded');
    const stalled = result.checkpoints?.stalled;
    assert.ok(stalled !== undefined, JSON.stringify(result.checkpoints));
    assert.match(stalled.finishedSource, /^words#[0-2]$/);
    assert.ok(stalled.triggersSkipped >= STALLED_TRIGGERS, JSON.stringify(stalled));
    assert.equal(result.checkpoints?.completed, 0, 'none could be taken');
    // the counts are still right: it is only the checkpoints that stopped
    assert.deepEqual(new Map(result.collected['counts'] as [string, number][]), new Map(['w0', 'w1', 'w2', 'w3', 'w4'].map((w) => [w, 1_200])));
  });

  it('are not reported when every source subtask has work (they finish together at the end)', { timeout: 30_000 }, async () => {
    const result = await run(6);
    assert.equal(result.status, 'succeeded');
    assert.ok((result.checkpoints?.completed ?? 0) > 3, JSON.stringify(result.checkpoints));
    assert.equal(result.checkpoints?.stalled, undefined, JSON.stringify(result.checkpoints));
  });
});
