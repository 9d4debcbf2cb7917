// Jobs whose operators all chain into one vertex per source need no shuffle, so these run in the engine
// package with a shuffle double that refuses partitions (the engine may not depend on an implementation).
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { mkdtemp, readdir, readFile, rm, writeFile, mkdir } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { defineJob, isEngineError, type JobBuildFunction, type JobResult, loadJob, runJob } from '@weft/engine';
import { testingNoShuffleFactory } from './support/no-shuffle.js';

async function run(build: JobBuildFunction, parallelism: number, cwd?: string): Promise<JobResult> {
  const none = testingNoShuffleFactory();
  const result = await runJob({ job: defineJob(build), parallelism, shuffle: { pipelined: none, blocking: none }, ...(cwd === undefined ? {} : { cwd }) });
  assert.ok(!none.calls.includes('registerPartitionWithProducer'), 'a chained job registers no partition');
  return result;
}

async function withDir<T>(fn: (dir: string) => Promise<T>): Promise<T> {
  const dir = await mkdtemp(join(tmpdir(), 'weft-chained-'));
  try {
    return await fn(dir);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

describe('text file source', () => {
  it('gives every line to exactly one subtask, whatever the parallelism and line layout', async () => {
    await withDir(async (dir) => {
      const lines = ['', 'first', 'é日本 two-byte and three-byte', '', 'windows\r', 'x'.repeat(3 * 1024 * 1024 + 7), 'tab\tseparated', ...Array.from({ length: 5000 }, (_, i) => `line ${i} ${'ü'.repeat(i % 13)}`), 'no newline at the end'];
      await writeFile(join(dir, 'in.txt'), lines.join('\n'));
      const expected = lines.map((l) => (l.endsWith('\r') ? l.slice(0, -1) : l));
      for (const parallelism of [1, 2, 3, 7]) {
        const result = await run((ctx) => ctx.readTextFile(join(dir, 'in.txt')).collect('lines'), parallelism);
        assert.equal(result.status, 'succeeded', String(result.error));
        assert.deepEqual(result.collected['lines'], expected, `parallelism ${parallelism}`);
        assert.equal(result.recordsRead, expected.length);
      }
    });
  });

  it('reads the files of a directory in name order, skipping hidden ones, and refuses a missing path', async () => {
    await withDir(async (dir) => {
      await mkdir(join(dir, 'in'));
      await writeFile(join(dir, 'in', 'b.txt'), 'b1\nb2\n');
      await writeFile(join(dir, 'in', 'a.txt'), 'a1\n');
      await writeFile(join(dir, 'in', '.hidden'), 'h\n');
      await writeFile(join(dir, 'in', '_SUCCESS'), '');
      const result = await run((ctx) => ctx.readTextFile(join(dir, 'in')).collect('lines'), 2);
      assert.deepEqual(result.collected['lines'], ['a1', 'b1', 'b2']);
    });
  });

  it('refuses a missing input before any task runs, naming the source operator and the path', async () => {
    await withDir(async (dir) => {
      await writeFile(join(dir, 'here.txt'), 'x\n');
      let ran = false;
      const none = testingNoShuffleFactory();
      const job = defineJob((ctx) => {
        ctx.fromArray([1]).map((x) => { ran = true; return x; }).collect('side');
        ctx.readTextFile('here.txt', { name: 'read-here' }).collect('here');
        ctx.readTextFile('nope.txt', { name: 'read-nope' }).collect('lines');
      });
      await assert.rejects(runJob({ job, parallelism: 1, cwd: dir, shuffle: { pipelined: none, blocking: none } }), (error: unknown) => {
        assert.ok(isEngineError(error, 'WEFT_ERR_INPUT_UNREADABLE'), String(error));
        assert.equal(error.context['operator'], 'read-nope');
        assert.equal(error.context['path'], join(dir, 'nope.txt'));
        assert.match(error.message, /operator "read-nope" cannot read .*nope\.txt: no such file or directory/);
        return true;
      });
      assert.equal(ran, false, 'no task ran');
      assert.deepEqual(none.calls, [], 'no shuffle was opened');
    });
  });

  it('plans a job without looking at its inputs only when asked to (checkInputs: false)', async () => {
    await withDir(async (dir) => {
      const job = defineJob((ctx) => ctx.readTextFile('gone.txt', { name: 'read-gone' }).collect('lines'));
      const loaded = await loadJob({ job, parallelism: 1, cwd: dir, checkInputs: false });
      assert.equal(loaded.plan.vertices.length, 1, 'planning alone does not look at the input');
      await assert.rejects(loadJob({ job, parallelism: 1, cwd: dir }), (error: unknown) => isEngineError(error, 'WEFT_ERR_INPUT_UNREADABLE'));
    });
  });
});

describe('chained operators', () => {
  it('runs ranges and arrays through map, flatMap and filter, subtask by subtask', async () => {
    const result = await run((ctx) => {
      ctx.range(5, 25).flatMap((x) => (x % 2 === 0 ? [x, -x] : null)).filter((x) => x % 3 !== 0).map((x) => x * 10).collect('numbers');
      ctx.fromArray(['a', 'b', 'c', 'd', 'e']).flatMap(function* (s) { yield s; yield s.toUpperCase(); }).collect('letters');
    }, 3);
    assert.equal(result.status, 'succeeded', String(result.error));
    const numbers = [];
    for (let x = 5; x < 25; x++) if (x % 2 === 0) for (const y of [x, -x]) if (y % 3 !== 0) numbers.push(y * 10);
    assert.deepEqual(result.collected['numbers'], numbers);
    assert.deepEqual(result.collected['letters'], ['a', 'A', 'b', 'B', 'c', 'C', 'd', 'D', 'e', 'E']);
  });

  it('fails the job naming the operator, the subtask and the original error with its stack', async () => {
    const result = await run((ctx) => ctx.range(0, 100).map((x) => { if (x === 77) throw new RangeError(`bad value ${x}`); return x; }, { name: 'picky' }).collect('out'), 4);
    assert.equal(result.status, 'failed');
    const error = result.error;
    assert.ok(isEngineError(error, 'WEFT_ERR_JOB_FAILED'));
    const cause = error.cause;
    assert.ok(isEngineError(cause, 'WEFT_ERR_USER_FUNCTION_FAILED'));
    assert.match(cause.message, /operator "picky" \(map\) function threw in subtask 3 of 4 \(attempt 0\): RangeError: bad value 77/);
    assert.equal(cause.context['operator'], 'picky');
    assert.equal(cause.context['subtask'], 3);
    const original = cause.cause as Error;
    assert.equal(original.name, 'RangeError'); // rebuilt from plain data, as it would be from a worker
    assert.match(String(original.stack), /chained-job\.test\.ts/);
    assert.deepEqual(result.collected, {});
  });
});

describe('text sink', () => {
  it('publishes one file joined in subtask order only when the job succeeds, and leaves no temporary files', async () => {
    await withDir(async (dir) => {
      const result = await run((ctx) => ctx.range(0, 1000).map((x) => `row ${x}`).writeText('out/rows.txt'), 3, dir);
      assert.equal(result.status, 'succeeded', String(result.error));
      assert.equal(await readFile(join(dir, 'out', 'rows.txt'), 'utf8'), `${Array.from({ length: 1000 }, (_, i) => `row ${i}`).join('\n')}\n`);
      assert.deepEqual(result.outputs, [{ sink: 'writeText', path: join(dir, 'out', 'rows.txt'), parts: 3 }]);
      assert.deepEqual(await readdir(join(dir, 'out')), ['rows.txt']);
    });
  });

  it('leaves nothing at the output path when the job fails — and an existing file untouched', async () => {
    await withDir(async (dir) => {
      const failing: JobBuildFunction = (ctx) => ctx.range(0, 50_000).map((x) => { if (x === 49_999) throw new Error('late failure'); return `row ${x}`; }).writeText(join(dir, 'rows.txt'));
      const result = await run(failing, 2);
      assert.equal(result.status, 'failed');
      assert.equal(existsSync(join(dir, 'rows.txt')), false);
      assert.deepEqual(await readdir(dir), []);
      await writeFile(join(dir, 'rows.txt'), 'previous output\n');
      await run(failing, 2);
      assert.equal(await readFile(join(dir, 'rows.txt'), 'utf8'), 'previous output\n');
    });
  });

  it('fails the job and publishes nothing when aborted through its signal', async () => {
    await withDir(async (dir) => {
      const none = testingNoShuffleFactory();
      const controller = new AbortController();
      const job = defineJob((ctx) => ctx.range(0, 1e12).map((x) => { if (x === 100_000) controller.abort(new Error('stop now')); return x; }).writeText(join(dir, 'rows.txt')));
      const result = await runJob({ job, parallelism: 1, shuffle: { pipelined: none, blocking: none }, signal: controller.signal });
      assert.equal(result.status, 'failed');
      assert.match(String(result.error?.message), /aborted: stop now/);
      assert.deepEqual(await readdir(dir), []);
    });
  });
});
