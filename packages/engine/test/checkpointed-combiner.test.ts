// The map-side combiners in a checkpointed job: a checkpoint writes their partial aggregates into operator
// state instead of flushing them downstream, and a restore — with the same parallelism or another — brings
// each partial back to exactly one new combiner. The expected totals come from a naive count of the input.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import type { KeyValue } from '@weft/engine';
import type { Aggregator } from '../src/api/logical-graph.js';
import { VALUE_KEY } from '../src/api/split-words.js';
import { COMBINE_PARTIALS_STATE, CombineOperator } from '../src/operators/combine-operator.js';
import type { OperatorContext } from '../src/operators/stream-operator.js';
import { WordCountCombiner } from '../src/operators/word-count-combiner.js';
import { OperatorStateHolder } from '../src/runtime/operator-state-holder.js';
import { CollectingOutput, testingOperatorContext } from './support/operator-context.js';

const COUNT: Aggregator = { kind: 'count', create: () => 0, add: (a) => (a as number) + 1, merge: (a, b) => (a as number) + (b as number), result: (k, a) => [k, a] };
/** A generic aggregator (not the count fast path): the sum of `n`, keyed by `k`. */
const SUM: Aggregator = { create: () => 0, add: (a, v) => (a as number) + (v as { n: number }).n, merge: (a, b) => (a as number) + (b as number), result: (k, a) => [k, a] };
const byK = (v: unknown): KeyValue => (v as { k: KeyValue }).k;

interface Subtask {
  readonly combiner: CombineOperator | WordCountCombiner;
  readonly holder: OperatorStateHolder;
  readonly output: CollectingOutput;
}

function subtasks(request: { parallelism: number; restored?: readonly Uint8Array[]; dir: string; make: (output: CollectingOutput, context: OperatorContext) => CombineOperator | WordCountCombiner }): Subtask[] {
  return Array.from({ length: request.parallelism }, (_, subtask) => {
    const holder = new OperatorStateHolder({ operator: 'combine', subtask, parallelism: request.parallelism, maxParallelism: undefined, restored: request.restored === undefined ? undefined : { keyed: [], operator: request.restored } });
    const output = new CollectingOutput();
    const context: OperatorContext = { ...testingOperatorContext({ budgetBytes: 1 << 24, spillDir: request.dir, name: 'combine' }), subtask, parallelism: request.parallelism, state: holder };
    return { combiner: request.make(output, context), holder, output };
  });
}

/** Takes a checkpoint of every subtask as the task does: snapshotState, then the holder's snapshot. */
function checkpoint(tasks: readonly Subtask[]): Uint8Array[] {
  return tasks.map(({ combiner, holder }) => {
    combiner.snapshotState();
    return holder.snapshot().operator as Uint8Array;
  });
}

/** Totals by key (JSON: composite keys compare by content). */
function totals(pairs: readonly unknown[]): Map<string, number> {
  const out = new Map<string, number>();
  for (const [k, n] of pairs as [KeyValue, number][]) out.set(JSON.stringify(k), (out.get(JSON.stringify(k)) ?? 0) + n);
  return out;
}

function naive(values: readonly { k: KeyValue; n: number }[], weight: (v: { n: number }) => number): Map<string, number> {
  const out = new Map<string, number>();
  for (const v of values) out.set(JSON.stringify(v.k), (out.get(JSON.stringify(v.k)) ?? 0) + weight(v));
  return out;
}

function withDir(fn: (dir: string) => Promise<void>): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'weft-combiner-ckpt-'));
  return fn(dir).finally(() => rmSync(dir, { recursive: true, force: true }));
}

const VALUES = Array.from({ length: 3000 }, (_, i) => ({ k: i % 7 === 0 ? ['c', i % 5] : `k${(i * 13) % 97}`, n: (i % 11) + 1 })) as { k: KeyValue; n: number }[];

describe('the map-side combiners in a checkpointed job', () => {
  for (const [name, aggregator, weight] of [
    ['count', COUNT, () => 1],
    ['a generic aggregate (sum)', SUM, (v: { n: number }) => v.n],
  ] as const) {
    for (const [from, to] of [
      [3, 3],
      [3, 2],
      [2, 5],
    ] as const) {
      it(`${name}: a checkpoint flushes nothing downstream, and a restore ${from} -> ${to} brings every partial back once`, async () => {
        await withDir(async (dir) => {
          const make = (output: CollectingOutput, context: OperatorContext) => new CombineOperator(byK, aggregator, 1_000_000, output, context);
          const before = subtasks({ parallelism: from, dir, make });
          const half = VALUES.length / 2;
          VALUES.slice(0, half).forEach((v, i) => before[i % from]?.combiner.collect(v));
          const snapshots = checkpoint(before);
          assert.equal(before.reduce((n, t) => n + t.output.values.length, 0), 0, 'nothing crossed to the reducer at the checkpoint');
          for (const t of before) t.combiner.close?.();
          // the failed attempts' later records are lost; the restored ones read from the checkpoint's position
          const after = subtasks({ parallelism: to, restored: snapshots, dir, make });
          for (const t of after) await t.combiner.open?.();
          VALUES.slice(half).forEach((v, i) => after[i % to]?.combiner.collect(v));
          for (const t of after) await t.combiner.finish?.();
          assert.deepEqual(totals(after.flatMap((t) => t.output.values)), naive(VALUES, weight));
          for (const t of after) t.combiner.close?.();
        });
      });
    }
  }

  it('the fused word-count combiner snapshots its byte table and its record table, and a restore 2 -> 3 counts every word once', async () => {
    await withDir(async (dir) => {
      const make = (output: CollectingOutput, context: OperatorContext) => new WordCountCombiner(VALUE_KEY as (value: unknown) => KeyValue, COUNT, 1_000_000, output, context);
      const words = Array.from({ length: 2000 }, (_, i) => `w${(i * 31) % 150}`);
      const expected = naive(words.map((k) => ({ k, n: 1 })), () => 1);
      const before = subtasks({ parallelism: 2, dir, make });
      const [text, records] = [words.slice(0, 1000), words.slice(1000, 1500)];
      const bytes = Buffer.from(`${text.join(' ')}\n`);
      (before[0]?.combiner as WordCountCombiner).countWordsIn(bytes, 0, bytes.length);
      for (const w of records) before[1]?.combiner.collect(w);
      const snapshots = checkpoint(before);
      assert.equal(before.reduce((n, t) => n + t.output.values.length, 0), 0, 'nothing crossed to the reducer at the checkpoint');
      const list = before[0]?.holder.operator().listState<[string, number]>(COMBINE_PARTIALS_STATE, 'split').get() ?? [];
      assert.equal(list.reduce((n, [, c]) => n + c, 0), 1000, 'the byte table is in the snapshot');
      for (const t of before) t.combiner.close?.();
      const after = subtasks({ parallelism: 3, restored: snapshots, dir, make });
      for (const t of after) await t.combiner.open?.();
      words.slice(1500).forEach((w, i) => after[i % 3]?.combiner.collect(w));
      for (const t of after) await t.combiner.finish?.();
      assert.deepEqual(totals(after.flatMap((t) => t.output.values)), expected);
      for (const t of after) t.combiner.close?.();
    });
  });
});
