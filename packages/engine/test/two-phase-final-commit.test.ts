// A batch job's two-phase-commit sink: one transaction per attempt, pre-committed at the end of input and
// committed by the job master once the whole job succeeded, after the text sinks' publish — the same two
// phases; a final commit that fails rolls the text sinks back, and a failed job aborts the transactions.
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { defineJob, fileCommitSink, isEngineError, runJob, type TwoPhaseCommitSinkFactory } from '@weft/engine';
import { testingNoShuffleFactory } from './support/no-shuffle.js';

async function withDir<T>(fn: (dir: string) => Promise<T>): Promise<T> {
  const dir = await mkdtemp(join(tmpdir(), 'weft-2pc-final-'));
  try {
    return await fn(dir);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

/** fileCommitSink whose commits throw once `failCommits` is set, and that counts what it was asked. */
function flaky(dir: string, calls: { commits: number; aborts: number; failCommits: boolean }): TwoPhaseCommitSinkFactory<string> {
  const files = fileCommitSink<string>({ dir });
  return (context) => {
    const sink = files(context);
    return {
      beginTransaction: () => sink.beginTransaction(),
      write: (h, v) => sink.write(h, v),
      preCommit: (h) => sink.preCommit(h),
      commit: async (h) => {
        calls.commits += 1;
        if (calls.failCommits) throw new Error('the store refused the commit');
        await sink.commit(h);
      },
      abort: async (h) => {
        calls.aborts += 1;
        await sink.abort(h);
      },
      close: () => sink.close?.(),
    };
  };
}

const lines = async (dir: string): Promise<string[]> => {
  const out: string[] = [];
  for (const name of (await readdir(dir).catch(() => [] as string[])).filter((n) => !n.startsWith('.'))) out.push(...(await readFile(join(dir, name), 'utf8')).split('\n').filter((l) => l !== ''));
  return out.sort();
};

function run(dir: string, calls: { commits: number; aborts: number; failCommits: boolean }, failAt?: number) {
  const none = testingNoShuffleFactory();
  const job = defineJob((ctx) => {
    const rows = ctx.range(0, 200).map((x) => {
      if (x === failAt) throw new Error(`row ${x} is bad`);
      return `row ${x}`;
    });
    rows.writeText('rows.txt');
    rows.sinkTo(flaky(join(dir, 'parts'), calls));
  });
  return runJob({ job, parallelism: 2, shuffle: { pipelined: none, blocking: none }, cwd: dir, restartStrategy: { type: 'none' } });
}

describe('the final commit of a two-phase-commit sink in a batch job', () => {
  it('commits each attempt\'s one transaction when the job succeeded, beside the text sink', async () => {
    await withDir(async (dir) => {
      const calls = { commits: 0, aborts: 0, failCommits: false };
      const result = await run(dir, calls);
      assert.equal(result.status, 'succeeded', result.error?.message);
      const expected = Array.from({ length: 200 }, (_, x) => `row ${x}`).sort();
      assert.deepEqual(await lines(join(dir, 'parts')), expected);
      assert.deepEqual((await readFile(join(dir, 'rows.txt'), 'utf8')).split('\n').filter((l) => l !== '').sort(), expected);
      assert.equal(calls.commits, 2);
      assert.deepEqual(await readdir(join(dir, 'parts', '.in-progress')), []);
    });
  });

  it('a final commit that fails rolls the text sink back: the job fails with WEFT_ERR_SINK_FAILED and publishes nothing', async () => {
    await withDir(async (dir) => {
      const calls = { commits: 0, aborts: 0, failCommits: true };
      const result = await run(dir, calls);
      assert.equal(result.status, 'failed');
      assert.ok(isEngineError(result.error?.cause, 'WEFT_ERR_SINK_FAILED'), String(result.error?.cause));
      assert.match(String((result.error?.cause as Error).message), /the store refused the commit.*rows\.txt rolled back/);
      assert.equal(existsSync(join(dir, 'rows.txt')), false);
      assert.deepEqual(await lines(join(dir, 'parts')), []);
    });
  });

  it('a failed job aborts the transactions its finished attempts pre-committed: no part file is left', async () => {
    await withDir(async (dir) => {
      const calls = { commits: 0, aborts: 0, failCommits: false };
      // row 199 is subtask 1's last: subtask 0 finishes and pre-commits, subtask 1 fails
      const result = await run(dir, calls, 199);
      assert.equal(result.status, 'failed');
      assert.equal(calls.commits, 0);
      assert.ok(calls.aborts >= 1, `aborts: ${calls.aborts}`);
      assert.deepEqual(await lines(join(dir, 'parts')), []);
      assert.deepEqual(await readdir(join(dir, 'parts', '.in-progress')).catch(() => []), []);
    });
  });

  it('commits each sink through its own factory when two sinks share a name (two unnamed sinkTo)', async () => {
    await withDir(async (dir) => {
      const committedBy: [string, string][] = [];
      /** fileCommitSink into `dir/<tag>`, noting which factory committed which handle. */
      const tagged = (tag: string): TwoPhaseCommitSinkFactory<string> => {
        const files = fileCommitSink<string>({ dir: join(dir, tag) });
        return (context) => {
          const sink = files(context);
          return { ...sink, beginTransaction: () => sink.beginTransaction(), write: (h, v) => sink.write(h, v), preCommit: (h) => sink.preCommit(h), abort: (h) => sink.abort(h), close: () => sink.close?.(), commit: async (h) => {
            committedBy.push([tag, JSON.stringify(h)]);
            await sink.commit(h);
          } };
        };
      };
      const none = testingNoShuffleFactory();
      const job = defineJob((ctx) => {
        const rows = ctx.range(0, 50).map((x) => `row ${x}`);
        rows.sinkTo(tagged('a'));
        rows.sinkTo(tagged('b'));
      });
      const result = await runJob({ job, parallelism: 2, shuffle: { pipelined: none, blocking: none }, cwd: dir, restartStrategy: { type: 'none' } });
      assert.equal(result.status, 'succeeded', result.error?.message);
      assert.equal(committedBy.length, 4, JSON.stringify(committedBy));
      // each handle names its sink's directory: the factory that committed it must be that sink's
      for (const [tag, handle] of committedBy) assert.ok(handle.includes(join(dir, tag, '.in-progress')), `${tag} committed ${handle}`);
      const expected = Array.from({ length: 50 }, (_, x) => `row ${x}`).sort();
      assert.deepEqual(await lines(join(dir, 'a')), expected);
      assert.deepEqual(await lines(join(dir, 'b')), expected);
    });
  });
});
