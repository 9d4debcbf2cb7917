// The hybrid hash join (issue 13, Deliver 4 and 7): every join kind against a naive nested-loop join
// written here, with the build side below the task memory budget, at 4x it, at 32x it (partitions
// repartitioned a level down) and with one key holding 4x the budget (the nested-loop fallback); spill
// files gone after success, failure and cancellation; keys JSON would merge kept apart.
import assert from 'node:assert/strict';
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import type { JoinType, KeyValue } from '@weft/engine';
import { JoinOperator } from '../src/operators/join-operator.js';
import { CollectingOutput, testingOperatorContext } from './support/operator-context.js';

/** The files the operator itself left in its task's spill directory (before the task removes the directory). */
function leftInSpillDirectory(context: ReturnType<typeof testingOperatorContext>): string[] {
  const path = context.memory.spill.path;
  return path === undefined ? [] : readdirSync(path);
}

/** A tiny budget, so 4x it is a few thousand records. */
const BUDGET = 64 * 1024;
const KINDS: readonly JoinType[] = ['inner', 'left', 'right', 'full'];

interface Row {
  readonly k: KeyValue;
  readonly side: string;
  readonly i: number;
  readonly pad: string;
}

const SPECIAL: KeyValue[] = [0, -0, Number.NaN, null, Number.POSITIVE_INFINITY, [Number.NaN], [null], [Number.POSITIVE_INFINITY], [-0], [0], '0', ['0'], [[0]]];

function rows(n: number, side: string, keys: readonly KeyValue[], pad = 60): Row[] {
  let seed = side === 'L' ? 7 : 13;
  return Array.from({ length: n }, (_, i) => {
    seed = (Math.imul(seed, 1103515245) + 12345) >>> 0;
    return { k: keys[(seed >>> 8) % keys.length] as KeyValue, side, i, pad: 'p'.repeat(pad) };
  });
}

/** Key equality as the engine defines it: Object.is on primitives (NaN = NaN, -0 ≠ 0), element-wise on arrays. */
function sameKey(a: KeyValue, b: KeyValue): boolean {
  if (Array.isArray(a) || Array.isArray(b)) {
    if (!Array.isArray(a) || !Array.isArray(b) || a.length !== b.length) return false;
    return a.every((x, i) => sameKey(x as KeyValue, b[i] as KeyValue));
  }
  return Object.is(a, b);
}

const show = (l: Row | null, r: Row | null): string => `${l === null ? '-' : l.i}|${r === null ? '-' : r.i}`;

/** The reference: a nested loop over both sides, plus the unmatched rows of the outer side(s). */
function reference(type: JoinType, left: readonly Row[], right: readonly Row[]): string[] {
  const out: string[] = [];
  const rightMatched = new Uint8Array(right.length);
  for (const l of left) {
    let matched = false;
    right.forEach((r, j) => {
      if (!sameKey(l.k, r.k)) return;
      matched = true;
      rightMatched[j] = 1;
      out.push(show(l, r));
    });
    if (!matched && (type === 'left' || type === 'full')) out.push(show(l, null));
  }
  if (type === 'right' || type === 'full') right.forEach((r, j) => rightMatched[j] === 0 && out.push(show(null, r)));
  return out.sort();
}

interface JoinRun {
  readonly out: string[];
  readonly spilled: boolean;
  readonly stats: JoinOperator['stats'];
}

async function runJoin(type: JoinType, left: readonly Row[], right: readonly Row[], build: 0 | 1, dir: string): Promise<JoinRun> {
  const context = testingOperatorContext({ budgetBytes: BUDGET, spillDir: dir, name: 'join' });
  const output = new CollectingOutput();
  const key = (v: unknown): KeyValue => (v as Row).k;
  const op = new JoinOperator({ leftKey: key, rightKey: key, fn: (l, r) => show(l as Row | null, r as Row | null), build, type }, output, context);
  try {
    const [first, second] = build === 0 ? [left, right] : [right, left];
    for (const v of first) op.processInput(v, build);
    for (const v of second) op.processInput(v, build === 0 ? 1 : 0);
    await op.finish();
    return { out: (output.values as string[]).sort(), spilled: op.spilled, stats: op.stats };
  } finally {
    op.close();
    assert.deepEqual(leftInSpillDirectory(context), [], 'the join removed its own files');
    context.memory.spill.close();
    assert.equal(context.memory.manager.reservedBytes, 0, 'the join gave its memory back');
  }
}

