import assert from 'node:assert/strict';
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import type { KeyValue } from '@weft/engine';
import { JoinOperator } from '../src/operators/join-operator.js';
import { canonicalKey } from '../src/runtime/key-hash.js';
import { CollectingOutput, testingOperatorContext } from './support/operator-context.js';

const BUDGET = 64 * 1024;

interface Row {
  readonly k: KeyValue;
  readonly side: string;
  readonly i: number;
  readonly pad: string;
}

const SPECIAL: KeyValue[] = [0, -0, Number.NaN, null, [Number.NaN], [null], [Number.POSITIVE_INFINITY], [-0], [0], '0'];

function rows(n: number, side: string, keys: readonly KeyValue[], pad = 40): Row[] {
  let seed = side === 'L' ? 7 : 13;
  return Array.from({ length: n }, (_, i) => {
    seed = (Math.imul(seed, 1103515245) + 12345) >>> 0;
    return { k: keys[seed % keys.length] as KeyValue, side, i, pad: 'p'.repeat(pad) };
  });
}

/** The reference: every left row with every right row of the same canonical key. */
function reference(left: readonly Row[], right: readonly Row[]): string[] {
  const byKey = new Map<string, Row[]>();
  for (const r of right) {
    const c = canonicalKey(r.k);
    byKey.set(c, [...(byKey.get(c) ?? []), r]);
  }
  const out: string[] = [];
  for (const l of left) for (const r of byKey.get(canonicalKey(l.k)) ?? []) out.push(`${l.i}|${r.i}`);
  return out.sort();
}

async function runJoin(left: readonly Row[], right: readonly Row[], build: 0 | 1, dir: string): Promise<{ out: string[]; spilled: boolean }> {
  const context = testingOperatorContext({ budgetBytes: BUDGET, spillDir: dir, name: 'join' });
  const output = new CollectingOutput();
  const key = (v: unknown): KeyValue => (v as Row).k;
  const op = new JoinOperator({ leftKey: key, rightKey: key, fn: (l, r) => `${(l as Row).i}|${(r as Row).i}`, build }, output, context);
  try {
    const [first, second] = build === 0 ? [left, right] : [right, left];
    for (const v of first) op.processInput(v, build);
    for (const v of second) op.processInput(v, build === 0 ? 1 : 0);
    await op.finish();
    return { out: (output.values as string[]).sort(), spilled: op.spilled };
  } finally {
    op.close();
    context.memory.spill.close();
  }
}

function withDir<T>(fn: (dir: string) => Promise<T>): Promise<T> {
  const dir = mkdtempSync(join(tmpdir(), 'weft-join-test-'));
  return fn(dir).finally(() => rmSync(dir, { recursive: true, force: true }));
}

describe('the hash join with a build side past the budget (Grace partitions)', () => {
  for (const build of [0, 1] as const) {
    it(`joins as a naive reference does with the build side (input ${build}) below the budget and at 4x it`, async () => {
      await withDir(async (dir) => {
        const keys: KeyValue[] = [...SPECIAL, ...Array.from({ length: 3000 }, (_, i) => (i % 2 === 0 ? `k${i}` : i))];
        const smallL = rows(300, 'L', keys);
        const smallR = rows(300, 'R', keys);
        const below = await runJoin(smallL, smallR, build, dir);
        assert.equal(below.spilled, false);
        assert.deepEqual(below.out, reference(smallL, smallR));
        // ~110 bytes a build row: 4x the budget
        const bigBuild = rows(Math.ceil((4 * BUDGET) / 110), build === 0 ? 'L' : 'R', keys);
        const probe = rows(3000, build === 0 ? 'R' : 'L', keys);
        const [l, r] = build === 0 ? [bigBuild, probe] : [probe, bigBuild];
        const above = await runJoin(l, r, build, dir);
        assert.equal(above.spilled, true);
        assert.ok(above.out.length > 1000);
        assert.deepEqual(above.out, reference(l, r));
        assert.deepEqual(readdirSync(dir), [], 'no spill file is left');
      });
    });
  }

  it('removes its partitions when the join function fails after it spilled', async () => {
    await withDir(async (dir) => {
      const keys: KeyValue[] = Array.from({ length: 500 }, (_, i) => `k${i}`);
      const context = testingOperatorContext({ budgetBytes: BUDGET, spillDir: dir, name: 'join' });
      const key = (v: unknown): KeyValue => (v as Row).k;
      const op = new JoinOperator({ leftKey: key, rightKey: key, fn: () => { throw new Error('boom'); }, build: 0 }, new CollectingOutput(), context);
      for (const v of rows(3000, 'L', keys)) op.processInput(v, 0);
      for (const v of rows(100, 'R', keys)) op.processInput(v, 1);
      assert.ok(op.spilled);
      assert.ok(readdirSync(dir).length > 0);
      await assert.rejects(op.finish(), (error: { code?: string }) => error.code === 'WEFT_ERR_USER_FUNCTION_FAILED');
      op.close();
      context.memory.spill.close();
      assert.deepEqual(readdirSync(dir), []);
    });
  });
});
