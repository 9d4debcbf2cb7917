// ctx.generate's pacing: a rate-limited generator emits about a millisecond's worth of records between two
// yields to the event loop (a steady stream for a restarted consumer to resume on), an unlimited one up to
// 256 at a time; and it emits each split's sequence numbers in turn, each once.
import { strict as assert } from 'node:assert';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { GeneratorSource } from '../src/operators/generator-source.js';
import type { Output } from '../src/operators/stream-operator.js';
import { testingOperatorContext } from './support/operator-context.js';

/** Runs a generator; returns its values and how many it emitted in each synchronous run (between yields). */
async function generate(count: number, ratePerSecond: number, splits: number): Promise<{ values: number[]; runs: number[] }> {
  const dir = await mkdtemp(join(tmpdir(), 'weft-generator-'));
  try {
    const values: number[] = [];
    const runs: number[] = [];
    let inRun = false;
    const output: Output = {
      collect(value) {
        // a microtask runs only once the generator yields: every record before it is of one synchronous run
        if (!inRun) {
          inRun = true;
          runs.push(0);
          queueMicrotask(() => (inRun = false));
        }
        runs[runs.length - 1]! += 1;
        values.push(value as number);
      },
    };
    await new GeneratorSource({ fn: (seq) => seq, count, ratePerSecond, splits }, output, testingOperatorContext({ budgetBytes: 1 << 20, spillDir: dir })).run();
    return { values, runs };
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

describe('ctx.generate pacing', () => {
  it('emits a millisecond of records at a time at a limited rate: 10,000/s, 10 at a time', async () => {
    const { values, runs } = await generate(300, 10_000, 2);
    assert.deepEqual([...values].sort((a, b) => a - b), Array.from({ length: 300 }, (_, i) => i), 'every sequence number once');
    assert.ok(Math.max(...runs) <= 10, `at most 10 between two yields: ${runs.join(',')}`);
    assert.ok(runs.length >= 30, `${runs.length} runs`);
  });

  it('rounds a rate under one record a millisecond up to one at a time', async () => {
    const { runs } = await generate(5, 500, 1);
    assert.deepEqual(runs, [1, 1, 1, 1, 1]);
  });

  it('emits 256 at a time when unlimited', async () => {
    const { values, runs } = await generate(1000, Number.POSITIVE_INFINITY, 4);
    assert.equal(values.length, 1000);
    assert.deepEqual(runs, [256, 256, 256, 232]);
  });
});
