// ctx.generate's pacing: a rate-limited generator emits about a millisecond's worth of records between two
// yields to the event loop (a steady stream for a restarted consumer to resume on), an unlimited one up to
// 256 at a time; and it emits its splits' sequence numbers each once, in increasing order — from a restore
// halfway through a round too (the streaming-faults flake: out of order by a round, a window dropped a record as late).
import { strict as assert } from 'node:assert';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { GENERATOR_SPLITS_STATE, GeneratorSource } from '../src/operators/generator-source.js';
import { OperatorStateBackend } from '../src/state/operator-state-backend.js';
import type { Output } from '../src/operators/stream-operator.js';
import { testingOperatorContext } from './support/operator-context.js';

/** Runs a generator; returns its values and how many it emitted in each synchronous run (between yields). */
async function generate(count: number, ratePerSecond: number, splits: number, restored?: [number, number][]): Promise<{ values: number[]; runs: number[] }> {
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
    const context = testingOperatorContext({ budgetBytes: 1 << 20, spillDir: dir });
    if (restored !== undefined) {
      const backend = new OperatorStateBackend();
      backend.listState<[number, number]>(GENERATOR_SPLITS_STATE, 'split').update(restored);
      Object.assign(context, { state: { restored: true, operator: () => backend, keyed: () => assert.fail('no keyed state') } });
    }
    await new GeneratorSource({ fn: (seq) => seq, count, ratePerSecond, splits }, output, context).run();
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

/** The sequence numbers of `splits` splits from the positions `[split, next]` up to `count`, sorted: the naive reference. */
function remaining(positions: [number, number][], splits: number, count: number): number[] {
  const seqs: number[] = [];
  for (const [split, next] of positions) for (let seq = split + next * splits; seq < count; seq += splits) seqs.push(seq);
  return seqs.sort((a, b) => a - b);
}

describe('ctx.generate order', () => {
  it('emits its splits in increasing order from the start', async () => {
    const { values } = await generate(1000, Number.POSITIVE_INFINITY, 8);
    assert.deepEqual(values, Array.from({ length: 1000 }, (_, i) => i));
  });

  it('emits in increasing order after a restore halfway through a round (the first splits one ahead)', async () => {
    // subtask 0 of 2 over 128 splits owns 0..63; its checkpoint came after split 51 of round 118
    const positions = Array.from({ length: 64 }, (_, s): [number, number] => [s, s <= 51 ? 118 : 117]);
    const { values } = await generate(20_000, Number.POSITIVE_INFINITY, 128, positions);
    assert.equal(values[0], 52 + 117 * 128, 'the lowest number left first');
    assert.deepEqual(values, remaining(positions, 128, 20_000));
  });

  it('emits in increasing order after a rescale dealt it splits at far-apart positions', async () => {
    const positions: [number, number][] = [[0, 40], [1, 40], [2, 25], [3, 25], [5, 30]];
    const { values } = await generate(400, Number.POSITIVE_INFINITY, 8, positions);
    assert.deepEqual(values, remaining(positions, 8, 400));
  });

  it('emits nothing from splits already past the count', async () => {
    const { values } = await generate(100, Number.POSITIVE_INFINITY, 4, [[0, 25], [1, 24], [2, 30]]);
    assert.deepEqual(values, [97]);
  });
});
