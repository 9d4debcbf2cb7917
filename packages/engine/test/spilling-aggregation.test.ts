import assert from 'node:assert/strict';
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import type { KeyValue } from '@weft/engine';
import type { Aggregator } from '../src/api/logical-graph.js';
import { AggregateOperator } from '../src/operators/aggregate-operator.js';
import { COMBINE_SKIP_CHECK_RECORDS, CombineOperator } from '../src/operators/combine-operator.js';
import { WordCountCombiner } from '../src/operators/word-count-combiner.js';
import { VALUE_KEY } from '../src/api/split-words.js';
import { ByteCountTable, hashBytes } from '../src/text/byte-count-table.js';
import { canonicalKey } from '../src/runtime/key-hash.js';
import { CollectingOutput, testingOperatorContext } from './support/operator-context.js';

const BUDGET = 64 * 1024;

const COUNT: Aggregator = { kind: 'count', create: () => 0, add: (a) => (a as number) + 1, merge: (a, b) => (a as number) + (b as number), result: (k, a) => [k, a] };
/** An accumulator that grows: every value of the key, in order. */
const COLLECT: Aggregator = {
  create: () => [],
  add: (a, v) => [...(a as unknown[]), (v as { seq: number }).seq],
  merge: (a, b) => [...(a as unknown[]), ...(b as unknown[])],
  result: (k, a) => [k, a],
};

const SPECIAL: KeyValue[] = ['\uFFFD', 0, -0, Number.NaN, null, Number.POSITIVE_INFINITY, Number.NEGATIVE_INFINITY, [0], [-0], [Number.NaN], [null], [Number.POSITIVE_INFINITY], ['0'], '0', 'null', true, false];

function keysOf(n: number, kind: 'string' | 'number' | 'mixed'): KeyValue[] {
  const out: KeyValue[] = [...SPECIAL];
  for (let i = 0; out.length < n; i++) out.push(kind === 'string' ? `k${i}` : kind === 'number' ? i * 1.5 - 100 : i % 3 === 0 ? [`a${i}`, i] : i % 3 === 1 ? `s${i}` : i);
  return out;
}

function stream(n: number, keys: readonly KeyValue[]): { k: KeyValue; seq: number }[] {
  let seed = 99;
  return Array.from({ length: n }, (_, seq) => {
    seed = (Math.imul(seed, 1103515245) + 12345) >>> 0;
    return { k: keys[seed % keys.length] as KeyValue, seq };
  });
}

/** The reference: one pass over the values with a Map keyed by the canonical key (which keeps -0, NaN, null, ±Infinity apart). */
function reference(values: readonly { k: KeyValue; seq: number }[], aggregator: Aggregator): Map<string, unknown> {
  const map = new Map<string, { key: KeyValue; acc: unknown }>();
  for (const v of values) {
    const c = canonicalKey(v.k);
    const entry = map.get(c);
    if (entry === undefined) map.set(c, { key: v.k, acc: aggregator.add(aggregator.create(), v) });
    else entry.acc = aggregator.add(entry.acc, v);
  }
  return new Map([...map].map(([c, { key, acc }]) => [c, aggregator.result(key, acc)]));
}

function byKey(results: readonly unknown[]): Map<string, unknown> {
  const map = new Map<string, unknown>();
  for (const r of results) {
    const c = canonicalKey((r as [KeyValue, unknown])[0]);
    assert.ok(!map.has(c), `key ${c} emitted once`);
    map.set(c, r);
  }
  return map;
}

function withDir<T>(fn: (dir: string) => Promise<T>): Promise<T> {
  const dir = mkdtempSync(join(tmpdir(), 'weft-agg-test-'));
  return fn(dir).finally(() => rmSync(dir, { recursive: true, force: true }));
}

