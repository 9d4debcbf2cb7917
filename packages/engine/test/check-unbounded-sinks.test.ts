// writeText in a job whose source never ends is refused before anything runs: its file would appear only
// when the whole job succeeds, which an unbounded job never does.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { defineJob, isEngineError } from '@weft/engine';
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
});
