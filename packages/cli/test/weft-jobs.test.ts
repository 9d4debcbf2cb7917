// `weft jobs` on an SQLite job event log filled through the @weft/job-store API: in-process for the
// cases, and once through bin/weft.js as a user runs it.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { type CliIo, runCli } from '@weft/cli';
import { SqliteJobEventLog } from '@weft/job-store';
import { createTempDir, type TempDir } from '@weft/testkit';

const bin = fileURLToPath(new URL('../bin/weft.js', import.meta.url));

function io(cwd: string, env: Record<string, string> = {}): CliIo & { out: () => string; err: () => string } {
  let out = '';
  let err = '';
  return { stdout: { write: (t: string) => (out += t) }, stderr: { write: (t: string) => (err += t) }, cwd, env, out: () => out, err: () => err };
}

function weft(args: string[], cwd: string): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(process.execPath, [bin, ...args], { cwd }, (error, stdout, stderr) =>
      resolve({ code: error === null ? 0 : typeof error.code === 'number' ? error.code : null, stdout, stderr }),
    );
  });
}

describe('weft jobs', () => {
  let dir: TempDir;
  let url = '';
  before(async () => {
    dir = await createTempDir('weft-jobs-');
    const path = join(dir.path, 'meta.db');
    url = `sqlite://${path}`;
    await using store = new SqliteJobEventLog({ path }, { clock: (() => { let t = Date.UTC(2026, 0, 2, 3, 4, 5); return () => (t += 1_000); })() });
    // wc-1: submitted, three tasks finished, one of them reset later, then resumed by a second master
    const first = await store.open({ jobId: 'wc-1', owner: 'host:1' });
    await first.append({ type: 'job-submitted', data: { name: 'wordcount', jobModule: 'examples/wordcount.ts', tasksTotal: 5 } });
    for (const executionVertexId of ['read#0', 'read#1', 'count#0']) await first.append({ type: 'task-finished', data: { executionVertexId, attempt: 1, partitions: [] } });
    await first.append({ type: 'tasks-reset', data: { tasks: ['count#0'], reason: 'partition lost' } });
    const second = await store.open({ jobId: 'wc-1', owner: 'host:2' });
    await second.append({ type: 'job-submitted', data: { name: 'wordcount', jobModule: 'examples/wordcount.ts', tasksTotal: 5 } });
    // ts-1: finished
    const done = await store.open({ jobId: 'ts-1', owner: 'host:1' });
    await done.append({ type: 'job-submitted', data: { name: 'terasort', tasksTotal: 2 } });
    for (const executionVertexId of ['gen#0', 'sort#0']) await done.append({ type: 'task-finished', data: { executionVertexId, attempt: 1 } });
    await done.append({ type: 'job-finished', data: {} });
    // bad-1: cancelled
    const cancelled = await store.open({ jobId: 'bad-1', owner: 'host:1' });
    await cancelled.append({ type: 'job-submitted', data: { name: 'failing', tasksTotal: 1 } });
    await cancelled.append({ type: 'job-cancelled', data: {} });
  });
  after(() => dir.remove());

  it('prints every run with its job, status, start, tasks finished of total and epoch (--json)', async () => {
    const t = io(dir.path);
    assert.equal(await runCli(['jobs', '--meta', url, '--json'], t), 0, t.err());
    const { runs } = JSON.parse(t.out()) as { runs: Record<string, unknown>[] };
    assert.deepEqual(
      runs.map((r) => [r['jobId'], r['job'], r['status'], r['startedAt'], r['tasksFinished'], r['tasksTotal'], r['epoch']]),
      [
        ['wc-1', 'wordcount', 'unfinished', '2026-01-02T03:04:07.000Z', 2, 5, 2],
        ['ts-1', 'terasort', 'succeeded', '2026-01-02T03:04:15.000Z', 2, 2, 1],
        ['bad-1', 'failing', 'cancelled', '2026-01-02T03:04:20.000Z', 0, 1, 1],
      ],
    );
    assert.equal(runs[0]?.['owner'], 'host:2');
  });

  it('prints a table for a person, through the real bin/weft.js', async () => {
    const r = await weft(['jobs', '--meta', url], dir.path);
    assert.equal(r.code, 0, r.stderr);
    const lines = r.stdout.split('\n');
    assert.match(lines[0] ?? '', /^JOB ID\s+JOB\s+STATUS\s+STARTED\s+TASKS\s+EPOCH$/);
    assert.match(lines[1] ?? '', /^wc-1\s+wordcount\s+unfinished\s+2026-01-02T03:04:07.000Z\s+2\/5\s+2$/);
    assert.match(lines[2] ?? '', /^ts-1\s+terasort\s+succeeded\s+\S+\s+2\/2\s+1$/);
    assert.match(lines[3] ?? '', /^bad-1\s+failing\s+cancelled\s+\S+\s+0\/1\s+1$/);
    assert.match(r.stdout, /3 runs in sqlite:\/\//);
  });

  it('says there are no runs (exit 0) for an empty store and for a store file that does not exist, without creating it', async () => {
    const empty = join(dir.path, 'empty.db');
    await new SqliteJobEventLog({ path: empty }).close();
    let t = io(dir.path);
    assert.equal(await runCli(['jobs', '--meta', `sqlite://${empty}`], t), 0, t.err());
    assert.match(t.out(), /^no runs in sqlite:\/\/.*empty\.db\n$/);
    const missing = join(dir.path, 'missing.db');
    t = io(dir.path);
    assert.equal(await runCli(['jobs', '--json'], { ...t, env: { WEFT_META: `sqlite://${missing}` } }), 0, t.err());
    assert.deepEqual(JSON.parse(t.out()), { runs: [] });
    assert.equal(existsSync(missing), false);
  });

  it('refuses a bad --meta URL with exit 2 naming --meta', async () => {
    for (const bad of ['sqlite://relative.db', 'postgres://x/y', 'not a url', 'redis://127.0.0.1:1/zero']) {
      const t = io(dir.path);
      assert.equal(await runCli(['jobs', '--meta', bad], t), 2, bad);
      assert.match(t.err(), /--meta/, bad);
      assert.match(t.err(), /Usage: weft jobs/, bad);
    }
    const t = io(dir.path, { WEFT_META: 'file:///nope' });
    assert.equal(await runCli(['jobs'], t), 2);
    assert.match(t.err(), /WEFT_META/);
  });

  it('refuses a Redis that cannot be reached with exit 2 naming --meta', async () => {
    const t = io(dir.path);
    assert.equal(await runCli(['jobs', '--meta', 'redis://127.0.0.1:1/0'], t), 2);
    // the flag once, and why (before: "--meta: invalid setting --meta: … Connection is closed.")
    assert.match(t.err(), /^weft jobs: --meta: cannot reach Redis at redis:\/\/127\.0\.0\.1:1\/0: .*ECONNREFUSED/);
  });

  it('refuses a Sentinel URL where no Sentinel answers with exit 2 naming --meta and the URL, instead of asking forever', async () => {
    const t = io(dir.path);
    assert.equal(await runCli(['jobs', '--meta', 'redis+sentinel://127.0.0.1:1/mymaster/0'], t), 2);
    assert.match(t.err(), /--meta.*cannot reach Redis at redis\+sentinel:\/\/127\.0\.0\.1:1\/mymaster\/0/);
  });

  it('has --help and is listed by weft --help', async () => {
    let t = io(dir.path);
    assert.equal(await runCli(['jobs', '--help'], t), 0);
    assert.match(t.out(), /^Usage: weft jobs \[--meta URL\] \[--json\]/);
    t = io(dir.path);
    assert.equal(await runCli(['--help'], t), 0);
    assert.match(t.out(), /^\s+jobs\s+list the runs/m);
  });
});