/** Combiner (budget-bound) into the reduce side (budget-bound), as a keyed aggregation runs. */
async function aggregate(values: readonly { k: KeyValue; seq: number }[], aggregator: Aggregator, dir: string, combine: boolean): Promise<{ out: unknown[]; runs: number; pairs: number; peak: number }> {
  const reduceContext = testingOperatorContext({ budgetBytes: BUDGET, spillDir: dir, name: 'aggregate' });
  const output = new CollectingOutput();
  const key = (v: unknown): KeyValue => (v as { k: KeyValue }).k;
  const reducer = new AggregateOperator(aggregator, combine ? undefined : key, output, reduceContext);
  const mapContext = testingOperatorContext({ budgetBytes: BUDGET, spillDir: dir, name: 'combine' });
  let pairs = 0;
  const combiner = new CombineOperator(key, aggregator, 1_000_000, { collect: (pair) => { pairs++; reducer.collect(pair); } }, mapContext);
  try {
    for (const v of values) (combine ? combiner : reducer).collect(v);
    if (combine) await combiner.finish();
    await reducer.finish();
    return { out: output.values, runs: reducer.runsSpilled, pairs, peak: Math.max(mapContext.memory.manager.peakReservedBytes, reduceContext.memory.manager.peakReservedBytes) };
  } finally {
    combiner.close();
    reducer.close();
    reduceContext.memory.spill.close();
    mapContext.memory.spill.close();
  }
}

