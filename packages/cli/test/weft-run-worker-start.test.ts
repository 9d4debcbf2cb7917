// A worker process killed before it took the job (SIGKILLed as it starts: an operator's kill -9, the OOM
// killer) is forked again (WORKER_START_ATTEMPTS processes per worker in all): one such kill costs the run
// nothing; workers killed every time fail it as an expected fault — exit 1, one line naming the worker and
// WEFT_ERR_TASK_EXECUTOR_LOST — not an internal error with a stack trace. Real worker processes, killing
// themselves through a preloaded module.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('../../..', import.meta.url));
const bin = join(root, 'packages', 'cli', 'bin', 'weft.js');
const killer = fileURLToPath(new URL('./fixtures/kill-forked-workers.mjs', import.meta.url));

function weftRun(dir: string, env: Record<string, string>): Promise<{ code: number | null; stderr: string }> {
  return new Promise((resolve) => {
    execFile(process.execPath, [bin, 'run', join(root, 'examples', 'word-count.ts'), '--workers', '2', '--', '--lines', '100', '--output', 'counts.tsv'], { cwd: dir, env: { ...process.env, ...env, NODE_OPTIONS: `${process.env['NODE_OPTIONS'] ?? ''} --import ${killer}` } }, (error, _stdout, stderr) =>
      resolve({ code: error === null ? 0 : typeof error.code === 'number' ? error.code : null, stderr }),
    );
  });
}

describe('weft run, a worker process killed as it starts', () => {
  it('forks it again: one worker killed before it loaded the job costs the run nothing', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'weft-worker-start-'));
    try {
      const run = await weftRun(dir, { WEFT_TEST_KILL_ONCE: join(dir, 'killed-once') });
      assert.equal(run.code, 0, run.stderr);
      await readFile(join(dir, 'killed-once'));
      assert.match(await readFile(join(dir, 'counts.tsv'), 'utf8'), /\t\d+\n/);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('fails the job when every process is killed, with exit 1 and WEFT_ERR_TASK_EXECUTOR_LOST naming the worker, without a stack trace', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'weft-worker-start-'));
    try {
      const run = await weftRun(dir, {});
      assert.equal(run.code, 1, run.stderr);
      assert.match(run.stderr, /^weft run: job failed: WEFT_ERR_TASK_EXECUTOR_LOST: worker process \d+ exited with SIGKILL/m);
      assert.doesNotMatch(run.stderr, /internal error|^\s+at /m);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
