// A worker process that dies before it took the job (SIGKILLed as it starts: an operator's kill -9, the
// OOM killer) fails the run as an expected fault — exit 1, one line naming the worker and
// WEFT_ERR_TASK_EXECUTOR_LOST — not an internal error with a stack trace. Real worker processes, each
// killing itself through a preloaded module.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('../../..', import.meta.url));
const bin = join(root, 'packages', 'cli', 'bin', 'weft.js');
const killer = fileURLToPath(new URL('./fixtures/kill-forked-workers.mjs', import.meta.url));

describe('weft run, a worker process killed as it starts', () => {
  it('fails the job with exit 1 and WEFT_ERR_TASK_EXECUTOR_LOST naming the worker, without a stack trace', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'weft-worker-start-'));
    try {
      const run = await new Promise<{ code: number | null; stderr: string }>((resolve) => {
        execFile(process.execPath, [bin, 'run', join(root, 'examples', 'word-count.ts'), '--workers', '2', '--', '--lines', '100', '--output', 'counts.tsv'], { cwd: dir, env: { ...process.env, NODE_OPTIONS: `${process.env['NODE_OPTIONS'] ?? ''} --import ${killer}` } }, (error, _stdout, stderr) =>
          resolve({ code: error === null ? 0 : typeof error.code === 'number' ? error.code : null, stderr }),
        );
      });
      assert.equal(run.code, 1, run.stderr);
      assert.match(run.stderr, /^weft run: job failed: WEFT_ERR_TASK_EXECUTOR_LOST: worker process \d+ exited with SIGKILL before it started/m);
      assert.doesNotMatch(run.stderr, /internal error|^\s+at /m);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
