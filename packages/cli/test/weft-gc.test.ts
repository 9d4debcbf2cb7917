// `weft gc`: the partitions, sink attempt files and log of a SIGKILLed run are collected once it is older
// than --older-than; --dry-run and a younger run keep everything. Real `weft` processes, a real SQLite log.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, readdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { fileURLToPath, pathToFileURL } from 'node:url';
import Database from 'better-sqlite3';
import { inProgressPrefix, jobSpillPrefix } from '@weft/engine';
import { SqliteJobEventLog } from '@weft/job-store';
import { createTempDir, type TempDir } from '@weft/testkit';
import { killOnceFinished, weft as runWeft, type WeftOutcome } from './helpers/kill-and-resume.js';

const bin = fileURLToPath(new URL('../bin/weft.js', import.meta.url));
const terasort = fileURLToPath(new URL('../../../examples/terasort.ts', import.meta.url));

function weft(args: string[], cwd: string): Promise<WeftOutcome> {
  return runWeft(bin, args, cwd);
}

/** Every plain file under `dir`, recursively (none when it does not exist). */
async function filesUnder(dir: string): Promise<string[]> {
  if (!existsSync(dir)) return [];
  const entries = await readdir(dir, { recursive: true, withFileTypes: true });
  return entries.filter((e) => e.isFile()).map((e) => join(e.parentPath, e.name));
}

