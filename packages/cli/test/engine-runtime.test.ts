// The engine's runtime over real shuffles: the in-memory shuffle (pipelined and blocking), in process.
// These live with the CLI, the package that wires the engine to shuffle implementations (the engine
// package itself may not depend on one).
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  DefaultRecordSerializer,
  assignToKeyGroup,
  computeDefaultMaxParallelism,
  computeOperatorIndexForKeyGroup,
  defineJob,
  EXCHANGE_MODES,
  type ExchangeMode,
  isEngineError,
  type JobBuildFunction,
  type JobResult,
  runJob,
} from '@weft/engine';
import { createMemoryShuffleServiceFactory } from '@weft/shuffle-memory';

async function run(build: JobBuildFunction, options: { parallelism?: number; exchangeMode?: ExchangeMode; restartAttempts?: number } = {}): Promise<JobResult> {
  const memory = createMemoryShuffleServiceFactory({ buffersPerPartition: 8 });
  return runJob({
    job: defineJob(build),
    parallelism: options.parallelism ?? 3,
    executor: 'inprocess',
    // an approximate job runs every task (each its own region) at once
    slotsPerExecutor: options.exchangeMode === 'ALL_EDGES_PIPELINED_APPROXIMATE' ? 64 : 2,
    shuffle: { pipelined: memory, blocking: memory },
    ...(options.exchangeMode === undefined ? {} : { exchangeMode: options.exchangeMode }),
    ...(options.restartAttempts === undefined ? {} : { restartStrategy: { type: 'fixed-delay', attempts: options.restartAttempts, delayMs: 1 } }),
  });
}

function sorted<T>(values: readonly T[] | undefined): T[] {
  return [...(values ?? [])].sort((a, b) => (JSON.stringify(a) < JSON.stringify(b) ? -1 : 1));
}

const WORDS = Array.from({ length: 3000 }, (_, i) => `w${(i * 7919) % 613}${i % 11 === 0 ? 'é' : ''}`);
const LINES = Array.from({ length: 600 }, (_, i) => WORDS.slice(i * 5, i * 5 + 1 + (i % 9)).join(i % 4 === 0 ? '  ' : ' '));

function referenceCounts(): [string, number][] {
  const counts = new Map<string, number>();
  for (const line of LINES) for (const w of line.split(/\s+/)) if (w !== '') counts.set(w, (counts.get(w) ?? 0) + 1);
  return sorted([...counts]);
}

