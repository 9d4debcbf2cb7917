// A stale job master (issue 11): run A of `weft run --job-id X` is SIGSTOPped once its durable log says
// some task finished, run B (the same command) resumes the job under epoch 2, then A is SIGCONTinued —
// while B still runs, or after B finished. A must change nothing: it fails with one line naming the
// fencing, and B's run, output, log and store are exactly what they would have been without A.
// Real `weft` processes, a real SQLite job event log and metadata store, a file:// store.
import assert from 'node:assert/strict';
import type { ChildProcess } from 'node:child_process';
import { readFile, readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { fileURLToPath, pathToFileURL } from 'node:url';
import Database from 'better-sqlite3';
import { SqliteJobEventLog } from '@weft/job-store';
import { createTempDir, type TempDir } from '@weft/testkit';
import { weft as runWeft } from './helpers/kill-and-resume.js';
import { descendants, readStat, waitFor } from './helpers/process-tree.js';
import { assertCleanResume, assertFencedExit, assertNoStaleEventAfterTakeover, type Running, start, until } from './helpers/stale-master.js';

const bin = fileURLToPath(new URL('../bin/weft.js', import.meta.url));
const terasort = fileURLToPath(new URL('../../../examples/terasort.ts', import.meta.url));
const RECORDS = ['--records', '300000'];



/**
 * SIGSTOPs `child` while this process holds the SQLite write lock on `metaPath` (the job event log and the
 * metadata store share it), so `child` cannot be stopped inside a write transaction and block every other
 * process's writes while it sleeps. Returns once the kernel shows it stopped.
 */
async function stopOutsideTransactions(child: ChildProcess, metaPath: string): Promise<void> {
  const db = new Database(metaPath, { timeout: 30_000 });
  try {
    db.exec('BEGIN IMMEDIATE');
    try {
      child.kill('SIGSTOP');
      await waitFor(`process ${child.pid} stopped`, () => (readStat(child.pid!)?.state === 'T' ? true : undefined), 10_000);
    } finally {
      db.exec('ROLLBACK');
    }
  } finally {
    db.close();
  }
}

/** Files under `dir`, recursively, as relative paths. */
async function filesIn(dir: string): Promise<Set<string>> {
  try {
    const entries = await readdir(dir, { recursive: true, withFileTypes: true });
    return new Set(entries.filter((e) => e.isFile()).map((e) => join(e.parentPath, e.name).slice(dir.length + 1)));
  } catch {
    return new Set();
  }
}

/** The object keys of the partitions committed for the job, as the SQLite metadata store records them. */
function committedObjects(metaPath: string, jobId: string): string[] {
  const db = new Database(metaPath, { readonly: true, fileMustExist: true });
  try {
    const hasTable = db.prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'weft_commits'").get() !== undefined;
    if (!hasTable) return [];
    return (db.prepare('SELECT record FROM weft_commits WHERE job_id = ?').all(jobId) as { record: string }[]).map((r) => (JSON.parse(r.record) as { objectKey: string }).objectKey).sort();
  } finally {
    db.close();
  }
}




describe('weft run --job-id: a stale job master woken up (SIGSTOP, SIGCONT) after a newer run took over', () => {
  let dir: TempDir;
  let metaPath = '';
  let storePath = '';
  let clean: Buffer;
  before(async () => {
    dir = await createTempDir('weft-stale-master-');
    metaPath = join(dir.path, 'meta.db');
    storePath = join(dir.path, 'store');
    const out = await runWeft(bin, ['run', terasort, ...commonArgs('clean')], dir.path);
    assert.equal(out.code, 0, out.stderr);
    clean = await readFile(join(dir.path, 'clean.txt'));
  });
  after(() => dir.remove());

  function commonArgs(output: string, jobId?: string): string[] {
    return [
      ...(jobId === undefined ? [] : ['--job-id', jobId]),
      '--meta', `sqlite://${metaPath}`,
      '--store', pathToFileURL(storePath).href,
      '--parallelism', '2', '--workers', '2', '--json',
      '--', ...RECORDS, '--output', join(dir.path, `${output}.txt`),
    ];
  }

  /** Starts run A, and SIGSTOPs it (only its own pid) once its log says some task finished. */
  async function startAndStop(jobId: string, args: readonly string[], log: SqliteJobEventLog): Promise<{ a: Running; descendantsOfA: number[] }> {
    const a = start(args, dir.path);
    await until('a task-finished event of run A', async () => {
      if (a.child.exitCode !== null) throw new Error('run A ended before it could be stopped');
      return (await log.readRun(jobId).catch(() => [])).some((e) => e.type === 'task-finished');
    });
    await stopOutsideTransactions(a.child, metaPath);
    const descendantsOfA = await waitFor('the workers of run A', () => {
      const pids = descendants(a.child.pid!);
      return pids.length > 0 ? pids : undefined;
    }, 10_000);
    return { a, descendantsOfA };
  }

  it('(a) woken while the newer run still runs: it fails fenced and takes nothing from it (no partition lost, output intact)', async () => {
    const jobId = 'stale-while-running';
    const args = ['run', terasort, ...commonArgs('a', jobId)];
    await using log = new SqliteJobEventLog({ path: metaPath });
    const { a, descendantsOfA } = await startAndStop(jobId, args, log);
    const b = start(args, dir.path);
    try {
      // B took over (epoch 2) and logged one of its own events beyond its submission
      await until('an event of run B', async () => {
        if (b.child.exitCode !== null) throw new Error(`run B ended before it could be held: ${JSON.stringify(await b.done)}`);
        return (await log.readRun(jobId).catch(() => [])).filter((e) => e.epoch === 2).length >= 2;
      });
      // hold B where it is while A wakes up and does whatever it does, so A acts in the middle of B's run
      await stopOutsideTransactions(b.child, metaPath);
      a.child.kill('SIGCONT');
      const outcomeA = await a.done;
      await new Promise((resolve) => setTimeout(resolve, 300)); // A's workers exit on their own
      b.child.kill('SIGCONT');
      const outcomeB = await b.done;
      assertFencedExit(outcomeA, descendantsOfA);
      assertCleanResume(outcomeB);
      assert.ok((await readFile(join(dir.path, 'a.txt'))).equals(clean), 'the output equals a clean run’s, byte for byte');
      assertNoStaleEventAfterTakeover(await log.readRun(jobId));
    } finally {
      a.child.kill('SIGCONT');
      a.child.kill('SIGKILL');
      b.child.kill('SIGCONT');
      b.child.kill('SIGKILL');
    }
  });

  it('(b) woken after the newer run finished: it fails fenced, the output and the store stay as the newer run left them', async () => {
    const jobId = 'stale-after-finish';
    const args = ['run', terasort, ...commonArgs('b', jobId)];
    await using log = new SqliteJobEventLog({ path: metaPath });
    const { a, descendantsOfA } = await startAndStop(jobId, args, log);
    try {
      const outcomeB = await start(args, dir.path).done;
      assertCleanResume(outcomeB);
      const leftCommitted = committedObjects(metaPath, jobId);
      a.child.kill('SIGCONT');
      const outcomeA = await a.done;
      await new Promise((resolve) => setTimeout(resolve, 300));
      assertFencedExit(outcomeA, descendantsOfA);
      assert.ok((await readFile(join(dir.path, 'b.txt'))).equals(clean), 'the output equals a clean run’s, byte for byte');
      assertNoStaleEventAfterTakeover(await log.readRun(jobId));
      assert.deepEqual(committedObjects(metaPath, jobId), leftCommitted, 'the committed partitions B left are still recorded');
      const nowFiles = await filesIn(storePath);
      for (const key of leftCommitted) assert.ok(nowFiles.has(key) || [...nowFiles].some((f) => f.endsWith(key)), `object ${key} that B left is gone`);
    } finally {
      a.child.kill('SIGCONT');
      a.child.kill('SIGKILL');
    }
  });
});
