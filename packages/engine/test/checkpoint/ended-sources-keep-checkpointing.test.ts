// A source subtask that finished while the others run would stop the job's checkpoints for the rest of the
// run (a finished task takes no checkpoint, as in Flink before FLIP-147). So in a checkpointed job every
// source at its end — a generator subtask done or dealt no split, a watched directory that saw its end
// marker, a Redis stream's subtask that read its marker — waits for the job's final checkpoint, and the
// others' checkpoints go on. Found by review: with 3 subtasks over 2 splits, 0 checkpoints completed in the
// whole run (148 trigger failures). The counts' oracle is a naive loop.
import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { defineJob, InMemoryCheckpointStorage, type JobResult, runJob, tumblingEventTimeWindows } from '@weft/engine';
import { createMemoryShuffleServiceFactory } from '@weft/shuffle-memory';

const word = (seq: number): string => `w${seq % 5}`;

function naive(records: number, extra: readonly string[] = []): Map<string, number> {
  const counts = new Map<string, number>();
  for (let seq = 0; seq < records; seq++) counts.set(word(seq), (counts.get(word(seq)) ?? 0) + 1);
  for (const w of extra) counts.set(w, (counts.get(w) ?? 0) + 1);
  return counts;
}

async function run(name: string, splits: number, directory?: string): Promise<JobResult> {
  const memory = createMemoryShuffleServiceFactory();
  const job = defineJob((ctx) => {
    let words = ctx.generate(word, { name: 'words', count: 6_000, splits, ratePerSecond: 10_000 });
    if (directory !== undefined) words = words.union(ctx.watchDirectory(directory, { name: 'files', endMarker: '_DONE', pollIntervalMs: 10, parallelism: 1 }));
    words.keyBy((w) => w).count({ combine: false }).collect('counts');
  }, { name });
  return runJob({ job, parallelism: 3, shuffle: { pipelined: memory, blocking: memory }, checkpointing: { intervalMs: 20, storage: new InMemoryCheckpointStorage() } });
}

const countsOf = (result: JobResult): Map<string, number> => new Map(result.collected['counts'] as [string, number][]);

/** Events `seq` (timestamp `seq` ms, key `seq % 3`) in the window [start, end) of `key`, counted naively. */
function naiveWindowCount(key: number, start: number, end: number): number {
  let n = 0;
  for (let seq = start; seq < end; seq++) if (seq % 3 === key) n++;
  return n;
}

describe('checkpoints go on while a source that reached its end waits for the final one', () => {
  // The waiting source first sends the end-of-data watermark (Flink's MAX_WATERMARK): without it, an idle
  // subtask held every window downstream back for as long as the stream ran (found by review: 0 windows in
  // 4 s, 237 without checkpoints).
  it('and event-time windows downstream fire on the other subtasks\' watermarks meanwhile', { timeout: 30_000 }, async () => {
    const fired: { key: number; start: number; end: number; value: number }[] = [];
    const job = defineJob((ctx) => {
      ctx
        .generate((seq) => ({ key: seq % 3, ts: seq }), { name: 'events', splits: 2, ratePerSecond: 2_000 }) // unbounded; 3 subtasks, 2 splits
        .assignTimestampsAndWatermarks({ timestamp: (e) => e.ts, outOfOrdernessMs: 0, intervalMs: 20 })
        .keyBy((e) => e.key)
        .window(tumblingEventTimeWindows(100))
        .count()
        .map((w) => {
          fired.push(w as (typeof fired)[number]);
          return w;
        })
        .collect('windows');
    }, { name: 'idle-subtask-windows' });
    const memory = createMemoryShuffleServiceFactory();
    const controller = new AbortController();
    const running = runJob({ job, parallelism: 3, signal: controller.signal, shuffle: { pipelined: memory, blocking: memory }, checkpointing: { intervalMs: 50, storage: new InMemoryCheckpointStorage() } });
    // the stream runs until cancelled: stop it once windows have fired (or after 10 s, failing below)
    for (let waited = 0; fired.length < 30 && waited < 10_000; waited += 20) await new Promise((resolve) => setTimeout(resolve, 20));
    controller.abort(new Error('enough'));
    const result = await running;
    assert.ok(fired.length >= 30, `windows fired while the stream ran: ${fired.length}`);
    for (const w of fired) assert.equal(w.value, naiveWindowCount(w.key, w.start, w.end), JSON.stringify(w));
    assert.ok((result.checkpoints?.completed ?? 0) > 0, JSON.stringify(result.checkpoints));
  });

  it('a generator subtask dealt no split (3 subtasks, 2 splits)', { timeout: 30_000 }, async () => {
    const result = await run('idle-subtask', 2);
    assert.equal(result.status, 'succeeded');
    // ~0.6 s of stream at one every 20 ms; before, none completed at all
    assert.ok((result.checkpoints?.completed ?? 0) >= 5, JSON.stringify(result.checkpoints));
    assert.deepEqual(countsOf(result), naive(6_000));
  });

  it('a watched directory that saw its end marker at once, beside a generator that runs on', { timeout: 30_000 }, async () => {
    const dir = await mkdtemp(join(tmpdir(), 'weft-ended-source-'));
    try {
      await writeFile(join(dir, 'a.txt'), 'x\ny\n');
      await writeFile(join(dir, '_DONE'), '');
      const result = await run('directory-ended', 6, dir);
      assert.equal(result.status, 'succeeded');
      assert.ok((result.checkpoints?.completed ?? 0) >= 5, JSON.stringify(result.checkpoints));
      assert.deepEqual(countsOf(result), naive(6_000, ['x', 'y']));
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
