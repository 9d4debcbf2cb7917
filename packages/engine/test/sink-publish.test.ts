// A job's text sinks are published all or nothing: every sink is staged before any output path is
// touched, and when renaming one onto its path fails, the ones already renamed are rolled back.
// Chained jobs (no exchange), so they run with the engine's no-shuffle double.
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { defineJob, isEngineError, type JobBuildFunction, type JobResult, runJob } from '@weft/engine';
import { testingNoShuffleFactory } from './support/no-shuffle.js';

async function withDir<T>(fn: (dir: string) => Promise<T>): Promise<T> {
  const dir = await mkdtemp(join(tmpdir(), 'weft-sink-publish-'));
  try {
    return await fn(dir);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

function run(build: JobBuildFunction, cwd: string): Promise<JobResult> {
  const none = testingNoShuffleFactory();
  return runJob({ job: defineJob(build), parallelism: 2, shuffle: { pipelined: none, blocking: none }, cwd });
}

/** Two sinks, declared (and so published) in this order: `first.txt`, then `second`. */
const twoSinks: JobBuildFunction = (ctx) => {
  ctx.range(0, 100, { name: 'firstRows' }).map((x) => `first ${x}`).writeText('first.txt', { name: 'firstSink' });
  ctx.range(0, 50, { name: 'secondRows' }).map((x) => `second ${x}`).writeText('second', { name: 'secondSink' });
};

const firstRows = `${Array.from({ length: 100 }, (_, i) => `first ${i}`).join('\n')}\n`;
const secondRows = `${Array.from({ length: 50 }, (_, i) => `second ${i}`).join('\n')}\n`;

describe('publishing several sinks', () => {
  it('publishes every sink when every rename succeeds', async () => {
    await withDir(async (dir) => {
      const result = await run(twoSinks, dir);
      assert.equal(result.status, 'succeeded', String(result.error?.stack));
      assert.equal(await readFile(join(dir, 'first.txt'), 'utf8'), firstRows);
      assert.equal(await readFile(join(dir, 'second'), 'utf8'), secondRows);
      assert.deepEqual((await readdir(dir)).sort(), ['first.txt', 'second']);
    });
  });

  it('keeps every finished attempt\'s part files until the sink-published events are stored, then removes them', async () => {
    await withDir(async (dir) => {
      // a job master killed while its sink-published events are being stored must leave the parts, so
      // the run that resumes it can publish the sinks the log does not name again (contract 7)
      const partsWhilePublishing: string[][] = [];
      const none = testingNoShuffleFactory();
      const result = await runJob({
        job: defineJob(twoSinks),
        jobId: 'keep-parts',
        parallelism: 2,
        shuffle: { pipelined: none, blocking: none },
        cwd: dir,
        eventListener: {
          onJobEvent: (event) => {
            if (event.type !== 'sink-published') return undefined;
            return (async () => {
              const parts: string[] = [];
              for (const tempDir of ['.first.txt.weft-keep-parts', '.second.weft-keep-parts']) {
                parts.push(...(await readdir(join(dir, tempDir)).catch(() => [])).filter((name) => name.startsWith('part-')).map((name) => `${tempDir}/${name}`));
              }
              partsWhilePublishing.push(parts.sort());
            })();
          },
        },
      });
      assert.equal(result.status, 'succeeded', String(result.error?.stack));
      assert.equal(partsWhilePublishing.length, 2, 'a sink-published per sink');
      for (const parts of partsWhilePublishing) assert.equal(parts.length, 4, `both subtasks' parts of both sinks are there while publishing: ${parts.join(', ')}`);
      assert.equal(await readFile(join(dir, 'first.txt'), 'utf8'), firstRows);
      assert.deepEqual((await readdir(dir)).sort(), ['first.txt', 'second'], 'the attempt directories are removed after');
    });
  });

  it('rolls the first sink back when the second cannot be renamed into place, leaving no new output', async () => {
    await withDir(async (dir) => {
      // A non-empty directory where the second sink's file goes: renaming a file onto it fails (EISDIR).
      await mkdir(join(dir, 'second'));
      await writeFile(join(dir, 'second', 'keep'), 'kept\n');
      const result = await run(twoSinks, dir);
      assert.equal(result.status, 'failed');
      assert.ok(isEngineError(result.error, 'WEFT_ERR_JOB_FAILED'));
      assert.match(String(result.error?.message), /cannot publish .*second: .*\(.*first\.txt rolled back\)/);
      assert.equal(existsSync(join(dir, 'first.txt')), false, 'the first sink was not left published');
      assert.deepEqual(result.outputs, []);
      assert.equal(await readFile(join(dir, 'second', 'keep'), 'utf8'), 'kept\n');
      assert.deepEqual((await readdir(dir)).sort(), ['second'], 'no temporary directory is left');
    });
  });

  it('puts back what the first output path held before when the second sink fails to publish', async () => {
    await withDir(async (dir) => {
      await writeFile(join(dir, 'first.txt'), 'the previous run\n');
      await mkdir(join(dir, 'second'));
      await writeFile(join(dir, 'second', 'keep'), 'kept\n');
      const result = await run(twoSinks, dir);
      assert.equal(result.status, 'failed');
      assert.equal(await readFile(join(dir, 'first.txt'), 'utf8'), 'the previous run\n');
      assert.deepEqual((await readdir(dir)).sort(), ['first.txt', 'second']);
      // With the obstacle gone, the same job publishes both over the previous output.
      await rm(join(dir, 'second'), { recursive: true });
      const again = await run(twoSinks, dir);
      assert.equal(again.status, 'succeeded', String(again.error?.stack));
      assert.equal(await readFile(join(dir, 'first.txt'), 'utf8'), firstRows);
      assert.equal(await readFile(join(dir, 'second'), 'utf8'), secondRows);
    });
  });
});

describe('joining a sink\'s parts', () => {
  it('joins parts of several MiB each byte for byte, in subtask order', async () => {
    await withDir(async (dir) => {
      const rows = 300_000;
      const line = (x: number): string => `row ${String(x).padStart(7, '0')} ${'.'.repeat(x % 37)}`;
      const none = testingNoShuffleFactory();
      const result = await runJob({
        job: defineJob((ctx) => ctx.range(0, rows, { name: 'rows' }).map(line).writeText('rows.txt', { name: 'rowsSink' })),
        parallelism: 3,
        shuffle: { pipelined: none, blocking: none },
        cwd: dir,
      });
      assert.equal(result.status, 'succeeded', String(result.error?.stack));
      assert.deepEqual(result.outputs.map((o) => o.parts), [3]);
      const expected = `${Array.from({ length: rows }, (_, x) => line(x)).join('\n')}\n`;
      assert.ok(expected.length / 3 > 2 * (1 << 20), 'each part spans several join chunks');
      const joined = await readFile(join(dir, 'rows.txt'), 'utf8');
      assert.equal(joined.length, expected.length);
      assert.ok(joined === expected, 'the joined file equals the parts in subtask order');
    });
  });
});
