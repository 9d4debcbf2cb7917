// `weft run --job-id ID --standby` (issue 12 Deliver 4, on the job event log's resume): a standby job master
// waits while the active one renews the job's lease and takes the job over once that stops — the active
// one SIGKILLed here — with a clean run's bytes and every task the log finished reused; a job that ends
// while the standby waits leaves it nothing to do. Real `weft` processes, a real SQLite log.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { SqliteJobEventLog } from '@weft/job-store';
import { createTempDir, type TempDir } from '@weft/testkit';
import { finishedInLog, weft, type WeftOutcome } from './helpers/kill-and-resume.js';

const bin = fileURLToPath(new URL('../bin/weft.js', import.meta.url));
const terasort = fileURLToPath(new URL('../../../examples/terasort.ts', import.meta.url));

/** Starts `weft <args>`; resolves with its outcome, and `said(pattern)` once its stderr matched. */
function start(args: readonly string[], cwd: string): { done: Promise<WeftOutcome>; said(pattern: RegExp): Promise<void> } {
  const child = spawn(process.execPath, [bin, ...args], { cwd, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  const waiters: { pattern: RegExp; resolve: () => void }[] = [];
  child.stdout.setEncoding('utf8').on('data', (c: string) => (stdout += c));
  child.stderr.setEncoding('utf8').on('data', (c: string) => {
    stderr += c;
    for (const w of waiters.filter((x) => x.pattern.test(stderr))) w.resolve();
  });
  const done = new Promise<WeftOutcome>((resolve) => child.once('close', (code) => resolve({ code, stdout, stderr })));
  return {
    done,
    said: (pattern) =>
      pattern.test(stderr)
        ? Promise.resolve()
        : Promise.race([new Promise<void>((resolve) => waiters.push({ pattern, resolve })), done.then(() => Promise.reject(new Error(`ended before saying ${pattern}: ${stderr}`)))]),
  };
}

describe('weft run --standby', () => {
  let dir: TempDir;
  let metaPath = '';
  let common: string[] = [];
  let clean: Buffer;
  const records = ['--records', '100000'];
  before(async () => {
    dir = await createTempDir('weft-standby-');
    metaPath = join(dir.path, 'meta.db');
    common = ['--meta', `sqlite://${metaPath}`, '--store', pathToFileURL(join(dir.path, 'store')).href, '--parallelism', '2', '--workers', '2', '--json'];
    const run = await weft(bin, ['run', terasort, ...common, '--', ...records, '--output', join(dir.path, 'clean.txt')], dir.path);
    assert.equal(run.code, 0, run.stderr);
    clean = await readFile(join(dir.path, 'clean.txt'));
  });
  after(() => dir.remove());

  it('takes the job over once its master dies (SIGKILL), resuming it: clean bytes, the finished tasks reused', async () => {
    const job = (...extra: string[]): string[] => ['run', terasort, '--job-id', 'sb-kill', ...common, ...extra, '--', ...records, '--output', join(dir.path, 'sb-kill.txt')];
    const standby = start(job('--standby', '--standby-takeover-ms', '2000'), dir.path);
    await standby.said(/waiting for the job to start/);
    // the active master kills itself once the log holds its third task-finished
    const active = start(job('--inject-faults', 'kill-job-master:task-finished@3'), dir.path);
    await standby.said(/waiting while .* \(epoch 1\) holds the job's lease/);
    const killed = await active.done;
    assert.equal(killed.code, null, `the active master died by its own SIGKILL: ${killed.stderr}`);
    await using log = new SqliteJobEventLog({ path: metaPath });
    const finished = await finishedInLog(log, 'sb-kill');
    const taken = await standby.done;
    assert.equal(taken.code, 0, taken.stderr);
    assert.match(taken.stderr, /has not renewed the job's lease for \d+ ms; taking the job over/);
    const summary = JSON.parse(taken.stdout) as { resumed: boolean; tasksReused: number; epoch: number };
    assert.deepEqual([summary.resumed, summary.tasksReused, summary.epoch], [true, finished.size, 2], taken.stderr);
    assert.equal(finished.size, 3);
    assert.ok((await readFile(join(dir.path, 'sb-kill.txt'))).equals(clean), 'the output equals a clean run’s, byte for byte');
  });

  it('has nothing to do when the job finishes while it waits (exit 0, no run of its own)', async () => {
    const job = (...extra: string[]): string[] => ['run', terasort, '--job-id', 'sb-done', ...common, ...extra, '--', ...records, '--output', join(dir.path, 'sb-done.txt')];
    const standby = start(job('--standby', '--standby-takeover-ms', '3000'), dir.path);
    await standby.said(/waiting for the job to start/);
    const active = await weft(bin, job(), dir.path);
    assert.equal(active.code, 0, active.stderr);
    const waited = await standby.done;
    assert.equal(waited.code, 0, waited.stderr);
    assert.match(waited.stderr, /the job succeeded \(epoch 1\) while this standby waited; nothing to take over/);
    await using log = new SqliteJobEventLog({ path: metaPath });
    assert.deepEqual([...new Set((await log.readRun('sb-done')).map((e) => e.epoch))], [1], 'the standby never took the lease');
  });

  it('refuses --standby without --job-id (exit 2)', async () => {
    const run = await weft(bin, ['run', terasort, ...common, '--standby'], dir.path);
    assert.equal(run.code, 2, run.stderr);
    assert.match(run.stderr, /--standby needs --job-id/);
  });
});
