import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import type { KeyValue } from '@weft/engine';
import { LocalSortOperator } from '../src/operators/local-sort-operator.js';
import { compareKeys } from '../src/runtime/key-compare.js';
import { CollectingOutput, testingOperatorContext } from './support/operator-context.js';

const BUDGET = 64 * 1024;

/** Records `{ k, seq, pad }`: keys from a small pool (many ties), so stability shows. */
function records(n: number, keys: readonly KeyValue[], padBytes = 40): { k: KeyValue; seq: number; pad: string }[] {
  let seed = 12345;
  const random = (): number => {
    seed = (Math.imul(seed, 1103515245) + 12345) >>> 0;
    return seed / 2 ** 32;
  };
  return Array.from({ length: n }, (_, seq) => ({ k: keys[Math.floor(random() * keys.length)] as KeyValue, seq, pad: 'x'.repeat(padBytes) }));
}

/** The reference: a stable JS sort with the same order. */
function reference<T extends { k: KeyValue }>(values: readonly T[], descending: boolean): T[] {
  const sign = descending ? -1 : 1;
  return [...values].sort((a, b) => sign * compareKeys(a.k, b.k));
}

async function sortWith(values: readonly unknown[], options: { descending?: boolean; budgetBytes?: number; spillDir: string; signal?: AbortSignal }): Promise<{ out: unknown[]; runs: number }> {
  const context = testingOperatorContext({ budgetBytes: options.budgetBytes ?? BUDGET, spillDir: options.spillDir, ...(options.signal === undefined ? {} : { signal: options.signal }), name: 'sort' });
  const output = new CollectingOutput();
  const op = new LocalSortOperator((v) => (v as { k: KeyValue }).k, options.descending ?? false, output, context);
  try {
    for (const v of values) op.collect([0, v]);
    await op.finish();
    return { out: output.values, runs: op.runsSpilled };
  } finally {
    op.close();
    context.memory.spill.close();
  }
}

function withDir<T>(fn: (dir: string) => Promise<T>): Promise<T> {
  const dir = mkdtempSync(join(tmpdir(), 'weft-sort-test-'));
  return fn(dir).finally(() => rmSync(dir, { recursive: true, force: true }));
}

const MIXED: KeyValue[] = [null, false, true, -0, 0, 1, -1, 2.5, Number.NaN, Number.POSITIVE_INFINITY, Number.NEGATIVE_INFINITY, '', 'a', 'b', 'ab', 'é', [1], [1, 'a'], [null], [Number.NaN], [-0], [0], ['x', [2]]];
const STRINGS: KeyValue[] = Array.from({ length: 300 }, (_, i) => `key-${(i * 7919) % 1000}`);
const NUMBERS: KeyValue[] = Array.from({ length: 300 }, (_, i) => ((i * 7919) % 1000) - 500 + (i % 3) / 4);