describe('weft gc', () => {
  let dir: TempDir;
  let metaPath = '';
  let storeDir = '';
  let flags: string[] = [];
  before(async () => {
    dir = await createTempDir('weft-gc-');
    metaPath = join(dir.path, 'meta.db');
    storeDir = join(dir.path, 'store');
    flags = ['--meta', `sqlite://${metaPath}`, '--store', pathToFileURL(storeDir).href];
  });
  after(() => dir.remove());

  async function listedIds(): Promise<string[]> {
    const jobs = await weft(['jobs', '--meta', `sqlite://${metaPath}`, '--json'], dir.path);
    assert.equal(jobs.code, 0, jobs.stderr);
    return (JSON.parse(jobs.stdout) as { runs: { jobId: string }[] }).runs.map((r) => r.jobId);
  }

  it('collects a SIGKILLed run only once it is older than --older-than, and --dry-run removes nothing', async () => {
    const output = join(dir.path, 'out.txt');
    const args = ['run', terasort, '--job-id', 'gc-killed', '--parallelism', '2', '--workers', '2', ...flags, '--', '--records', '200000', '--output', output];
    {
      await using log = new SqliteJobEventLog({ path: metaPath });
      await killOnceFinished({ bin, args, cwd: dir.path, log, jobId: 'gc-killed', atLeast: 2 });
    }
    // the killed run's workers notice on their own and may still drop an unfinished attempt's file: wait until the store is still
    let before = await filesUnder(storeDir);
    for (let i = 0; i < 20; i++) {
      await new Promise((r) => setTimeout(r, 1_000));
      const now = await filesUnder(storeDir);
      if (JSON.stringify(now) === JSON.stringify(before)) break;
      before = now;
    }
    assert.ok(before.length > 0, 'the killed run left partition files in the store');
    assert.deepEqual(await listedIds(), ['gc-killed']);

    // the default age (24h) keeps a run that died a moment ago
    const young = await weft(['gc', ...flags], dir.path);
    assert.equal(young.code, 0, young.stderr);
    assert.match(young.stdout, /removed 0 runs in total/);
    assert.deepEqual(await filesUnder(storeDir), before);
    assert.deepEqual(await listedIds(), ['gc-killed']);

    // an attempt that failed and left its object: what a sweep collects — a dry run must not
    const failedObject = join(storeDir, 'gc-killed', 'p', 'failed-attempt.wsm');
    await mkdir(join(storeDir, 'gc-killed', 'p'), { recursive: true });
    await writeFile(failedObject, 'left by a failed attempt');
    const raw = new Database(metaPath);
    raw.prepare("INSERT INTO weft_attempts (write_id, job_id, partition_id, producer_id, object_key, state, started_at, heartbeat_at) VALUES ('w-failed', 'gc-killed', 'p', 'x#0@0', 'gc-killed/p/failed-attempt.wsm', 'failed', 1, 1)").run();
    raw.close();
    before = await filesUnder(storeDir);

    // --dry-run names it but removes nothing
    const dry = await weft(['gc', ...flags, '--older-than', '0s', '--dry-run'], dir.path);
    assert.equal(dry.code, 0, dry.stderr);
    assert.match(dry.stdout, /^would remove gc-killed \(unfinished, .*\): [1-9]\d* partitions, [1-9]\d* bytes/m);
    assert.deepEqual(await filesUnder(storeDir), before);
    assert.deepEqual(await listedIds(), ['gc-killed']);

    const gc = await weft(['gc', ...flags, '--older-than', '0s', '--json'], dir.path);
    assert.equal(gc.code, 0, gc.stderr);
    const report = JSON.parse(gc.stdout) as { removed: { jobId: string; partitions: number; bytes: number }[]; partitions: number; bytes: number; dryRun: boolean };
    assert.deepEqual(report.removed.map((r) => r.jobId), ['gc-killed']);
    assert.ok(report.partitions > 0 && report.bytes > 0, gc.stdout);
    assert.equal(report.dryRun, false);
    assert.deepEqual(await filesUnder(storeDir), [], 'every partition file of the run is gone');
    assert.deepEqual(await listedIds(), [], '`weft jobs` no longer lists it');
    assert.equal((await readdir(dir.path)).filter((n) => n.includes('.weft-gc-killed')).length, 0, 'no sink attempt directory is left');

    // nothing left: a second gc removes nothing
    const again = await weft(['gc', ...flags, '--older-than', '0s'], dir.path);
    assert.equal(again.code, 0, again.stderr);
    assert.match(again.stdout, /removed 0 runs in total: 0 partitions, 0 bytes/);
  });

  it('removes the text sinks\' attempt directories the log names', async () => {
    const sinkDir = join(dir.path, '.words.txt.weft-gc-sink');
    await mkdir(sinkDir, { recursive: true });
    await writeFile(join(sinkDir, 'part-0@0'), 'a\nb\n');
    {
      await using store = new SqliteJobEventLog({ path: metaPath });
      const log = await store.open({ jobId: 'gc-sink', owner: 'elsewhere:1' });
      await log.append({ type: 'job-submitted', data: { name: 'word-count', args: [], tasksTotal: 1 } });
      await log.append({ type: 'task-finished', data: { executionVertexId: 'sink#0', attempt: 0, partitions: [], sinks: [{ kind: 'text-file', file: join(sinkDir, 'part-0@0') }] } });
      await log.close();
    }
    const gc = await weft(['gc', ...flags, '--older-than', '0s'], dir.path);
    assert.equal(gc.code, 0, gc.stderr);
    assert.match(gc.stdout, /^removed gc-sink \(unfinished, .*\): 0 partitions, 4 bytes, 1 sink temp dirs$/m);
    assert.equal(existsSync(sinkDir), false, 'the sink attempt directory is gone');
    assert.ok(!(await listedIds()).includes('gc-sink'));
  });

  it('removes the spill directories a killed run\'s tasks left under the spill directory it logged', async () => {
    const spillRoot = join(dir.path, 'spill-root');
    const left = join(spillRoot, `${jobSpillPrefix('gc-spill')}sort_0_0-abcdef`);
    const otherJob = join(spillRoot, `${jobSpillPrefix('gc-spill-other')}sort_0_0-abcdef`);
    await mkdir(left, { recursive: true });
    await mkdir(otherJob, { recursive: true });
    await writeFile(join(left, 'run-1.spill'), 'spilled');
    {
      await using store = new SqliteJobEventLog({ path: metaPath });
      const log = await store.open({ jobId: 'gc-spill', owner: 'elsewhere:1' });
      await log.append({ type: 'job-submitted', data: { name: 'terasort', args: [], tasksTotal: 1, options: { spillRoot } } });
      await log.close();
    }
    const gc = await weft(['gc', ...flags, '--older-than', '0s'], dir.path);
    assert.equal(gc.code, 0, gc.stderr);
    assert.match(gc.stdout, /^removed gc-spill \(unfinished, .*\): 0 partitions, 7 bytes, 1 spill dirs$/m);
    assert.equal(existsSync(left), false, 'the spill directory is gone');
    assert.equal(existsSync(otherJob), true, 'another job\'s spill directory is kept');
  });

  it('removes what a succeeded run left staged in its two-phase-commit file sink, and nothing of another job in the same directory', async () => {
    const out = join(dir.path, 'tpc-out');
    const staging = join(out, '.in-progress');
    await mkdir(staging, { recursive: true });
    // as an attempt SIGKILLed after a pre-commit, then restarted on a smaller parallelism, leaves it
    const ours = join(staging, `${inProgressPrefix('gc-2pc', 'sinkTo')}part-00003-0-abcdef`);
    const otherJob = join(staging, `${inProgressPrefix('gc-2pc-other', 'sinkTo')}part-00003-0-abcdef`);
    const committed = join(out, 'part-00000-0-123456');
    await writeFile(ours, 'x\ny\n');
    await writeFile(otherJob, 'kept\n');
    await writeFile(committed, 'a\n');
    {
      await using store = new SqliteJobEventLog({ path: metaPath });
      const log = await store.open({ jobId: 'gc-2pc', owner: 'elsewhere:1' });
      await log.append({ type: 'job-submitted', data: { name: 'two-phase', args: [], tasksTotal: 1, twoPhaseStaging: [{ sink: 'sinkTo', staging: { kind: 'file-commit', dir: out } }] } });
      await log.append({ type: 'job-finished', data: {} });
      await log.close();
    }
    const gc = await weft(['gc', ...flags, '--older-than', '0s', '--json'], dir.path);
    assert.equal(gc.code, 0, gc.stderr);
    const removed = (JSON.parse(gc.stdout) as { removed: { jobId: string; bytes: number; twoPhaseStaged: string[]; twoPhaseKept: string[] }[] }).removed.find((r) => r.jobId === 'gc-2pc');
    assert.deepEqual(removed && { bytes: removed.bytes, twoPhaseStaged: removed.twoPhaseStaged, twoPhaseKept: removed.twoPhaseKept }, { bytes: 4, twoPhaseStaged: [ours], twoPhaseKept: [] });
    assert.equal(existsSync(ours), false, 'the run\'s staged transaction is gone');
    assert.equal(existsSync(otherJob), true, 'another job\'s staged transaction is kept');
    assert.equal(existsSync(committed), true, 'committed parts are kept');
  });

  it('keeps what an unfinished run left staged in its two-phase-commit file sink while a completed checkpoint of it is left to restore', async () => {
    const out = join(dir.path, 'tpc-kept');
    const staging = join(out, '.in-progress');
    await mkdir(staging, { recursive: true });
    const pending = join(staging, `${inProgressPrefix('gc-2pc-cp', 'sinkTo')}part-00000-0-abcdef`);
    await writeFile(pending, 'pre-committed for checkpoint 4\n');
    {
      await using store = new SqliteJobEventLog({ path: metaPath });
      const log = await store.open({ jobId: 'gc-2pc-cp', owner: 'elsewhere:1' });
      await log.append({ type: 'job-submitted', data: { name: 'two-phase', args: [], tasksTotal: 1, twoPhaseStaging: [{ sink: 'sinkTo', staging: { kind: 'file-commit', dir: out } }] } });
      await store.checkpointStore('gc-2pc-cp', log.epoch).addCompleted({ checkpointId: 4, triggeredAtMs: 1, completedAtMs: 2, tasks: {} });
      await log.close();
    }
    const gc = await weft(['gc', ...flags, '--older-than', '0s'], dir.path);
    assert.equal(gc.code, 0, gc.stderr);
    assert.match(gc.stdout, /^removed gc-2pc-cp \(unfinished, .*\): 0 partitions, 0 bytes \(kept 1 staged two-phase-commit transactions, and the run's log: a completed checkpoint may still commit them\)$/m);
    assert.equal(existsSync(pending), true, 'what checkpoint 4 may still commit is kept');
    assert.ok((await listedIds()).includes('gc-2pc-cp'), 'the log that names the staging is kept');
    {
      // the checkpoint goes (its retention, or an operator): the next gc finds the staging through the log
      await using store = new SqliteJobEventLog({ path: metaPath });
      const epoch = (await store.readRunRecord('gc-2pc-cp'))?.epoch ?? 0;
      await store.checkpointStore('gc-2pc-cp', epoch).remove(4);
    }
    const again = await weft(['gc', ...flags, '--older-than', '0s'], dir.path);
    assert.equal(again.code, 0, again.stderr);
    assert.match(again.stdout, /^removed gc-2pc-cp \(unfinished, .*\): 0 partitions, \d+ bytes, 1 staged two-phase-commit transactions$/m);
    assert.equal(existsSync(pending), false);
    assert.equal((await listedIds()).includes('gc-2pc-cp'), false);
  });

  it('removes the attempt directory of a text sink whose attempts were still writing when the job master was SIGKILLed', async () => {
    const output = join(dir.path, 'sorted.txt');
    const sinkDir = join(dir.path, '.sorted.txt.weft-gc-writing');
    // the job master itself (not the shim), so the kill lands while the sink attempts write
    const main = fileURLToPath(new URL('../src/main.ts', import.meta.url));
    const args = ['--conditions=source', '--import', import.meta.resolve('tsx'), main, 'run', terasort, '--job-id', 'gc-writing', '--parallelism', '2', '--workers', '2', ...flags, '--', '--records', '400000', '--output', output];
    const child = spawn(process.execPath, args, { cwd: dir.path, stdio: 'ignore' });
    const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
    try {
      while (!existsSync(sinkDir) || (await readdir(sinkDir)).length === 0) {
        if (child.exitCode !== null) throw new Error('the run ended before its sink attempts started writing');
        await new Promise((r) => setTimeout(r, 10));
      }
    } finally {
      child.kill('SIGKILL');
    }
    await exited;
    await new Promise((r) => setTimeout(r, 1_000)); // its workers notice and exit
    {
      await using store = new SqliteJobEventLog({ path: metaPath });
      const finished = (await store.readRun('gc-writing')).filter((e) => e.type === 'task-finished').map((e) => (e.data as { executionVertexId: string }).executionVertexId);
      assert.ok(!finished.some((t) => t.startsWith('sort#')), `no sink attempt is logged finished: ${finished.join(', ')}`);
    }
    assert.ok(existsSync(sinkDir), 'the killed run left its sink attempt directory');
    const gc = await weft(['gc', ...flags, '--older-than', '0s'], dir.path);
    assert.equal(gc.code, 0, gc.stderr);
    assert.match(gc.stdout, /^removed gc-writing \(unfinished, .*\): .* 1 sink temp dirs$/m);
    assert.equal(existsSync(sinkDir), false, 'the sink attempt directory is gone');
    assert.ok(!(await listedIds()).includes('gc-writing'));
  });

  it('without --store or --meta collects where `weft run` put them by default (./.weft/shuffle and ./.weft/shuffle-meta.db)', async () => {
    const cwd = join(dir.path, 'defaults');
    await mkdir(cwd, { recursive: true });
    const defaultStore = join(cwd, '.weft', 'shuffle');
    const args = ['run', terasort, '--job-id', 'gc-defaults', '--parallelism', '2', '--workers', '2', '--', '--records', '200000'];
    {
      await using log = new SqliteJobEventLog({ path: join(cwd, '.weft', 'shuffle-meta.db') });
      await killOnceFinished({ bin, args, cwd, log, jobId: 'gc-defaults', atLeast: 2 });
    }
    // its workers notice on their own and may still drop an unfinished attempt's file: wait until the store is still
    let left = await filesUnder(defaultStore);
    for (let i = 0; i < 20; i++) {
      await new Promise((r) => setTimeout(r, 1_000));
      const now = await filesUnder(defaultStore);
      if (JSON.stringify(now) === JSON.stringify(left)) break;
      left = now;
    }
    assert.ok(left.length > 0, 'the killed run left partition files in the default store');
    const gc = await weft(['gc', '--older-than', '0s', '--json'], cwd);
    assert.equal(gc.code, 0, gc.stderr);
    const report = JSON.parse(gc.stdout) as { removed: { jobId: string }[]; partitions: number };
    assert.deepEqual(report.removed.map((r) => r.jobId), ['gc-defaults'], `${gc.stdout}\n${gc.stderr}`);
    assert.ok(report.partitions > 0, gc.stdout);
    assert.deepEqual(await filesUnder(defaultStore), [], 'no partition file of the run is left');
  });

  it('keeps a run on another host that logged no event for hours but renews its lease (a streaming job), and collects it once the renewals stop', async () => {
    const hours = 3 * 3_600_000;
    {
      // events written two hours ago and more, by a job master on another host
      await using old = new SqliteJobEventLog({ path: metaPath }, { clock: () => Date.now() - hours });
      const master = await old.open({ jobId: 'gc-streaming', owner: 'other-host:4242' });
      await master.append({ type: 'job-submitted', data: { name: 'stream', tasksTotal: 2 } });
      await master.close();
    }
    const raw = new Database(metaPath);
    const renewed = (atMs: number): void => void raw.prepare('INSERT INTO weft_job_lease_renewals (job_id, epoch, renewed_at) VALUES (?, 1, ?) ON CONFLICT (job_id) DO UPDATE SET renewed_at = excluded.renewed_at').run('gc-streaming', atMs);
    try {
      renewed(Date.now() - 1_000);
      const live = await weft(['gc', ...flags, '--older-than', '1h', '--json'], dir.path);
      assert.equal(live.code, 0, live.stderr);
      assert.deepEqual((JSON.parse(live.stdout) as { removed: { jobId: string }[] }).removed.filter((r) => r.jobId === 'gc-streaming'), []);
      assert.ok((await listedIds()).includes('gc-streaming'), 'a run renewing its lease is kept');
      renewed(Date.now() - 2 * 3_600_000);
      const dead = await weft(['gc', ...flags, '--older-than', '1h', '--json'], dir.path);
      assert.equal(dead.code, 0, dead.stderr);
      assert.deepEqual((JSON.parse(dead.stdout) as { removed: { jobId: string }[] }).removed.filter((r) => r.jobId === 'gc-streaming').length, 1);
      assert.equal((await listedIds()).includes('gc-streaming'), false);
    } finally {
      raw.close();
    }
  });

  it('collects a run whose lease an earlier gc took and left (it crashed): that lease is no activity of the run', async () => {
    {
      await using old = new SqliteJobEventLog({ path: metaPath }, { clock: () => Date.now() - 3 * 3_600_000 });
      const master = await old.open({ jobId: 'gc-crashed-gc', owner: 'other-host:4243' });
      await master.append({ type: 'job-submitted', data: { name: 'sort', tasksTotal: 2 } });
      await master.close();
    }
    {
      // the earlier gc's lease, taken just now (its owner is `weft gc <host>:<pid>`)
      await using store = new SqliteJobEventLog({ path: metaPath });
      await (await store.open({ jobId: 'gc-crashed-gc', owner: 'weft gc other-host:99' })).close();
    }
    const gc = await weft(['gc', ...flags, '--older-than', '1h', '--json'], dir.path);
    assert.equal(gc.code, 0, gc.stderr);
    assert.deepEqual((JSON.parse(gc.stdout) as { removed: { jobId: string }[] }).removed.filter((r) => r.jobId === 'gc-crashed-gc').length, 1);
  });

  it('refuses a bad --older-than, --meta or --store with exit 2 naming the flag', async () => {
    const duration = await weft(['gc', ...flags, '--older-than', 'soon'], dir.path);
    assert.equal(duration.code, 2);
    assert.match(duration.stderr, /--older-than/);
    const meta = await weft(['gc', '--meta', 'ftp://nowhere', '--store', pathToFileURL(storeDir).href], dir.path);
    assert.equal(meta.code, 2);
    assert.match(meta.stderr, /--meta/);
    const store = await weft(['gc', '--meta', `sqlite://${metaPath}`, '--store', 'gopher://x'], dir.path);
    assert.equal(store.code, 2);
    assert.match(store.stderr, /--store/);
    const help = await weft(['gc', '--help'], dir.path);
    assert.equal(help.code, 0);
    assert.match(help.stdout, /Usage: weft gc/);
    assert.match(help.stdout, /age alone decides/);
  });
});
