// Approximate recovery loses the records in flight to a failed task, so a job that asks for it and writes
// to an exactly-once sink (a two-phase-commit sink, `sinkTo`) is refused before anything runs, the
// message naming both; the same job without approximate recovery runs, and an approximate job with an
// at-least-once sink is not refused.
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { defineJob, type ExchangeMode, fileCommitSink, isEngineError, runJob } from '@weft/engine';
import { createMemoryShuffleServiceFactory } from '@weft/shuffle-memory';

async function withDir<T>(fn: (dir: string) => Promise<T>): Promise<T> {
  const dir = await mkdtemp(join(tmpdir(), 'weft-approx-2pc-'));
  try {
    return await fn(dir);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

function run(dir: string, exchangeMode: ExchangeMode, sink: 'exactly-once' | 'text') {
  const memory = createMemoryShuffleServiceFactory();
  const job = defineJob((ctx) => {
    const rows = ctx.range(0, 100).rebalance().map((x) => `row ${x}`);
    if (sink === 'exactly-once') rows.sinkTo(fileCommitSink<string>({ dir: join(dir, 'parts') }), { name: 'committed-rows' });
    else rows.writeText(join(dir, 'rows.txt'));
  });
  return runJob({ job, parallelism: 2, exchangeMode, shuffle: { pipelined: memory, blocking: memory }, cwd: dir, restartStrategy: { type: 'none' } });
}

const lines = async (dir: string): Promise<string[]> => {
  const out: string[] = [];
  for (const name of (await readdir(dir)).filter((n) => !n.startsWith('.'))) out.push(...(await readFile(join(dir, name), 'utf8')).split('\n').filter((l) => l !== ''));
  return out.sort();
};

const expected = Array.from({ length: 100 }, (_, x) => `row ${x}`).sort();

describe('approximate recovery and an exactly-once sink', () => {
  it('is refused at start, naming approximate recovery and the sink; nothing is written', async () => {
    await withDir(async (dir) => {
      await assert.rejects(run(dir, 'ALL_EDGES_PIPELINED_APPROXIMATE', 'exactly-once'), (error: unknown) => {
        assert.ok(isEngineError(error, 'WEFT_ERR_APPROXIMATE_REFUSED'), String(error));
        assert.match(error.message, /approximate recovery/);
        assert.match(error.message, /exactly-once sink "committed-rows"/);
        assert.match(String(error.context['conflictsWith']), /committed-rows/);
        return true;
      });
      assert.equal(existsSync(join(dir, 'parts')), false);
    });
  });

  it('runs the same job without approximate recovery, every row committed once', async () => {
    await withDir(async (dir) => {
      const result = await run(dir, 'ALL_EDGES_PIPELINED', 'exactly-once');
      assert.equal(result.status, 'succeeded', result.error?.message);
      assert.deepEqual(await lines(join(dir, 'parts')), expected);
    });
  });

  it('runs an approximate job whose sink is at-least-once (a text sink)', async () => {
    await withDir(async (dir) => {
      const result = await run(dir, 'ALL_EDGES_PIPELINED_APPROXIMATE', 'text');
      assert.equal(result.status, 'succeeded', result.error?.message);
      assert.deepEqual((await readFile(join(dir, 'rows.txt'), 'utf8')).split('\n').filter((l) => l !== '').sort(), expected);
    });
  });
});