function withDir<T>(fn: (dir: string) => Promise<T>): Promise<T> {
  const dir = mkdtempSync(join(tmpdir(), 'weft-join-test-'));
  return fn(dir).finally(() => rmSync(dir, { recursive: true, force: true }));
}

/** ~96 bytes a build row, serialized and framed (key and value): rows of `times` the budget in serialized bytes alone. */
const rowsFor = (times: number): number => Math.ceil((times * BUDGET) / 96);

/** Keys: the special ones, strings and numbers, and some only one side has. */
const KEYS: KeyValue[] = [...SPECIAL, ...Array.from({ length: 1500 }, (_, i) => (i % 2 === 0 ? `k${i}` : i))];
const LEFT_ONLY: KeyValue[] = Array.from({ length: 200 }, (_, i) => `left-only-${i}`);
const RIGHT_ONLY: KeyValue[] = Array.from({ length: 200 }, (_, i) => [`right-only`, i]);

function sides(buildRows: number, probeRows: number, build: 0 | 1): [Row[], Row[]] {
  const buildSide = build === 0 ? 'L' : 'R';
  const probeSide = build === 0 ? 'R' : 'L';
  const b = rows(buildRows, buildSide, [...KEYS, ...(build === 0 ? LEFT_ONLY : RIGHT_ONLY)]);
  const p = rows(probeRows, probeSide, [...KEYS, ...(build === 0 ? RIGHT_ONLY : LEFT_ONLY)]);
  return build === 0 ? [b, p] : [p, b];
}

describe('the hybrid hash join against a nested-loop reference', () => {
  for (const type of KINDS) {
    for (const build of [0, 1] as const) {
      it(`${type} join, build side ${build === 0 ? 'left' : 'right'}: the same pairs below the budget and with the build side at 4x it`, async () => {
        await withDir(async (dir) => {
          const [smallL, smallR] = sides(200, 300, build);
          const below = await runJoin(type, smallL, smallR, build, dir);
          assert.equal(below.spilled, false);
          assert.deepEqual(below.out, reference(type, smallL, smallR));

          const [l, r] = sides(rowsFor(4), 1500, build);
          const above = await runJoin(type, l, r, build, dir);
          assert.equal(above.spilled, true);
          assert.ok(above.stats.partitionsSpilled < 16, 'hybrid: some partitions stayed in memory');
          const expected = reference(type, l, r);
          assert.ok(expected.length > 1000);
          assert.deepEqual(above.out, expected);
          assert.deepEqual(readdirSync(dir), [], 'no spill file is left');
        });
      });
    }
  }

  for (const type of ['inner', 'full'] as const) {
    it(`${type} join: repartitions a level down (another hash seed) when spilled partitions are larger than the budget (build side 32x it)`, async () => {
      await withDir(async (dir) => {
        const [l, r] = sides(rowsFor(32), 800, 1);
        const run = await runJoin(type, l, r, 1, dir);
        assert.ok(run.stats.deepestLevel >= 2, `joined at level ${run.stats.deepestLevel}`);
        assert.equal(run.stats.nestedLoops, 0);
        // pages are recycled across spills and levels: what was ever allocated fits the budget
        assert.ok(run.stats.pageBytesAllocated <= BUDGET, `${run.stats.pageBytesAllocated} bytes of pages allocated`);
        assert.deepEqual(run.out, reference(type, l, r));
        assert.deepEqual(readdirSync(dir), []);
      });
    });
  }

  for (const type of KINDS) {
    it(`${type} join: one key holding 4x the budget is joined block by block, exactly`, async () => {
      await withDir(async (dir) => {
        // half of the build side on one key: no hash seed splits it
        const build = rows(rowsFor(8), 'R', ['hot', ...KEYS.slice(0, 400)]).map((row, i) => (i % 2 === 0 ? { ...row, k: 'hot' } : row));
        const probe = rows(600, 'L', ['hot', ...KEYS.slice(200, 600), ...LEFT_ONLY]).map((row, i) => (i % 100 === 0 ? { ...row, k: 'hot' } : row));
        const run = await runJoin(type, probe, build, 1, dir);
        assert.ok(run.stats.nestedLoops >= 1);
        assert.deepEqual(run.out, reference(type, probe, build));
        assert.deepEqual(readdirSync(dir), []);
      });
    });
  }

  it('keeps [NaN], [null], [Infinity], -0 and 0 apart, in memory and spilled', async () => {
    await withDir(async (dir) => {
      const keys: KeyValue[] = [[Number.NaN], [null], [Number.POSITIVE_INFINITY], -0, 0, Number.NaN, null];
      const left = keys.map((k, i): Row => ({ k, side: 'L', i, pad: '' }));
      const right = keys.map((k, i): Row => ({ k, side: 'R', i, pad: '' }));
      const diagonal = keys.map((_, i) => `${i}|${i}`).sort();
      assert.deepEqual((await runJoin('inner', left, right, 1, dir)).out, diagonal);
      // the same keys among a build side 4x the budget: they go through spill files and back
      const filler = rows(rowsFor(4), 'R', KEYS.slice(SPECIAL.length)).map((row) => ({ ...row, i: row.i + 1000 }));
      const spilled = await runJoin('inner', left, [...right, ...filler], 1, dir);
      assert.equal(spilled.spilled, true);
      assert.deepEqual(spilled.out, diagonal);
    });
  });
});