describe('engine runtime over the in-memory shuffle', () => {
  for (const mode of EXCHANGE_MODES) {
    it(`computes word count, a join, a sort and a union exactly under ${mode}`, async () => {
      const result = await run((ctx) => {
        const words = ctx.fromArray(LINES, { parallelism: 2 }).flatMap((line) => line.split(/\s+/)).filter((w) => w !== '');
        words.keyBy((w) => w).count({ parallelism: 3 }).collect('counts');
        const left = ctx.range(0, 400).map((i) => ({ id: i % 50, left: i }));
        const right = ctx.range(0, 120, { parallelism: 2 }).map((i) => ({ id: (i * 3) % 70, right: i }));
        left.keyBy((l) => l.id).join(right.keyBy((r) => r.id), (l, r) => [l.id, l.left, r.right], { parallelism: 4 }).collect('joined');
        ctx.range(0, 2000).map((i) => (i * 7919) % 2003).sortBy((x) => x, { parallelism: 4 }).collect('sorted');
        ctx.range(0, 100).union(ctx.range(1000, 1050, { parallelism: 1 }), ctx.fromArray([-1, -2])).rebalance().map((x) => x, { parallelism: 2 }).collect('union');
      }, { exchangeMode: mode });
      assert.equal(result.status, 'succeeded', String(result.error?.stack));
      assert.deepEqual(sorted(result.collected['counts'] as [string, number][]), referenceCounts());
      const joined: number[][] = [];
      for (let i = 0; i < 400; i++) for (let j = 0; j < 120; j++) if (i % 50 === (j * 3) % 70) joined.push([i % 50, i, j]);
      assert.deepEqual(sorted(result.collected['joined'] as number[][]), sorted(joined));
      assert.deepEqual(result.collected['sorted'], Array.from({ length: 2000 }, (_, i) => (i * 7919) % 2003).sort((a, b) => a - b));
      assert.deepEqual(sorted(result.collected['union'] as number[]), sorted([...Array.from({ length: 100 }, (_, i) => i), ...Array.from({ length: 50 }, (_, i) => 1000 + i), -1, -2]));
      if (mode === 'ALL_EDGES_PIPELINED') assert.equal(result.regions, 4, 'one region per independent pipeline');
      if (mode === 'ALL_EDGES_BLOCKING') assert.ok(result.regions > 10);
      if (mode === 'ALL_EDGES_PIPELINED_APPROXIMATE') assert.equal(result.regions, result.tasks, 'every task its own region');
    });
  }

  it('routes every key to the subtask of its key group, as Flink would', async () => {
    const keys = ['A', 'hello', '', 'é', ...Array.from({ length: 200 }, (_, i) => `key-${i}`), 0, 1, 42, -7];
    const result = await run((ctx) =>
      ctx
        .fromArray(keys)
        .keyBy((k) => k)
        .reduce((a) => a, { parallelism: 4 })
        .map((k, runtime) => [k, runtime.subtask], { parallelism: 4 }) // chained: runs in the reducer's subtask
        .collect('placed'),
    );
    assert.equal(result.status, 'succeeded', String(result.error));
    const max = computeDefaultMaxParallelism(4);
    const placed = result.collected['placed'] as [string | number, number][];
    assert.equal(placed.length, keys.length);
    for (const [key, subtask] of placed) assert.equal(subtask, computeOperatorIndexForKeyGroup(max, 4, assignToKeyGroup(key, max)), `key ${JSON.stringify(key)}`);
    assert.ok(new Set(placed.map(([, s]) => s)).size === 4, 'keys spread over every subtask');
  });

  it('combines map-side: the shuffle carries one record per key and producer subtask', async () => {
    const result = await run((ctx) => ctx.range(0, 90_000).keyBy((x) => x % 7).count({ name: 'count', parallelism: 2 }).collect('counts'), { parallelism: 3 });
    assert.deepEqual(sorted(result.collected['counts'] as number[][]), Array.from({ length: 7 }, (_, k) => [k, 90_000 / 7 + (k < 90_000 % 7 ? 1 : 0)]).map(([k, n]) => [k, Math.floor(n as number)]));
    assert.equal(result.edges[0]?.records, 3 * 7);
    const uncombined = await run((ctx) => ctx.range(0, 9_000).keyBy((x) => x % 7).count({ combine: false, parallelism: 2 }).collect('counts'), { parallelism: 3 });
    assert.equal(uncombined.edges[0]?.records, 9_000);
  });

  it('keeps apart the keys JSON would merge: NaN, null, ±Infinity, -0 and 0, alone and in arrays', async () => {
    // key i of KEYS occurs i + 1 times; by hand, every key is its own group
    const name = (k: unknown): string => (Object.is(k, -0) ? '-0' : Array.isArray(k) ? `[${k.map(name).join(',')}]` : `${typeof k}:${String(k)}`);
    const KEYS: unknown[] = [[Number.NaN], [null], [Infinity], [-Infinity], [-0], [0], -0, 0, ['0'], [[0]]];
    const rows = KEYS.flatMap((key, i) => Array.from({ length: i + 1 }, () => ({ i, key })));
    const result = await run((ctx) => {
      const data = ctx.fromArray(rows, { parallelism: 2 });
      data.keyBy((r) => r.key as never).count({ parallelism: 3 }).map(([key, n]) => [KEYS.findIndex((k) => name(k) === name(key)), n]).collect('counts');
      data.keyBy((r) => r.key as never).aggregate({ createAccumulator: () => [] as number[], add: (acc: number[], r) => [...acc, r.i], merge: (x: number[], y: number[]) => [...x, ...y], getResult: (acc: number[]) => [...new Set(acc)] }, { parallelism: 2 }).map(([, ids]) => ids).collect('groups');
    });
    assert.equal(result.status, 'succeeded', String(result.error?.stack));
    assert.deepEqual(sorted(result.collected['counts'] as number[][]), KEYS.map((_, i) => [i, i + 1]));
    assert.deepEqual(sorted((result.collected['groups'] as number[][]).map((g) => g.length)), KEYS.map(() => 1), 'no group holds rows of two keys');
  });

  it('aggregates by composite keys and reduces per key', async () => {
    const result = await run((ctx) => {
      const rows = ctx.range(0, 1000).map((i) => ({ a: i % 3, b: `b${i % 4}`, v: i }));
      rows.keyBy((r) => [r.a, r.b]).aggregate({ createAccumulator: () => 0, add: (acc: number, r) => acc + r.v, merge: (x: number, y: number) => x + y, getResult: (acc: number) => acc }).collect('sums');
      rows.keyBy((r) => r.a).reduce((x, y) => (x.v > y.v ? x : y)).map((r) => [r.a, r.v]).collect('max');
    });
    const sums = new Map<string, number>();
    for (let i = 0; i < 1000; i++) sums.set(JSON.stringify([i % 3, `b${i % 4}`]), (sums.get(JSON.stringify([i % 3, `b${i % 4}`])) ?? 0) + i);
    assert.deepEqual(sorted(result.collected['sums'] as unknown[]), sorted([...sums].map(([k, v]) => [JSON.parse(k), v])));
    assert.deepEqual(sorted(result.collected['max'] as unknown[]), [[0, 999], [1, 997], [2, 998]]);
  });

  it('fails a pipelined region with the root cause, not the consumers that saw their producer fail', async () => {
    const result = await run((ctx) => ctx.range(0, 50_000).map((x) => { if (x === 40_000) throw new Error('boom at 40000'); return x; }, { name: 'fragile' }).keyBy((x) => x % 5).count().collect('c'), { exchangeMode: 'ALL_EDGES_PIPELINED' });
    assert.equal(result.status, 'failed');
    assert.ok(isEngineError(result.error?.cause, 'WEFT_ERR_USER_FUNCTION_FAILED'));
    assert.match(String(result.error?.message), /operator "fragile" \(map\) function threw in subtask \d of 3 \(attempt 0\): Error: boom at 40000/);
    assert.deepEqual(result.collected, {});
  });

  it('restarts only the failed region under a restart strategy, and the job still computes exactly', async () => {
    const result = await run(
      (ctx) =>
        ctx
          .range(0, 30_000)
          .map((x, runtime) => { if (x === 12_345 && runtime.attempt === 0) throw new Error('transient'); return x; })
          .keyBy((x) => x % 10)
          .reduce((a, b) => a + b, { parallelism: 2 })
          .collect('sums'),
      { restartAttempts: 2 },
    );
    assert.equal(result.status, 'succeeded', String(result.error));
    assert.equal(result.failures, 1);
    assert.equal(result.restarts, 1);
    assert.equal(result.attempts, result.tasks + 1, 'only the failed source subtask ran again');
    const expected = Array.from({ length: 10 }, (_, k) => { let s = 0; for (let x = k; x < 30_000; x += 10) s += x; return s; });
    assert.deepEqual(sorted(result.collected['sums'] as number[]), sorted(expected));
  });

  it('fails after the restart strategy gives up', async () => {
    const result = await run((ctx) => ctx.range(0, 100).map((x) => { if (x === 5) throw new Error('always'); return x; }).collect('x'), { restartAttempts: 2 });
    assert.equal(result.status, 'failed');
    assert.equal(result.failures, 3);
    assert.equal(result.restarts, 2);
  });

  it("uses the job's own serializer on both sides of an exchange, where the default one refuses the values", async () => {
    const dates: JobBuildFunction = (ctx) => ctx.range(0, 50).map((i) => new Date(Date.UTC(2020, 0, 1 + i))).rebalance().map((d) => d.toISOString().slice(0, 10), { parallelism: 2 }).collect('days');
    const refused = await run(dates);
    assert.equal(refused.status, 'failed');
    assert.match(String(refused.error?.message), /cannot serialize a Date with the default serializer/);

    let encoded = 0;
    const withDates = () => {
      const inner = new DefaultRecordSerializer();
      return {
        name: 'dates',
        serialize: (value: unknown) => (encoded++, inner.serialize(value instanceof Date ? { $date: value.getTime() } : value)),
        deserialize: (bytes: Uint8Array) => {
          const value = inner.deserialize(bytes) as { $date?: number };
          return typeof value?.$date === 'number' ? new Date(value.$date) : value;
        },
      };
    };
    const memory = createMemoryShuffleServiceFactory();
    const result = await runJob({ job: defineJob(dates, { serializer: withDates }), parallelism: 3, executor: 'inprocess', shuffle: { pipelined: memory, blocking: memory } });
    assert.equal(result.status, 'succeeded', String(result.error));
    assert.equal(encoded, 50);
    assert.deepEqual(sorted(result.collected['days'] as string[]), Array.from({ length: 50 }, (_, i) => new Date(Date.UTC(2020, 0, 1 + i)).toISOString().slice(0, 10)));
  });
});
