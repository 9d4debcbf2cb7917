// A task failure no restart can cure — a shuffle server refused the job's token (SHF_ERR_UNAUTHORIZED: the
// job master's and the server's WEFT_SHUFFLE_SECRET differ; SHF_ERR_FORBIDDEN: another job's token) — fails
// the job at once, as Flink's non-recoverable failures do, instead of using up every restart the strategy
// allows (found in a chaos review: a secret mismatch spent all 10 attempts). Any other failure restarts as
// the strategy says (the control). In process, a chained job: the refusal is thrown where a task meets it.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ShuffleError } from '@weft/shuffle-api';
import { defineJob, type JobResult, runJob } from '@weft/engine';
import { testingNoShuffleFactory } from './support/no-shuffle.js';

function failingJob(error: () => Error) {
  return defineJob((ctx) => {
    ctx
      .range(0, 100, { name: 'rows', parallelism: 1 })
      .map((x) => {
        if (x === 50) throw error();
        return x;
      })
      .collect('out');
  }, { name: 'unrecoverable' });
}

function run(error: () => Error): Promise<JobResult> {
  const none = testingNoShuffleFactory();
  return runJob({ job: failingJob(error), parallelism: 1, shuffle: { pipelined: none, blocking: none }, restartStrategy: { type: 'fixed-delay', attempts: 3, delayMs: 0 } });
}

describe('a failure no restart can cure', () => {
  for (const code of ['SHF_ERR_UNAUTHORIZED', 'SHF_ERR_FORBIDDEN'] as const) {
    it(`${code} fails the job at once, whatever the restart strategy allows`, async () => {
      const result = await run(() => new Error('pushing a block failed', { cause: new ShuffleError(code, 'shuffle server answered 401: a valid job token is required (from http://127.0.0.11:7001: is WEFT_SHUFFLE_SECRET … the same?)') }));
      assert.equal(result.status, 'failed');
      assert.equal(result.failures, 1);
      assert.equal(result.restarts, 0);
      assert.match(result.error?.message ?? '', new RegExp(`failed: not recoverable by a restart \\(${code}\\): task rows#0@0 failed: .*pushing a block failed`));
    });
  }

  it('any other failure restarts as the strategy allows (the control)', async () => {
    const result = await run(() => new Error('user code threw'));
    assert.equal(result.status, 'failed');
    assert.equal(result.failures, 4, 'the first failure and its 3 restarts');
    assert.match(result.error?.message ?? '', /recovery is suppressed by FixedDelay/);
  });
});
