// writeText in a job whose source never ends is refused before anything runs: its file would appear only
// when the whole job succeeds, which an unbounded job never does.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { existsSync } from 'node:fs';
import { mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { defineJob, fileCommitSink, InMemoryCheckpointStorage, isEngineError, runJob } from '@weft/engine';
import { createMemoryShuffleServiceFactory } from '@weft/shuffle-memory';
import { loadJob } from '../src/graph/load-job.js';

const load = (build: Parameters<typeof defineJob>[0]) => loadJob({ job: defineJob(build, { name: 'unbounded-sinks' }), args: [], parallelism: 1, cwd: process.cwd(), checkInputs: false });

describe('checkUnboundedSinks', () => {
  it('refuses writeText after an unbounded generate, naming the sink and the source and what to use instead', async () => {
    await assert.rejects(
      load((ctx) => ctx.generate((s) => s, { name: 'numbers' }).writeText('out.txt', { name: 'write' })),
      (error: unknown) =>
        isEngineError(error, 'WEFT_ERR_INVALID_JOB') && /operator "write" \(text-sink\)/.test(error.message) && /source "numbers" \(generator-source\) is unbounded/.test(error.message) && /sinkTo\(fileCommitSink\(\{ dir \}\)\)/.test(error.message),
    );
  });

  it("points an approximate job at the sink it may use: sinkTo(…, { deliveryGuarantee: 'none' })", async () => {
    const job = defineJob((ctx) => ctx.generate((s) => s).writeText('out.txt'), { exchangeMode: 'ALL_EDGES_PIPELINED_APPROXIMATE' });
    await assert.rejects(loadJob({ job, args: [], parallelism: 1, cwd: process.cwd(), checkInputs: false }), (error: unknown) => isEngineError(error, 'WEFT_ERR_INVALID_JOB') && /sinkTo\(fileCommitSink\(\{ dir \}\), \{ deliveryGuarantee: 'none' \}\)/.test(error.message));
  });

  it('refuses it after a watched directory without an end marker and a Redis stream without an end field', async () => {
    await assert.rejects(load((ctx) => ctx.watchDirectory('in').writeText('out.txt')), (error: unknown) => isEngineError(error, 'WEFT_ERR_INVALID_JOB') && /\(directory-source\) is unbounded/.test(error.message));
    await assert.rejects(load((ctx) => ctx.readRedisStream('redis://127.0.0.1:1/0', 'events').writeText('out.txt')), (error: unknown) => isEngineError(error, 'WEFT_ERR_INVALID_JOB') && /\(stream-source\) is unbounded/.test(error.message));
  });

  it('plans writeText after bounded sources, and unbounded sources with other sinks', async () => {
    await load((ctx) => ctx.generate((s) => s, { count: 10 }).writeText('out.txt'));
    await load((ctx) => ctx.watchDirectory('in', { endMarker: 'END' }).writeText('out.txt'));
    await load((ctx) => ctx.generate((s) => s).collect('all'));
  });

  it('refuses sinkTo after an unbounded source without checkpoints, naming both; with checkpoints it runs and commits', async () => {
    const memory = createMemoryShuffleServiceFactory();
    const dir = await mkdtemp(join(tmpdir(), 'weft-unbounded-commits-'));
    try {
      const job = defineJob((ctx) => ctx.generate((s) => `n ${s}`, { name: 'numbers', ratePerSecond: 2000 }).sinkTo(fileCommitSink<string>({ dir: join(dir, 'parts') }), { name: 'parts' }));
      const base = { job, parallelism: 1, cwd: dir, shuffle: { pipelined: memory, blocking: memory } } as const;
      await assert.rejects(
        // the signal only bounds a broken check: refused, nothing runs
        runJob({ ...base, signal: AbortSignal.timeout(5000) }),
        (error: unknown) => isEngineError(error, 'WEFT_ERR_INVALID_JOB') && /operator "parts" \(two-phase-commit-sink\)/.test(error.message) && /source "numbers" \(generator-source\) is unbounded/.test(error.message) && /--checkpoint-interval/.test(error.message),
      );
      assert.equal(existsSync(join(dir, 'parts')), false, 'nothing ran');
      // checkpointed, it runs: stopped by its signal once a checkpoint committed lines
      const stop = new AbortController();
      const running = runJob({ ...base, signal: stop.signal, checkpointing: { intervalMs: 50, storage: new InMemoryCheckpointStorage() } });
      const committed = async (): Promise<number> => (await readdir(join(dir, 'parts')).catch(() => [] as string[])).filter((n) => !n.startsWith('.')).length;
      for (let i = 0; i < 200 && (await committed()) === 0; i++) await new Promise((resolve) => setTimeout(resolve, 25));
      stop.abort();
      await running.catch(() => undefined);
      assert.ok((await committed()) > 0, 'a checkpoint committed a part file');
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