describe('the external sort (sortBy, local-sort-operator)', () => {
  for (const [what, keys] of [['string', STRINGS], ['number', NUMBERS], ['mixed', MIXED]] as const) {
    for (const descending of [false, true]) {
      it(`sorts ${what} keys ${descending ? 'descending' : 'ascending'} as a stable in-memory sort does, below the budget (no spill) and at 8x it (spilled runs, merged)`, async () => {
        await withDir(async (dir) => {
          const small = records(200, keys);
          const below = await sortWith(small, { descending, spillDir: dir });
          assert.equal(below.runs, 0, 'nothing spills below the budget');
          assert.deepEqual(below.out, reference(small, descending));
          // ~70 serialized bytes a record: 8x the budget
          const big = records(Math.ceil((8 * BUDGET) / 70), keys);
          const above = await sortWith(big, { descending, spillDir: dir });
          assert.ok(above.runs >= 8, `spilled ${above.runs} runs`);
          assert.deepEqual(above.out, reference(big, descending));
          assert.deepEqual(readdirSync(dir), [], 'no spill file is left');
        });
      });
    }
  }

  it('spills runs of at least a sixteenth of the budget when another consumer of the task holds the whole budget (not a run per record)', async () => {
    await withDir(async (dir) => {
      const context = testingOperatorContext({ budgetBytes: BUDGET, spillDir: dir, name: 'sort' });
      // a chain-mate (a join's build side, a combiner) holding the task's whole budget
      context.memory.manager.consumer('chain-mate').forceReserve(BUDGET);
      const output = new CollectingOutput();
      const op = new LocalSortOperator((v) => (v as { k: KeyValue }).k, false, output, context);
      const values = records(2_000, STRINGS);
      try {
        for (const v of values) op.collect([0, v]);
        await op.finish();
        assert.deepEqual(output.values, reference(values, false));
        // runs of at least BUDGET / 16 (4 KiB): at most bytes / 4 KiB + 1 of them (about 66 here), and as many
        // again written by the merge passes (runsSpilled counts those; the fan-in is 2 at this budget)
        const bytes = values.length * (JSON.stringify(values[0]).length + 64);
        assert.ok(op.runsSpilled <= 2 * (Math.ceil(bytes / (BUDGET / 16)) + 1), `${op.runsSpilled} runs for ${values.length} records`);
        assert.ok(op.runsSpilled >= 2, `${op.runsSpilled} runs: it still spills`);
      } finally {
        op.close();
        context.memory.spill.close();
      }
    });
  });

  it('fills the same pages run after run: what its buffer ever allocated fits the budget, at 16x it', async () => {
    await withDir(async (dir) => {
      const context = testingOperatorContext({ budgetBytes: BUDGET, spillDir: dir, name: 'sort' });
      const output = new CollectingOutput();
      const op = new LocalSortOperator((v) => (v as { k: KeyValue }).k, false, output, context);
      try {
        const big = records(Math.ceil((16 * BUDGET) / 70), STRINGS);
        for (const v of big) op.collect([0, v]);
        await op.finish();
        assert.ok(op.runsSpilled >= 16, `spilled ${op.runsSpilled} runs`);
        const { allocated, pageBytes } = op.pages;
        assert.ok(allocated * pageBytes <= BUDGET, `${allocated} pages of ${pageBytes} bytes allocated over ${op.runsSpilled} runs, budget ${BUDGET}`);
        assert.ok(context.memory.manager.peakReservedBytes <= BUDGET + 200, `peak reserved ${context.memory.manager.peakReservedBytes}`);
        assert.deepEqual(output.values, reference(big, false));
      } finally {
        op.close();
        context.memory.spill.close();
      }
    });
  });

  it('orders string keys as JS strings compare (UTF-16: supplementary characters before U+E000–U+FFFF) when spilled, long ones and lone surrogates included', async () => {
    await withDir(async (dir) => {
      const bases = ['é', '\ue000', '\uffff', '\u{1f600}', '\u{10000}', 'a', 'z\u00ff', '\u07ff', '\u0800', 'x'.repeat(70), 'y'.repeat(200), ''];
      const keys: KeyValue[] = Array.from({ length: 400 }, (_, i) => `${bases[i % bases.length] as string}${(i * 7919) % 97}`);
      for (const descending of [false, true]) {
        const wellFormed = records(Math.ceil((8 * BUDGET) / 70), keys);
        const sorted = await sortWith(wellFormed, { descending, spillDir: dir });
        assert.ok(sorted.runs >= 4, `spilled ${sorted.runs} runs`);
        assert.deepEqual(sorted.out, reference(wellFormed, descending));
        // a key with a lone surrogate (no UTF-8) now and then: that run's keys become JS strings, the next runs start over
        // (made by the key selector: values themselves go through the serializer, which writes UTF-8)
        const keyOf = (v: { k: KeyValue; seq: number }): KeyValue => (v.seq % 500 === 499 ? `${v.k as string}\ud800` : v.k);
        const context = testingOperatorContext({ budgetBytes: BUDGET, spillDir: dir, name: 'sort' });
        const output = new CollectingOutput();
        const op = new LocalSortOperator((v) => keyOf(v as { k: KeyValue; seq: number }), descending, output, context);
        try {
          for (const v of wellFormed) op.collect([0, v]);
          await op.finish();
        } finally {
          op.close();
          context.memory.spill.close();
        }
        const sign = descending ? -1 : 1;
        assert.deepEqual(output.values, [...wellFormed].sort((a, b) => sign * compareKeys(keyOf(a), keyOf(b))));
      }
      assert.deepEqual(readdirSync(dir), []);
    });
  });

  it('keeps -0 and 0, NaN, null and Infinity apart as keys, in compareKeys order, when spilled', async () => {
    await withDir(async (dir) => {
      const keys: KeyValue[] = [0, -0, Number.NaN, null, Number.POSITIVE_INFINITY, [0], [-0], [null], [Number.NaN]];
      const values = records(6000, keys, 60);
      const { out, runs } = await sortWith(values, { spillDir: dir });
      assert.ok(runs > 0);
      const seen = (out as { k: KeyValue }[]).map((v) => v.k);
      const firstNegZero = seen.findIndex((k) => Object.is(k, -0));
      const firstZero = seen.findIndex((k) => Object.is(k, 0));
      assert.ok(firstNegZero >= 0 && firstZero > firstNegZero, '-0 sorts just before 0 and stays -0');
      assert.ok(seen.some((k) => Array.isArray(k) && Object.is(k[0], -0)), '[-0] survives a spill');
      assert.deepEqual(out, reference(values, false));
    });
  });

  it('removes its spill files when the job fails after spilling, and when it is cancelled while merging', async () => {
    await withDir(async (dir) => {
      const big = records(Math.ceil((8 * BUDGET) / 70), STRINGS);
      const context = testingOperatorContext({ budgetBytes: BUDGET, spillDir: dir, name: 'sort' });
      let n = 0;
      const failing = new LocalSortOperator((v) => {
        if (++n === big.length - 10) throw new Error('boom');
        return (v as { k: KeyValue }).k;
      }, false, new CollectingOutput(), context);
      assert.throws(() => {
        for (const v of big) failing.collect([0, v]);
      }, (error: { code?: string }) => error.code === 'WEFT_ERR_USER_FUNCTION_FAILED');
      assert.ok(failing.runsSpilled > 0);
      assert.ok(readdirSync(dir).length > 0, 'the spill directory holds runs before the close');
      failing.close();
      context.memory.spill.close();
      assert.deepEqual(readdirSync(dir), []);

      const abort = new AbortController();
      const cancelled = testingOperatorContext({ budgetBytes: BUDGET, spillDir: dir, signal: abort.signal, name: 'sort' });
      const output = { collect: (): void => { if (abort.signal.aborted === false) abort.abort(new Error('cancelled')); } };
      const op = new LocalSortOperator((v) => (v as { k: KeyValue }).k, false, output, cancelled);
      const many = records(40_000, STRINGS, 8);
      for (const v of many) op.collect([0, v]);
      assert.ok(op.runsSpilled > 0);
      await assert.rejects(op.finish(), /cancelled/);
      op.close();
      cancelled.memory.spill.close();
      assert.deepEqual(readdirSync(dir), []);
    });
  });

  it('refuses one record larger than the budget with WEFT_ERR_RECORD_TOO_LARGE naming the operator, the record size and the budget', async () => {
    await withDir(async (dir) => {
      const big = { k: 'big', seq: 0, pad: 'y'.repeat(BUDGET + 10) };
      await assert.rejects(sortWith([{ k: 'a', seq: 1, pad: '' }, big], { spillDir: dir }), (error: { code?: string; context?: Record<string, unknown>; message: string }) => {
        assert.equal(error.code, 'WEFT_ERR_RECORD_TOO_LARGE');
        assert.equal(error.context?.['operator'], 'sort');
        assert.equal(error.context?.['budgetBytes'], BUDGET);
        assert.ok((error.context?.['recordBytes'] as number) > BUDGET);
        assert.match(error.message, /"sort".*\d+ bytes.*budget of 65536 bytes/);
        return true;
      });
      assert.deepEqual(readdirSync(dir), []);
    });
  });

  it('fails with WEFT_ERR_SPILL_FAILED naming the path and ENOSPC when the spill disk is full (a 1 MiB tmpfs), and leaves no spill file', async (t) => {
    const mountPoint = mkdtempSync(join(tmpdir(), 'weft-spill-tmpfs-'));
    try {
      try {
        execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=1m', 'tmpfs', mountPoint], { stdio: 'ignore' });
      } catch {
        t.skip('cannot mount a tmpfs here (needs root); the spill-root test below covers the error path');
        return;
      }
      try {
        const big = records(Math.ceil((32 * BUDGET) / 70), STRINGS); // 2 MiB of runs on a 1 MiB disk
        await assert.rejects(sortWith(big, { spillDir: mountPoint }), (error: { code?: string; context?: Record<string, unknown>; message: string }) => {
          assert.equal(error.code, 'WEFT_ERR_SPILL_FAILED');
          assert.equal(error.context?.['errno'], 'ENOSPC');
          assert.ok(String(error.context?.['path']).startsWith(mountPoint), String(error.context?.['path']));
          assert.match(error.message, /ENOSPC/);
          return true;
        });
        assert.deepEqual(readdirSync(mountPoint), [], 'the spill files are removed');
      } finally {
        execFileSync('umount', [mountPoint]);
      }
    } finally {
      rmSync(mountPoint, { recursive: true, force: true });
    }
  });

  it('fails with WEFT_ERR_SPILL_FAILED naming the path when the spill directory cannot be made', async () => {
    await withDir(async (dir) => {
      const notADir = join(dir, 'file');
      writeFileSync(notADir, 'x');
      mkdirSync(join(dir, 'ok'));
      const big = records(Math.ceil((2 * BUDGET) / 70), STRINGS);
      await assert.rejects(sortWith(big, { spillDir: notADir }), (error: { code?: string; context?: Record<string, unknown> }) => {
        assert.equal(error.code, 'WEFT_ERR_SPILL_FAILED');
        assert.equal(error.context?.['path'], notADir);
        return true;
      });
    });
  });
});
