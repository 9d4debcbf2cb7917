// Keyed windows end to end, in process over the in-memory shuffle: event-time tumbling and sliding
// windows over a generated stream with timestamps (watermarks in band through the shuffle), compared with
// a naive grouping by key and window start computed here; late records dropped and counted exactly on a
// deterministic stream; a checkpointed run restarted, and one restored 3 -> 2, with the same windows.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  type CheckpointingOptions,
  defineJob,
  type ExchangeMode,
  type FaultInjectorFactory,
  InMemoryCheckpointStorage,
  InMemoryCheckpointStore,
  isEngineError,
  type JobResult,
  runJob,
  slidingEventTimeWindows,
  tumblingEventTimeWindows,
  tumblingProcessingTimeWindows,
  type WindowAssigner,
  type WindowedValue,
} from '@weft/engine';
import { createMemoryShuffleServiceFactory } from '@weft/shuffle-memory';

const WORDS = ['alpha', 'beta', 'gamma', 'delta', 'epsilon', 'zeta', 'eta'];
interface Click {
  readonly word: string;
  readonly ts: number;
  readonly n: number;
}
/** Event `seq`: 5 ms apart, up to 199 ms out of order (a pure function of seq, so every run can be checked). */
const clickOf = (seq: number): Click => ({ word: WORDS[(seq * 5 + (seq >> 4)) % WORDS.length] as string, ts: seq * 5 + ((seq * 7919) % 200), n: seq % 10 });

type Windowed = WindowedValue<string, number>;
const idOf = (w: { key: unknown; start: number; end: number }): string => `${String(w.key)}|${w.start}|${w.end}`;

/** The naive reference: every event into each window of `size` every `slide` that holds it, folded per key and window. */
function reference(count: number, sizeMs: number, slideMs: number, value: (c: Click) => number): Map<string, number> {
  const out = new Map<string, number>();
  for (let seq = 0; seq < count; seq++) {
    const c = clickOf(seq);
    for (let start = Math.floor(c.ts / slideMs) * slideMs; start > c.ts - sizeMs; start -= slideMs) {
      const id = idOf({ key: c.word, start, end: start + sizeMs });
      out.set(id, (out.get(id) ?? 0) + value(c));
    }
  }
  return out;
}

function windowsOf(result: JobResult, name = 'windows'): Map<string, number> {
  assert.equal(result.status, 'succeeded', result.error?.message);
  const out = new Map<string, number>();
  for (const w of (result.collected[name] ?? []) as Windowed[]) {
    assert.equal(out.has(idOf(w)), false, `window ${idOf(w)} emitted twice`);
    out.set(idOf(w), w.value);
  }
  return out;
}

const lateOf = (result: JobResult): number => result.vertices.reduce((n, v) => n + (v.lateRecordsDropped ?? 0), 0);

const countJob = (request: { count: number; assigner: WindowAssigner; outOfOrdernessMs: number; rate?: number; sum?: boolean }) =>
  defineJob((ctx) => {
    const keyed = ctx
      .generate(clickOf, { count: request.count, splits: 12, ...(request.rate === undefined ? {} : { ratePerSecond: request.rate }) })
      .assignTimestampsAndWatermarks({ timestamp: (c) => c.ts, outOfOrdernessMs: request.outOfOrdernessMs, intervalMs: 5 })
      .filter((c) => c.word !== '')
      .keyBy((c) => c.word)
      .window(request.assigner);
    const windows = request.sum === true
      ? keyed.aggregate({ createAccumulator: () => 0, add: (acc: number, c: Click) => acc + c.n, merge: (a: number, b: number) => a + b, getResult: (acc: number) => acc })
      : keyed.count();
    windows.collect('windows');
  }, { name: 'windowed-count' });

function run(request: { job: ReturnType<typeof countJob>; parallelism: number; exchangeMode?: ExchangeMode; checkpointing?: CheckpointingOptions; faults?: FaultInjectorFactory; restarts?: number; jobId?: string }): Promise<JobResult> {
  const memory = createMemoryShuffleServiceFactory({ buffersPerPartition: 8 });
  return runJob({
    job: request.job,
    parallelism: request.parallelism,
    shuffle: { pipelined: memory, blocking: memory },
    ...(request.exchangeMode === undefined ? {} : { exchangeMode: request.exchangeMode }),
    ...(request.checkpointing === undefined ? {} : { checkpointing: request.checkpointing }),
    restartStrategy: request.restarts === 0 ? { type: 'none' } : { type: 'fixed-delay', attempts: request.restarts ?? 2, delayMs: 0 },
    ...(request.jobId === undefined ? {} : { jobId: request.jobId }),
    ...(request.faults === undefined ? {} : { faults: request.faults }),
  });
}

/** Throws in `task`'s first attempt at its record `atRecord`. */
const throwOnce = (task: string, atRecord: number): FaultInjectorFactory => () => ({
  taskFault: ({ executionVertexId, attempt }) => (executionVertexId === task && attempt === 0 ? { kind: 'throw', atRecord } : undefined),
});

