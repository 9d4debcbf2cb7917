import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdir, mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { runCli } from '@weft/cli';

const terasort = fileURLToPath(new URL('../../../examples/terasort.ts', import.meta.url));

async function inProcess(args: string[], cwd: string): Promise<{ code: number; stdout: string; stderr: string }> {
  let stdout = '';
  let stderr = '';
  const code = await runCli(args, { stdout: { write: (t: string) => (stdout += t) }, stderr: { write: (t: string) => (stderr += t) }, cwd, env: {} });
  return { code, stdout, stderr };
}

describe('weft run --task-memory', () => {
  let dir = '';
  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'weft-run-task-memory-'));
  });
  after(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  for (const [what, value, message] of [
    ['a budget too small to run', '1k', /--task-memory 1k \(1024 bytes\) is too small to run a task: at least 64 KiB/],
    ['a size that is not one', 'lots', /--task-memory must be a size such as 512m, 2g or 65536 \(bytes\), got "lots"/],
    ['an unknown unit', '5q', /--task-memory must be a size/],
  ] as const) {
    it(`exits 2 naming the flag for ${what}`, async () => {
      const run = await inProcess(['run', terasort, '--executor', 'inprocess', '--task-memory', value, '--', '--records', '10'], dir);
      assert.equal(run.code, 2, run.stderr);
      assert.match(run.stderr, message);
    });
  }

  it('sorts 16x the budget with spilled runs into the same file as an unspilled run, and leaves no spill file', async () => {
    const spill = join(dir, 'spill');
    const args = ['--', '--records', '20000'];
    const spilled = await inProcess(['run', terasort, '--executor', 'inprocess', '--parallelism', '2', '--task-memory', '64k', '--spill-dir', spill, '--store', `file://${join(dir, 's1')}`, '--meta', `sqlite://${join(dir, 'm1.db')}`, ...args, '--output', join(dir, 'spilled.txt')], dir);
    assert.equal(spilled.code, 0, spilled.stderr);
    const plain = await inProcess(['run', terasort, '--executor', 'inprocess', '--parallelism', '2', '--store', `file://${join(dir, 's2')}`, '--meta', `sqlite://${join(dir, 'm2.db')}`, ...args, '--output', join(dir, 'plain.txt')], dir);
    assert.equal(plain.code, 0, plain.stderr);
    const [a, b] = await Promise.all([readFile(join(dir, 'spilled.txt'), 'utf8'), readFile(join(dir, 'plain.txt'), 'utf8')]);
    assert.equal(a.split('\n').length, 20001);
    assert.ok(a === b, 'byte-identical outputs');
    assert.deepEqual(await readdir(spill), [], 'every task removed its spill directory');
  });

  it('fails the job (exit 1) with WEFT_ERR_SPILL_FAILED naming the path when the spill disk fills up (a 1 MiB tmpfs), and every task removes its spill files', async (t) => {
    const mountPoint = join(dir, 'tiny');
    await mkdir(mountPoint);
    try {
      execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=1m', 'tmpfs', mountPoint], { stdio: 'ignore' });
    } catch {
      t.skip('cannot mount a tmpfs here (needs root); packages/engine/test/external-sort.test.ts covers the error without one');
      return;
    }
    try {
      const run = await inProcess(['run', terasort, '--executor', 'inprocess', '--parallelism', '2', '--task-memory', '64k', '--spill-dir', mountPoint, '--json', '--store', `file://${join(dir, 's3')}`, '--meta', `sqlite://${join(dir, 'm3.db')}`, '--', '--records', '60000', '--output', join(dir, 'never.txt')], dir);
      assert.equal(run.code, 1, run.stderr);
      assert.match(run.stdout, /WEFT_ERR_SPILL_FAILED/, 'the --json summary carries the cause\'s code');
      assert.match(run.stderr, new RegExp(`task sort#\\d@0 failed: operator "sort" could not spill to ${mountPoint}/weft-spill-[0-9a-f]{12}-sort_\\d_0-\\w+/run-\\d+\\.spill: ENOSPC`));
      assert.deepEqual(await readdir(mountPoint), [], 'the failed and the cancelled task both removed their spill directories');
    } finally {
      execFileSync('umount', [mountPoint]);
    }
  });
});
