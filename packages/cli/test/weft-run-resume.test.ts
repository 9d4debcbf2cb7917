// `weft run --job-id ID` (docs/DESIGN.md contract 7): a SIGKILLed run resumed by the same command, and
// the refusals of what cannot be resumed. Real `weft` processes, a real SQLite job event log.
import assert from 'node:assert/strict';
import { copyFile, mkdir, readFile, symlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { fileURLToPath, pathToFileURL } from 'node:url';
import Database from 'better-sqlite3';
import { jobModuleHash } from '@weft/engine';
import { SqliteJobEventLog } from '@weft/job-store';
import { createTempDir, type TempDir } from '@weft/testkit';
import { finishedInLog, killOnceFinished, weft as runWeft, type WeftOutcome } from './helpers/kill-and-resume.js';

const bin = fileURLToPath(new URL('../bin/weft.js', import.meta.url));
const terasort = fileURLToPath(new URL('../../../examples/terasort.ts', import.meta.url));
const wordCount = fileURLToPath(new URL('../../../examples/word-count.ts', import.meta.url));

function weft(args: string[], cwd: string): Promise<WeftOutcome> {
  return runWeft(bin, args, cwd);
}

describe('weft run --job-id', () => {
  let dir: TempDir;
  let metaPath = '';
  let common: string[] = [];
  before(async () => {
    dir = await createTempDir('weft-resume-');
    metaPath = join(dir.path, 'meta.db');
    common = ['--meta', `sqlite://${metaPath}`, '--store', pathToFileURL(join(dir.path, 'store')).href, '--json'];
  });
  after(() => dir.remove());

  it('resumes a SIGKILLed terasort: byte-for-byte the clean output, reusing every task the log says finished', async () => {
    const records = ['--records', '200000'];
    const clean = await weft(['run', terasort, '--parallelism', '2', '--workers', '2', ...common, '--', ...records, '--output', join(dir.path, 'clean.txt')], dir.path);
    assert.equal(clean.code, 0, clean.stderr);
    const args = ['run', terasort, '--job-id', 'ts-kill', '--parallelism', '2', '--workers', '2', ...common, '--', ...records, '--output', join(dir.path, 'resumed.txt')];
    {
      await using log = new SqliteJobEventLog({ path: metaPath });
      // kill it once some tasks finished (as its durable log says) and before the job ended
      await killOnceFinished({ bin, args, cwd: dir.path, log, jobId: 'ts-kill', atLeast: 2 });
    }
    await using log = new SqliteJobEventLog({ path: metaPath });
    const logged = await finishedInLog(log, 'ts-kill');
    const resumed = await weft(args, dir.path);
    assert.equal(resumed.code, 0, resumed.stderr);
    const summary = JSON.parse(resumed.stdout) as { resumed: boolean; tasksReused: number; attempts: number; tasks: number };
    assert.equal(summary.resumed, true);
    // every task the dead run logged finished is reused here: its partitions still exist (nothing deleted them)
    assert.equal(summary.tasksReused, logged.size, resumed.stderr);
    assert.ok(summary.tasksReused > 0);
    assert.equal(summary.attempts, summary.tasks - summary.tasksReused, 'attempts counts only this run’s');
    assert.ok((await readFile(join(dir.path, 'resumed.txt'))).equals(await readFile(join(dir.path, 'clean.txt'))), 'the resumed output equals a clean run’s, byte for byte');
    // a finished id is refused
    const again = await weft(args, dir.path);
    assert.equal(again.code, 2, again.stderr);
    assert.match(again.stderr, /cannot resume job ts-kill: its run already finished/);
  });

  it('refuses to resume a run with other job arguments, or another job module, naming what differs (exit 2)', async () => {
    await using store = new SqliteJobEventLog({ path: metaPath });
    const log = await store.open({ jobId: 'wc-unfinished', owner: 'test' });
    await log.append({ type: 'job-submitted', data: { name: 'word-count', jobModule: pathToFileURL(wordCount).href, jobModuleHash: 'not-the-hash', args: ['--output', 'x.txt'], topology: { vertices: [], edges: [] }, options: null, tasksTotal: 1 } });
    await log.close();
    const module = await weft(['run', wordCount, '--job-id', 'wc-unfinished', '--executor', 'inprocess', ...common, '--', '--output', 'x.txt'], dir.path);
    assert.equal(module.code, 2, module.stderr);
    assert.match(module.stderr, /cannot resume job wc-unfinished: the job module differs/);
    const hash = await jobModuleHash(pathToFileURL(wordCount).href);
    const log2 = await store.open({ jobId: 'wc-args', owner: 'test' });
    await log2.append({ type: 'job-submitted', data: { name: 'word-count', jobModule: pathToFileURL(wordCount).href, jobModuleHash: hash, args: ['--output', 'x.txt'], topology: { vertices: [], edges: [] }, options: null, tasksTotal: 1 } });
    await log2.close();
    const args = await weft(['run', wordCount, '--job-id', 'wc-args', '--executor', 'inprocess', ...common, '--', '--output', 'y.txt'], dir.path);
    assert.equal(args.code, 2, args.stderr);
    assert.match(args.stderr, /the job arguments differ: the run was submitted with \["--output","x.txt"\], these are \["--output","y.txt"\]/);
  });

  it('refuses to resume once a local module the job module imports changed (exit 2), instead of mixing old and new code', async () => {
    // a copy of terasort and its helper module, so the helper can change between the kill and the resume
    const jobDir = join(dir.path, 'job');
    await mkdir(join(jobDir, 'lib'), { recursive: true });
    await copyFile(terasort, join(jobDir, 'terasort.ts'));
    const helper = join(jobDir, 'lib', 'terasort-data.ts');
    await copyFile(fileURLToPath(new URL('../../../examples/lib/terasort-data.ts', import.meta.url)), helper);
    await symlink(fileURLToPath(new URL('../../../node_modules', import.meta.url)), join(jobDir, 'node_modules'), 'dir');
    const args = ['run', join(jobDir, 'terasort.ts'), '--job-id', 'ts-helper', '--parallelism', '2', '--workers', '2', ...common, '--', '--records', '200000', '--output', join(dir.path, 'helper.txt')];
    {
      await using log = new SqliteJobEventLog({ path: metaPath });
      await killOnceFinished({ bin, args, cwd: dir.path, log, jobId: 'ts-helper', atLeast: 1 });
    }
    await writeFile(helper, (await readFile(helper, 'utf8')).replace("'ABCDEFGHIJ'", "'abcdefghij'"));
    const resumed = await weft(args, dir.path);
    assert.equal(resumed.code, 2, `a resume ran with the changed helper: ${resumed.stdout}${resumed.stderr}`);
    assert.match(resumed.stderr, /cannot resume job ts-helper: the job module differs/);
  });

  it('refuses a log written by a newer format version, naming the version (exit 2)', async () => {
    await using store = new SqliteJobEventLog({ path: metaPath });
    const log = await store.open({ jobId: 'wc-newer', owner: 'test' });
    await log.append({ type: 'job-submitted', data: { name: 'word-count', args: [] } });
    await log.close();
    const raw = new Database(metaPath);
    raw.prepare('INSERT INTO weft_job_events (job_id, seq, epoch, event) VALUES (?, ?, ?, ?)').run('wc-newer', 2, 1, JSON.stringify({ v: 2, seq: 2, epoch: 1, atMs: 1, type: 'task-finished', data: {} }));
    raw.close();
    const newer = await weft(['run', wordCount, '--job-id', 'wc-newer', '--executor', 'inprocess', ...common, '--', '--output', join(dir.path, 'n.txt')], dir.path);
    assert.equal(newer.code, 2, newer.stderr);
    assert.match(newer.stderr, /version 2/);
  });

  it('restarts cleanly, saying why on stderr, when the history does not fit the job (a vertex it does not have)', async () => {
    const hash = await jobModuleHash(pathToFileURL(wordCount).href);
    const output = join(dir.path, 'fallback.txt');
    const jobArgs = ['--output', output];
    await using store = new SqliteJobEventLog({ path: metaPath });
    const log = await store.open({ jobId: 'wc-misfit', owner: 'test' });
    await log.append({ type: 'job-submitted', data: { name: 'word-count', jobModule: pathToFileURL(wordCount).href, jobModuleHash: hash, args: jobArgs, topology: { vertices: [], edges: [] }, options: null, tasksTotal: 1 } });
    await log.append({ type: 'vertex-initialized', data: { vertexId: 'no-such-vertex', parallelism: 7 } });
    await log.close();
    const run = await weft(['run', wordCount, '--job-id', 'wc-misfit', '--executor', 'inprocess', '--parallelism', '2', ...common, '--', ...jobArgs], dir.path);
    assert.equal(run.code, 0, run.stderr);
    assert.match(run.stderr, /could not resume job wc-misfit, so it ran again from the start: .*no-such-vertex/);
    const summary = JSON.parse(run.stdout) as { resumed: boolean; tasksReused: number; epoch: number };
    assert.deepEqual([summary.resumed, summary.tasksReused, summary.epoch], [false, 0, 2]);
    assert.ok((await readFile(output, 'utf8')).length > 0);
  });

  it('runs an unknown id fresh (resumed: false)', async () => {
    const fresh = await weft(['run', wordCount, '--job-id', 'wc-new', '--executor', 'inprocess', ...common, '--', '--output', join(dir.path, 'wc.txt')], dir.path);
    assert.equal(fresh.code, 0, fresh.stderr);
    const summary = JSON.parse(fresh.stdout) as { resumed: boolean; tasksReused: number; epoch: number };
    assert.deepEqual([summary.resumed, summary.tasksReused, summary.epoch], [false, 0, 1]);
  });
});