describe('keyed windows, in process', () => {
  it('event-time tumbling counts equal a naive grouping by key and window start, pipelined and blocking alike', async () => {
    const job = countJob({ count: 4000, assigner: tumblingEventTimeWindows(1000), outOfOrdernessMs: 200 });
    const expected = reference(4000, 1000, 1000, () => 1);
    for (const exchangeMode of ['ALL_EDGES_PIPELINED', 'ALL_EDGES_BLOCKING'] as const) {
      const result = await run({ job, parallelism: 3, exchangeMode });
      assert.deepEqual(windowsOf(result), expected, exchangeMode);
      assert.equal(lateOf(result), 0, `${exchangeMode}: nothing is later than the bound`);
    }
  });

  it('event-time sliding windows (2000 every 500) sum, and tumbling windows with an offset reduce, each key as the naive reference does', async () => {
    const result = await run({ job: countJob({ count: 3000, assigner: slidingEventTimeWindows(2000, 500), outOfOrdernessMs: 200, sum: true }), parallelism: 2, exchangeMode: 'ALL_EDGES_PIPELINED' });
    assert.deepEqual(windowsOf(result), reference(3000, 2000, 500, (c) => c.n));
    // reduce: the event with the largest n per key and window (the earliest of equals)
    const reduced = await run({
      job: defineJob((ctx) => {
        ctx.generate(clickOf, { count: 3000, splits: 12 }).assignTimestampsAndWatermarks({ timestamp: (c) => c.ts, outOfOrdernessMs: 200, intervalMs: 5 }).keyBy((c) => c.word).window(tumblingEventTimeWindows(700, 100)).reduce((a, b) => (b.n > a.n || (b.n === a.n && b.ts < a.ts) ? b : a)).collect('windows');
      }, { name: 'windowed-reduce' }) as ReturnType<typeof countJob>,
      parallelism: 2,
      exchangeMode: 'ALL_EDGES_PIPELINED',
    });
    assert.equal(reduced.status, 'succeeded', reduced.error?.message);
    const best = new Map<string, Click>();
    for (let seq = 0; seq < 3000; seq++) {
      const c = clickOf(seq);
      const start = 100 + Math.floor((c.ts - 100) / 700) * 700;
      const id = idOf({ key: c.word, start, end: start + 700 });
      const b = best.get(id);
      if (b === undefined || c.n > b.n || (c.n === b.n && c.ts < b.ts)) best.set(id, c);
    }
    const got = new Map(((reduced.collected['windows'] ?? []) as WindowedValue<string, Click>[]).map((w) => [idOf(w), w.value]));
    assert.deepEqual(got, best);
  });

  it('drops and counts exactly the records whose every window had fired (one source subtask, a watermark after each record)', async () => {
    // every 7th event is 300 to 1500 ms behind; with 100 ms out-of-orderness some miss all their windows, some a few
    const event = (seq: number): Click => ({ word: WORDS[seq % 3] as string, ts: seq * 20 - (seq % 7 === 6 ? 300 + (seq % 5) * 300 : 0), n: 1 });
    const count = 2000;
    const job = (sizeMs: number, slideMs: number) =>
      defineJob((ctx) => {
        ctx
          .generate(event, { count, splits: 1, parallelism: 1 })
          .assignTimestampsAndWatermarks({ timestamp: (c) => c.ts, outOfOrdernessMs: 100, intervalMs: 0 })
          .keyBy((c) => c.word)
          .window(slideMs === sizeMs ? tumblingEventTimeWindows(sizeMs) : slidingEventTimeWindows(sizeMs, slideMs))
          .count()
          .collect('windows');
      }, { name: 'late-records' });
    for (const [sizeMs, slideMs] of [[500, 500], [1000, 250]] as const) {
      // the naive model: the watermark after each record is max(ts) - 100 - 1; a window with maxTimestamp <= watermark has fired
      const expected = new Map<string, number>();
      let watermark = Number.NEGATIVE_INFINITY;
      let maxTs = Number.NEGATIVE_INFINITY;
      let late = 0;
      let partly = 0;
      for (let seq = 0; seq < count; seq++) {
        const c = event(seq);
        let open = 0;
        for (let start = Math.floor(c.ts / slideMs) * slideMs; start > c.ts - sizeMs; start -= slideMs) {
          if (start + sizeMs - 1 <= watermark) {
            partly++;
            continue;
          }
          open++;
          const id = idOf({ key: c.word, start, end: start + sizeMs });
          expected.set(id, (expected.get(id) ?? 0) + 1);
        }
        if (open === 0) late++;
        maxTs = Math.max(maxTs, c.ts);
        watermark = maxTs - 101;
      }
      assert.ok(late > 0, 'the stream has late records');
      if (slideMs < sizeMs) assert.ok(partly > late, 'and records that miss only some of their windows');
      const result = await run({ job: job(sizeMs, slideMs), parallelism: 2, exchangeMode: 'ALL_EDGES_PIPELINED' });
      assert.deepEqual(windowsOf(result), expected, `size ${sizeMs} slide ${slideMs}`);
      assert.equal(lateOf(result), late, `size ${sizeMs} slide ${slideMs}: late records counted`);
      // with checkpoints the watermarks pass the barrier aligner, in order with the records
      const checkpointed = await run({ job: job(sizeMs, slideMs), parallelism: 2, checkpointing: { intervalMs: 5, storage: new InMemoryCheckpointStorage() } });
      assert.deepEqual(windowsOf(checkpointed), expected, `checkpointed, size ${sizeMs} slide ${slideMs}`);
      assert.equal(lateOf(checkpointed), late);
    }
  });

  it('a checkpointed run whose window task throws restarts from the latest checkpoint with exactly the same windows', async () => {
    const job = countJob({ count: 4000, assigner: tumblingEventTimeWindows(1000), outOfOrdernessMs: 200, rate: 8000 });
    const result = await run({ job, parallelism: 2, checkpointing: { intervalMs: 20, storage: new InMemoryCheckpointStorage() }, faults: throwOnce('window-count#1', 900) });
    assert.deepEqual(windowsOf(result), reference(4000, 1000, 1000, () => 1));
    assert.equal(result.failures, 1);
    assert.ok((result.checkpoints?.tasksRestored ?? 0) > 0, `checkpoints: ${JSON.stringify(result.checkpoints)}`);
  });

  it('a failed run at parallelism 3 restored at 2 from its latest checkpoint emits the same windows (key groups redistributed)', async () => {
    const storage = new InMemoryCheckpointStorage();
    const store = new InMemoryCheckpointStore();
    // restored, splits of different old subtasks share a subtask at different positions: a wide bound keeps them on time
    const job = countJob({ count: 6000, assigner: tumblingEventTimeWindows(1000), outOfOrdernessMs: 20_000, rate: 12_000 });
    const first = await run({ jobId: 'windows-rescale', job, parallelism: 3, checkpointing: { intervalMs: 20, storage, store }, faults: throwOnce('generate#1', 1200), restarts: 0 });
    assert.equal(first.status, 'failed');
    const checkpoint = (await store.completed()).at(-1)?.checkpointId;
    assert.ok(checkpoint !== undefined, 'the first run completed a checkpoint');
    const restored = await run({ jobId: 'windows-rescale', job, parallelism: 2, checkpointing: { intervalMs: 20, storage, store, restoreFrom: 'latest' } });
    assert.equal(restored.checkpoints?.restoredFrom, checkpoint);
    assert.deepEqual(windowsOf(restored), reference(6000, 1000, 1000, () => 1));
    assert.equal(lateOf(restored), 0);
  });

  it('processing-time windows are aligned to the clock and together hold every record once', async () => {
    const job = defineJob((ctx) => {
      ctx.generate(clickOf, { count: 3000, splits: 12, ratePerSecond: 10_000 }).keyBy((c) => c.word).window(tumblingProcessingTimeWindows(40)).count().collect('windows');
    }, { name: 'processing-time' });
    const result = await run({ job, parallelism: 2, exchangeMode: 'ALL_EDGES_PIPELINED' });
    assert.equal(result.status, 'succeeded', result.error?.message);
    const totals = new Map<string, number>();
    for (const w of result.collected['windows'] as Windowed[]) {
      assert.equal(w.start % 40, 0);
      assert.equal(w.end - w.start, 40);
      totals.set(w.key, (totals.get(w.key) ?? 0) + w.value);
    }
    const expected = new Map<string, number>();
    for (let seq = 0; seq < 3000; seq++) expected.set(clickOf(seq).word, (expected.get(clickOf(seq).word) ?? 0) + 1);
    assert.deepEqual(totals, expected);
  });

  it('refuses event-time windows without timestamps and watermark strategies with unknown or bad options, naming the field', async () => {
    const refused = async (build: Parameters<typeof defineJob>[0], field: RegExp): Promise<void> => {
      const error = await run({ job: defineJob(build, { name: 'refused' }) as ReturnType<typeof countJob>, parallelism: 1 }).catch((e: unknown) => e);
      assert.ok(isEngineError(error, 'WEFT_ERR_INVALID_JOB'), String(error));
      assert.match(String(error.context?.['field']), field);
    };
    await refused((ctx) => ctx.generate(clickOf, { count: 1 }).keyBy((c) => c.word).window(tumblingEventTimeWindows(10)).count().collect('w'), /^window: timestamp$/);
    await refused((ctx) => ctx.generate(clickOf, { count: 1 }).assignTimestampsAndWatermarks({ timestamp: (c) => c.ts }).map((c) => c).keyBy((c) => c.word).window(tumblingEventTimeWindows(10)).count().collect('w'), /^window: timestamp$/);
    await refused((ctx) => ctx.generate(clickOf, { count: 1 }).assignTimestampsAndWatermarks({ timestamp: (c: Click) => c.ts, lateness: 5 } as never).collect('w'), /: lateness$/);
    await refused((ctx) => ctx.generate(clickOf, { count: 1 }).assignTimestampsAndWatermarks({ timestamp: (c) => c.ts, outOfOrdernessMs: -1 }).collect('w'), /: outOfOrdernessMs$/);
  });
});