describe('the hybrid hash join cleans up', () => {
  function spilledJoin(dir: string, fn: (l: unknown, r: unknown) => unknown, signal?: AbortSignal): { op: JoinOperator; context: ReturnType<typeof testingOperatorContext> } {
    const context = testingOperatorContext({ budgetBytes: BUDGET, spillDir: dir, name: 'join', ...(signal === undefined ? {} : { signal }) });
    const key = (v: unknown): KeyValue => (v as Row).k;
    const op = new JoinOperator({ leftKey: key, rightKey: key, fn, build: 1, type: 'right' }, new CollectingOutput(), context);
    const [l, r] = sides(rowsFor(32), 800, 1);
    for (const v of r) op.processInput(v, 1);
    for (const v of l) op.processInput(v, 0);
    assert.ok(op.spilled);
    assert.ok(readdirSync(dir).length > 0, 'spill files exist before finish');
    return { op, context };
  }

  it('removes every spill file when the join function fails while spilled partitions are joined', async () => {
    await withDir(async (dir) => {
      let finishing = false;
      let calls = 0;
      const { op, context } = spilledJoin(dir, () => {
        if (finishing && ++calls === 2000) throw new Error('boom');
        return 1;
      });
      finishing = true;
      await assert.rejects(op.finish(), (error: { code?: string }) => error.code === 'WEFT_ERR_USER_FUNCTION_FAILED');
      op.close();
      assert.deepEqual(leftInSpillDirectory(context), [], 'the join removed its own files');
      context.memory.spill.close();
      assert.equal(context.memory.manager.reservedBytes, 0);
      assert.deepEqual(readdirSync(dir), []);
    });
  });

  it('removes every spill file when the task is cancelled while spilled partitions are joined', async () => {
    await withDir(async (dir) => {
      const abort = new AbortController();
      const { op, context } = spilledJoin(dir, () => 1, abort.signal);
      abort.abort(new Error('cancelled'));
      await assert.rejects(op.finish(), /cancelled/);
      op.close();
      assert.deepEqual(leftInSpillDirectory(context), [], 'the join removed its own files');
      context.memory.spill.close();
      assert.equal(context.memory.manager.reservedBytes, 0);
      assert.deepEqual(readdirSync(dir), []);
    });
  });

  it('fails with WEFT_ERR_RECORD_TOO_LARGE for one build record larger than the budget, and leaves no file', async () => {
    await withDir(async (dir) => {
      const context = testingOperatorContext({ budgetBytes: BUDGET, spillDir: dir, name: 'join' });
      const key = (v: unknown): KeyValue => (v as Row).k;
      const op = new JoinOperator({ leftKey: key, rightKey: key, fn: () => 1, build: 1, type: 'inner' }, new CollectingOutput(), context);
      for (const v of rows(100, 'R', KEYS)) op.processInput(v, 1);
      assert.throws(
        () => op.processInput({ k: 'big', side: 'R', i: -1, pad: 'x'.repeat(BUDGET + 1) }, 1),
        (error: { code?: string; context?: Record<string, unknown> }) => error.code === 'WEFT_ERR_RECORD_TOO_LARGE' && error.context?.['operator'] === 'join',
      );
      op.close();
      assert.deepEqual(leftInSpillDirectory(context), [], 'the join removed its own files');
      context.memory.spill.close();
      assert.deepEqual(readdirSync(dir), []);
    });
  });
});
