// Approximate recovery loses the records in flight to a failed task, so a job that asks for it and writes
// to an exactly-once sink (a two-phase-commit sink, `sinkTo`, of the default deliveryGuarantee) is refused
// before anything runs, the message naming both; the same job without approximate recovery runs, and so
// does an approximate job whose sink is declared deliveryGuarantee 'none', or a text sink.
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { defineJob, type ExchangeMode, fileCommitSink, isEngineError, type JobEventLog, loadJob, runJob } from '@weft/engine';
import { createMemoryShuffleServiceFactory } from '@weft/shuffle-memory';

async function withDir<T>(fn: (dir: string) => Promise<T>): Promise<T> {
  const dir = await mkdtemp(join(tmpdir(), 'weft-approx-2pc-'));
  try {
    return await fn(dir);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

function run(dir: string, exchangeMode: ExchangeMode, sink: 'exactly-once' | 'none' | 'text') {
  const memory = createMemoryShuffleServiceFactory();
  const job = defineJob((ctx) => {
    const rows = ctx.range(0, 100).rebalance().map((x) => `row ${x}`);
    if (sink === 'text') rows.writeText(join(dir, 'rows.txt'));
    else rows.sinkTo(fileCommitSink<string>({ dir: join(dir, 'parts') }), { name: 'committed-rows', ...(sink === 'none' ? { deliveryGuarantee: 'none' as const } : {}) });
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

  it("is refused when the job's own definition asks for approximate recovery, naming every exactly-once sink; no event log is opened", async () => {
    await withDir(async (dir) => {
      let opened = false;
      const eventLog = {
        description: 'stub',
        open: () => {
          opened = true;
          return Promise.reject(new Error('opened'));
        },
        readRun: () => Promise.resolve([]),
        listRuns: () => Promise.resolve([]),
      } as unknown as JobEventLog;
      const memory = createMemoryShuffleServiceFactory();
      const job = defineJob((ctx) => {
        const rows = ctx.range(0, 100).rebalance().map((x) => `row ${x}`);
        rows.writeText(join(dir, 'rows.txt'));
        rows.sinkTo(fileCommitSink<string>({ dir: join(dir, 'a') }), { name: 'sink-a' });
        rows.sinkTo(fileCommitSink<string>({ dir: join(dir, 'b') }), { name: 'sink-b' });
      }, { exchangeMode: 'ALL_EDGES_PIPELINED_APPROXIMATE' });
      await assert.rejects(runJob({ job, parallelism: 2, shuffle: { pipelined: memory, blocking: memory }, cwd: dir, eventLog, restartStrategy: { type: 'none' } }), (error: unknown) => {
        assert.ok(isEngineError(error, 'WEFT_ERR_APPROXIMATE_REFUSED'), String(error));
        assert.match(error.message, /exactly-once sinks "sink-a", "sink-b"/);
        return true;
      });
      assert.equal(opened, false, 'refused before the event log is opened');
      assert.deepEqual(await readdir(dir), []);
    });
  });

  it('runs the same job without approximate recovery, every row committed once', async () => {
    await withDir(async (dir) => {
      const result = await run(dir, 'ALL_EDGES_PIPELINED', 'exactly-once');
      assert.equal(result.status, 'succeeded', result.error?.message);
      assert.deepEqual(await lines(join(dir, 'parts')), expected);
    });
  });

  it("runs an approximate job whose sinkTo is declared deliveryGuarantee 'none', every row committed", async () => {
    await withDir(async (dir) => {
      const result = await run(dir, 'ALL_EDGES_PIPELINED_APPROXIMATE', 'none');
      assert.equal(result.status, 'succeeded', result.error?.message);
      assert.deepEqual(await lines(join(dir, 'parts')), expected);
    });
  });

  it('refuses a deliveryGuarantee other than exactly-once or none, naming the sink and the option', async () => {
    const job = defineJob((ctx) => ctx.range(0, 1).sinkTo(fileCommitSink<number>({ dir: 'x' }), { name: 'rows', deliveryGuarantee: 'at-least-once' as never }));
    await assert.rejects(
      loadJob({ job, args: [], parallelism: 1, cwd: process.cwd(), checkInputs: false }),
      (error: unknown) => isEngineError(error, 'WEFT_ERR_INVALID_JOB') && /operator "rows" \(two-phase-commit-sink\): deliveryGuarantee/.test(error.message) && /'exactly-once' or 'none'/.test(error.message),
    );
  });

  it('refuses a null deliveryGuarantee (only undefined is the default)', async () => {
    const job = defineJob((ctx) => ctx.range(0, 1).sinkTo(fileCommitSink<number>({ dir: 'x' }), { name: 'rows', deliveryGuarantee: null as never }));
    await assert.rejects(loadJob({ job, args: [], parallelism: 1, cwd: process.cwd(), checkInputs: false }), (error: unknown) => isEngineError(error, 'WEFT_ERR_INVALID_JOB') && /deliveryGuarantee: expected 'exactly-once' or 'none', got null/.test(error.message));
  });

  it('tells two unnamed exactly-once sinks apart by their uids, and names none of the sinks declared none', async () => {
    const memory = createMemoryShuffleServiceFactory();
    const job = defineJob((ctx) => {
      const rows = ctx.range(0, 10).rebalance().map((x) => x);
      rows.sinkTo(fileCommitSink<number>({ dir: 'a' }));
      rows.sinkTo(fileCommitSink<number>({ dir: 'b' }));
      rows.sinkTo(fileCommitSink<number>({ dir: 'c' }), { name: 'loose', deliveryGuarantee: 'none' });
    });
    await assert.rejects(runJob({ job, parallelism: 1, exchangeMode: 'ALL_EDGES_PIPELINED_APPROXIMATE', shuffle: { pipelined: memory, blocking: memory } }), (error: unknown) => {
      assert.ok(isEngineError(error, 'WEFT_ERR_APPROXIMATE_REFUSED'), String(error));
      assert.match(error.message, /exactly-once sinks "sinkTo" \(uid sinkTo\), "sinkTo" \(uid sinkTo-2\) \(two-phase-commit sinks/);
      assert.doesNotMatch(error.message, /loose/);
      return true;
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