describe('the spilling keyed aggregation (count, reduce, aggregate, and the combiner)', () => {
  for (const kind of ['string', 'number', 'mixed'] as const) {
    for (const combine of [true, false]) {
      it(`counts ${kind} keys ${combine ? 'through a combiner' : 'without a combiner'} as a naive Map does, below the budget and with 8x its keys spilled and merged`, async () => {
        await withDir(async (dir) => {
          const few = stream(2_000, keysOf(100, kind));
          const below = await aggregate(few, COUNT, dir, combine);
          assert.equal(below.runs, 0);
          assert.deepEqual(byKey(below.out), reference(few, COUNT));
          // ~90 bytes a key in the table: 8x the budget's worth of distinct keys
          const many = stream(30_000, keysOf(Math.ceil((8 * BUDGET) / 90), kind));
          const above = await aggregate(many, COUNT, dir, combine);
          assert.ok(above.runs >= 4, `the reducer spilled ${above.runs} runs`);
          assert.deepEqual(byKey(above.out), reference(many, COUNT));
          assert.ok(above.peak <= BUDGET, `at most the budget reserved (peak ${above.peak})`);
          if (combine) assert.ok(above.pairs > new Set(many.map((v) => canonicalKey(v.k))).size, 'the combiner emitted early when its budget was full');
          assert.deepEqual(readdirSync(dir), [], 'no spill file is left');
        });
      });
    }
  }

  it('keeps [NaN], [null], [Infinity], -0 and 0 apart as keys through a spill, in both the combiner and the reducer', async () => {
    await withDir(async (dir) => {
      const values = [...SPECIAL.map((k, seq) => ({ k, seq: -1 - seq })), ...stream(20_000, keysOf(6000, 'mixed'))];
      const { out, runs } = await aggregate(values, COUNT, dir, true);
      assert.ok(runs > 0);
      const results = byKey(out);
      for (const key of SPECIAL) assert.ok(results.has(canonicalKey(key)), `${canonicalKey(key)} has its own count`);
      const negZero = out.find((r) => Object.is((r as [KeyValue])[0], -0));
      assert.ok(negZero !== undefined, '-0 comes out as -0');
      assert.deepEqual(results, reference(values, COUNT));
    });
  });

  it('re-measures growing accumulators and merges the runs of a key in arrival order', async () => {
    await withDir(async (dir) => {
      const values = stream(40_000, keysOf(200, 'string'));
      const { out, runs } = await aggregate(values, COLLECT, dir, false);
      assert.ok(runs >= 2, `growing lists spill (${runs} runs)`);
      assert.deepEqual(byKey(out), reference(values, COLLECT), 'each key lists its values in arrival order');
    });
  });

  it('refuses one accumulator larger than the budget with WEFT_ERR_RECORD_TOO_LARGE naming the operator, its size and the budget', async () => {
    await withDir(async (dir) => {
      const values = Array.from({ length: 200 }, (_, seq) => ({ k: 'one', seq }));
      const concat: Aggregator = { create: () => '', add: (a) => `${a as string}${'x'.repeat(1000)}`, merge: (a, b) => `${a as string}${b as string}`, result: (k, a) => [k, a] };
      await assert.rejects(aggregate(values, concat, dir, false), (error: { code?: string; context?: Record<string, unknown> }) => {
        assert.equal(error.code, 'WEFT_ERR_RECORD_TOO_LARGE');
        assert.equal(error.context?.['operator'], 'aggregate');
        assert.equal(error.context?.['budgetBytes'], BUDGET);
        assert.ok((error.context?.['recordBytes'] as number) > BUDGET);
        return true;
      });
      assert.deepEqual(readdirSync(dir), []);
    });
  });

  it('removes its spill files after a failure and a cancellation once it spilled', async () => {
    await withDir(async (dir) => {
      const values = stream(30_000, keysOf(8000, 'string'));
      const context = testingOperatorContext({ budgetBytes: BUDGET, spillDir: dir, name: 'aggregate' });
      const failing: Aggregator = { ...COUNT, merge: () => { throw new Error('boom'); } };
      const op = new AggregateOperator(failing, (v) => (v as { k: KeyValue }).k, new CollectingOutput(), context);
      for (const v of values) op.collect(v);
      assert.ok(op.runsSpilled > 0);
      await assert.rejects(op.finish(), (error: { code?: string }) => error.code === 'WEFT_ERR_USER_FUNCTION_FAILED');
      op.close();
      context.memory.spill.close();
      assert.deepEqual(readdirSync(dir), []);

      const abort = new AbortController();
      const cancelled = testingOperatorContext({ budgetBytes: BUDGET, spillDir: dir, signal: abort.signal, name: 'aggregate' });
      const op2 = new AggregateOperator(COUNT, (v) => (v as { k: KeyValue }).k, { collect: () => abort.abort(new Error('cancelled')) }, cancelled);
      for (const v of stream(60_000, keysOf(20_000, 'string'))) op2.collect(v); // more keys than emitAll emits between cancellation checks
      assert.ok(op2.runsSpilled > 0);
      await assert.rejects(op2.finish(), /cancelled/);
      op2.close();
      cancelled.memory.spill.close();
      assert.deepEqual(readdirSync(dir), []);
    });
  });

  it('makes the fused word-count combiner emit early when its byte table outgrows the budget, with the same totals', async () => {
    await withDir(async (dir) => {
      const context = testingOperatorContext({ budgetBytes: BUDGET, spillDir: dir, name: 'combine' });
      const output = new CollectingOutput();
      const combiner = new WordCountCombiner(VALUE_KEY as (value: unknown) => KeyValue, COUNT, 1_000_000, output, context);
      const expected = new Map<string, number>();
      for (let chunk = 0; chunk < 20; chunk++) {
        const words = Array.from({ length: 500 }, (_, i) => `w${(chunk * 317 + i * 7) % 6000}`);
        for (const w of words) expected.set(w, (expected.get(w) ?? 0) + 1);
        const bytes = Buffer.from(`${words.join(' ')}\n`);
        combiner.countWordsIn(bytes, 0, bytes.length);
      }
      const early = output.values.length;
      await combiner.finish();
      combiner.close();
      assert.ok(early > 0, 'pairs were emitted before the end');
      assert.ok(context.memory.manager.peakReservedBytes <= BUDGET);
      const totals = new Map<string, number>();
      for (const [w, n] of output.values as [string, number][]) totals.set(w, (totals.get(w) ?? 0) + n);
      assert.deepEqual(totals, expected);
    });
  });

  it('orders a byte table’s keys as JS strings compare (UTF-16), supplementary characters before U+E000–U+FFFF, without decoding them', () => {
    const words = ['', 'a', 'ab', 'b', 'é', 'z\u00ff', '\u07ff', '\u0800', '\ud7ff', '\ue000', '\uffff', '\u{10000}', '\u{1f600}', '\u{10ffff}', 'a\u{1f600}', 'a\uffff', 'a\ue000b'];
    const table = new ByteCountTable();
    for (const w of [...words].reverse()) {
      const bytes = Buffer.from(w);
      table.add(bytes, 0, bytes.length, hashBytes(bytes, 0, bytes.length));
    }
    const order = Array.from(table.sortedOrder(), (e) => Buffer.from(table.keyOf(e)).toString('utf8'));
    assert.deepEqual(order, [...words].sort());
  });

  it('sorts a byte table again and again through the same index arrays, counted in what it allocated once the first sort made them', () => {
    const table = new ByteCountTable();
    const before = table.allocatedBytes;
    let expected: string[] = [];
    for (let round = 0; round < 3; round++) {
      table.clear();
      const words = Array.from({ length: 3000 }, (_, i) => `w${(i * 7919 + round) % 100_003}`);
      for (const w of words) {
        const bytes = Buffer.from(w);
        table.add(bytes, 0, bytes.length, hashBytes(bytes, 0, bytes.length));
      }
      const allocated = table.allocatedBytes;
      const order = Array.from(table.sortedOrder(), (e) => Buffer.from(table.keyOf(e)).toString('utf8'));
      expected = [...new Set(words)].sort();
      assert.deepEqual(order, expected);
      if (round === 0) assert.ok(table.allocatedBytes > allocated, 'the first sort adds its index arrays to what the table allocated');
      else assert.equal(table.allocatedBytes, allocated, `round ${round}: no new arrays`);
    }
    assert.ok(table.allocatedBytes > before);
    table.release();
    assert.equal(table.allocatedBytes, before, 'release gives them back');
  });

  it('grows a sortable byte table’s index arrays with its entries, counted before its first sort', () => {
    const table = new ByteCountTable({ sortable: true });
    for (let i = 0; i < 20_000; i++) {
      const bytes = Buffer.from(`k${i}`);
      table.add(bytes, 0, bytes.length, hashBytes(bytes, 0, bytes.length));
    }
    const allocated = table.allocatedBytes;
    assert.equal(table.sortedOrder().length, 20_000);
    assert.equal(table.allocatedBytes, allocated, 'the sort allocated nothing the owner had not seen counted');
  });

  it('merges spilled runs of non-ASCII string keys (the binary count path) into one count per key', async () => {
    await withDir(async (dir) => {
      const keys: KeyValue[] = Array.from({ length: 9000 }, (_, i) => `${['é', '\ue000', '\u{1f600}', 'a', '\uffff'][i % 5]}${i}`);
      const values = stream(30_000, keys);
      const { out, runs } = await aggregate(values, COUNT, dir, false);
      assert.ok(runs >= 4);
      assert.deepEqual(byKey(out), reference(values, COUNT));
    });
  });
  it('stops combining when nearly every record brings a new key (partial-aggregation skipping), and the counts stay exact', async () => {
    await withDir(async (dir) => {
      const run = async (values: readonly { k: KeyValue; seq: number }[], aggregator: Aggregator): Promise<{ forwarding: boolean; pairs: number; out: Map<string, unknown> }> => {
        const mapContext = testingOperatorContext({ budgetBytes: 1024 * 1024, spillDir: dir, name: 'combine' });
        const reduceContext = testingOperatorContext({ budgetBytes: 1024 * 1024, spillDir: dir, name: 'aggregate' });
        const output = new CollectingOutput();
        const reducer = new AggregateOperator(aggregator, undefined, output, reduceContext);
        let pairs = 0;
        const combiner = new CombineOperator((v) => (v as { k: KeyValue }).k, aggregator, 1_000_000, { collect: (pair) => { pairs++; reducer.collect(pair); } }, mapContext);
        try {
          for (const v of values) combiner.collect(v);
          await combiner.finish();
          await reducer.finish();
          return { forwarding: combiner.forwarding, pairs, out: byKey(output.values) };
        } finally {
          combiner.close();
          reducer.close();
          mapContext.memory.spill.close();
          reduceContext.memory.spill.close();
        }
      };
      // distinct keys, then a key seen again and again: forwarded one by one, merged by the reducer
      const distinct = [...Array.from({ length: COMBINE_SKIP_CHECK_RECORDS + 5000 }, (_, seq) => ({ k: `d${seq}` as KeyValue, seq })), ...Array.from({ length: 50 }, (_, i) => ({ k: 'again' as KeyValue, seq: -1 - i }))];
      for (const aggregator of [COUNT, COLLECT]) {
        const skipped = await run(distinct, aggregator);
        assert.equal(skipped.forwarding, true);
        assert.equal(skipped.pairs, distinct.length, 'the keys held at the check, then every value, forwarded');
        assert.deepEqual(skipped.out, reference(distinct, aggregator));
      }
      // few keys: it keeps combining
      const few = stream(COMBINE_SKIP_CHECK_RECORDS + 5000, keysOf(2000, 'mixed'));
      const combined = await run(few, COUNT);
      assert.equal(combined.forwarding, false);
      assert.ok(combined.pairs <= 2000);
      assert.deepEqual(combined.out, reference(few, COUNT));
    });
  });
});
