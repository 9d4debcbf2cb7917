// What becomes of a streaming job's checkpoints when `weft run` ends, and what `weft gc` collects of them:
// real `weft` processes running examples/streaming-word-count.ts on a local --store and a SQLite --meta.
// A succeeded run leaves no `checkpoints/<job>/` and no record; a run failed by an injected throw (restarts
// none) keeps its latest completed checkpoint, which `--from-checkpoint latest` restores to counts equal to
// a naive count computed here; `weft gc` removes an orphaned chk dir (one older than the newest completed,
// one a crashed master left in progress) and leaves the live one; and the checkpoints of a succeeded run
// whose job master ended before removing them are collected once the run is dead. SIGTERM cancels an
// unbounded run: its checkpoints stay by default and go with --checkpoint-retention delete-on-cancellation.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, readdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { fileURLToPath, pathToFileURL } from 'node:url';
import Database from 'better-sqlite3';
import { SqliteJobEventLog } from '@weft/job-store';
import { createTempDir, type TempDir } from '@weft/testkit';
import { streamWord } from '../../../examples/lib/stream-words.js';
import { weft as runWeft, type WeftOutcome } from './helpers/kill-and-resume.js';

const bin = fileURLToPath(new URL('../bin/weft.js', import.meta.url));
const job = fileURLToPath(new URL('../../../examples/streaming-word-count.ts', import.meta.url));
const RECORDS = 12_000;
/** 12 000 words at 8 000 a second: about a second and a half, a checkpoint every 100 ms. */
const JOB_ARGS = ['--', '--records', String(RECORDS), '--rate', '8000'];

interface Summary {
  status: string;
  checkpoints: { completed: number; latestCompletedId?: number; restoredFrom?: number; retention: string; discarded?: { checkpoints: number; objects: number } };
  collected: { counts?: [string, number][] };
}

/** What `weft gc --json` reports of `jobId`'s checkpoints (other tests' job ids share the stores). */
function ofJob(stdout: string, jobId: string): unknown[] {
  return (JSON.parse(stdout) as { checkpoints: { jobId: string }[] }).checkpoints.filter((c) => c.jobId === jobId);
}

function naiveCounts(): Map<string, number> {
  const counts = new Map<string, number>();
  for (let seq = 0; seq < RECORDS; seq++) counts.set(streamWord(seq), (counts.get(streamWord(seq)) ?? 0) + 1);
  return counts;
}

/** Every plain file under `dir`, recursively, relative to it (none when it does not exist). */
async function filesUnder(dir: string): Promise<string[]> {
  if (!existsSync(dir)) return [];
  const entries = await readdir(dir, { recursive: true, withFileTypes: true });
  return entries.filter((e) => e.isFile()).map((e) => join(e.parentPath, e.name).slice(dir.length + 1)).sort();
}

describe('weft run --checkpoint-interval: checkpoints at the end of the run, and weft gc', () => {
  let dir: TempDir;
  let metaPath = '';
  let storeDir = '';
  let flags: string[] = [];
  before(async () => {
    dir = await createTempDir('weft-checkpoint-retention-');
    metaPath = join(dir.path, 'meta.db');
    storeDir = join(dir.path, 'store');
    flags = ['--meta', `sqlite://${metaPath}`, '--store', pathToFileURL(storeDir).href];
  });
  after(() => dir.remove());

  const weft = (args: string[]): Promise<WeftOutcome> => runWeft(bin, args, dir.path);
  async function run(jobId: string, extra: string[]): Promise<{ outcome: WeftOutcome; summary: Summary }> {
    const outcome = await weft(['run', job, '--job-id', jobId, '--parallelism', '2', '--checkpoint-interval', '100ms', '--json', ...flags, ...extra, ...JOB_ARGS]);
    return { outcome, summary: JSON.parse(outcome.stdout) as Summary };
  }
  /** The checkpoint ids the metadata store records for `jobId`. */
  async function recorded(jobId: string): Promise<number[]> {
    await using log = new SqliteJobEventLog({ path: metaPath });
    return (await log.checkpointStore(jobId, 0).completed()).map((c) => c.checkpointId);
  }
  const chkDirs = async (jobId: string): Promise<string[]> => [...new Set((await filesUnder(join(storeDir, 'checkpoints', jobId))).map((f) => f.split('/')[0] as string))].sort();
  function countsOf(summary: Summary): Map<string, number> {
    assert.equal(summary.status, 'succeeded');
    return new Map(summary.collected.counts ?? []);
  }

  it('a succeeded run leaves no checkpoints/<job>/ in the store and none recorded in the metadata', async () => {
    const { outcome, summary } = await run('ok', []);
    assert.equal(outcome.code, 0, outcome.stderr);
    assert.deepEqual(countsOf(summary), naiveCounts());
    assert.ok(summary.checkpoints.completed >= 1, JSON.stringify(summary.checkpoints));
    assert.equal(summary.checkpoints.retention, 'retain-on-cancellation');
    assert.equal(summary.checkpoints.discarded?.checkpoints, 1, JSON.stringify(summary.checkpoints));
    assert.deepEqual(await filesUnder(join(storeDir, 'checkpoints', 'ok')), []);
    assert.deepEqual(await recorded('ok'), []);
  });

  it('SIGTERM cancels an unbounded run: its checkpoints stay by default, and go with --checkpoint-retention delete-on-cancellation', async () => {
    for (const retention of ['retain-on-cancellation', 'delete-on-cancellation']) {
      const jobId = `cancelled-${retention}`;
      const child = spawn(process.execPath, [bin, 'run', job, '--job-id', jobId, '--parallelism', '2', '--checkpoint-interval', '100ms', '--checkpoint-retention', retention, ...flags, '--', '--records', '0', '--rate', '4000'], { cwd: dir.path, stdio: ['ignore', 'ignore', 'pipe'] });
      let stderr = '';
      child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
      const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
      const deadline = Date.now() + 60_000;
      while ((!existsSync(metaPath) || (await recorded(jobId).catch(() => [])).length === 0) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
      child.kill('SIGTERM');
      assert.equal(await exited, 1, stderr);
      assert.match(stderr, /cancelled by SIGTERM/);
      if (retention === 'retain-on-cancellation') {
        assert.equal((await recorded(jobId)).length, 1, stderr);
        assert.ok((await chkDirs(jobId)).length >= 1);
      } else {
        assert.deepEqual(await recorded(jobId), [], stderr);
        assert.deepEqual(await filesUnder(join(storeDir, 'checkpoints', jobId)), []);
      }
    }
  });

  it('a failed run keeps its latest checkpoint; weft gc removes orphaned chk dirs and leaves it; --from-checkpoint latest restores it', async () => {
    const failed = await run('failing', ['--restart-strategy', 'none', '--inject-faults', 'throw:count#1@4000']);
    assert.equal(failed.outcome.code, 1, failed.outcome.stderr);
    const latest = failed.summary.checkpoints.latestCompletedId;
    assert.ok(latest !== undefined && latest >= 2, `a checkpoint (not the first) completed before the fault: ${JSON.stringify(failed.summary.checkpoints)}`);
    assert.deepEqual(await recorded('failing'), [latest]);
    assert.deepEqual(await chkDirs('failing'), [`chk-${latest}`]);
    const liveFiles = await filesUnder(join(storeDir, 'checkpoints', 'failing'));

    // an aborted checkpoint's leftover below the latest, and one a crashed job master took an id for and left in progress
    const raw = new Database(metaPath);
    const lastId = (raw.prepare("SELECT last_id FROM weft_checkpoint_ids WHERE job_id = 'failing'").get() as { last_id: number }).last_id;
    raw.prepare("UPDATE weft_checkpoint_ids SET last_id = last_id + 1 WHERE job_id = 'failing'").run();
    raw.close();
    const aborted = `chk-${latest - 1}`;
    const inProgress = `chk-${lastId + 1}`;
    for (const chk of [aborted, inProgress]) {
      await mkdir(join(storeDir, 'checkpoints', 'failing', chk, 'count%230'), { recursive: true });
      await writeFile(join(storeDir, 'checkpoints', 'failing', chk, 'count%230', 'count.keyed'), 'left behind');
    }

    // the run died a moment ago (younger than the default 24h): only what is older than its newest checkpoint goes
    const dry = await weft(['gc', ...flags, '--dry-run', '--json']);
    assert.equal(dry.code, 0, dry.stderr);
    assert.deepEqual(ofJob(dry.stdout, 'failing'), [{ jobId: 'failing', status: 'failed', retention: 'retain-on-cancellation', reason: 'orphaned', checkpoints: 0, objects: 1 }]);
    assert.deepEqual(await chkDirs('failing'), [aborted, `chk-${latest}`, inProgress].sort());
    const young = await weft(['gc', ...flags]);
    assert.equal(young.code, 0, young.stderr);
    assert.match(young.stdout, /removed checkpoints of failing \(failed: never completed\): 0 checkpoints, 1 objects/);
    assert.deepEqual(await chkDirs('failing'), [`chk-${latest}`, inProgress].sort());

    // once dead: the in-progress one goes too; the completed one stays, recorded, with every file
    const old = await weft(['gc', ...flags, '--older-than', '0s', '--json']);
    assert.equal(old.code, 0, old.stderr);
    assert.deepEqual(ofJob(old.stdout, 'failing'), [{ jobId: 'failing', status: 'failed', retention: 'retain-on-cancellation', reason: 'orphaned', checkpoints: 0, objects: 1 }]);
    assert.deepEqual(await filesUnder(join(storeDir, 'checkpoints', 'failing')), liveFiles);
    assert.deepEqual(await recorded('failing'), [latest]);

    const restored = await run('failing', ['--from-checkpoint', 'latest']);
    assert.equal(restored.outcome.code, 0, restored.outcome.stderr);
    assert.equal(restored.summary.checkpoints.restoredFrom, latest);
    assert.deepEqual(countsOf(restored.summary), naiveCounts());
    assert.deepEqual(await filesUnder(join(storeDir, 'checkpoints', 'failing')), [], 'the restored run succeeded: every checkpoint of the job id is gone');
    assert.deepEqual(await recorded('failing'), []);
  });

  it("weft gc removes a dead succeeded run's checkpoints its job master left (retention logged), records first; --checkpoint-retention retain keeps them", async () => {
    const kept = await run('kept', ['--checkpoint-retention', 'retain']);
    assert.equal(kept.outcome.code, 0, kept.outcome.stderr);
    assert.equal(kept.summary.checkpoints.discarded, undefined);
    const ids = await recorded('kept');
    assert.equal(ids.length, 1);
    assert.ok((await chkDirs('kept')).length >= 1);
    const keptGc = await weft(['gc', ...flags, '--older-than', '0s', '--json']);
    assert.equal(keptGc.code, 0, keptGc.stderr);
    assert.deepEqual(ofJob(keptGc.stdout, 'kept'), [], 'retain: a dead succeeded run keeps them');
    assert.deepEqual(await recorded('kept'), ids);

    // what a job master that died between job-finished and removing its checkpoints leaves: the default retention logged, the checkpoints there
    const left = await run('left', ['--checkpoint-retention', 'retain']);
    assert.equal(left.outcome.code, 0, left.outcome.stderr);
    const raw = new Database(metaPath);
    const changed = raw.prepare(`UPDATE weft_job_events SET event = replace(event, '"checkpointRetention":"retain"', '"checkpointRetention":"retain-on-cancellation"') WHERE job_id = 'left' AND event LIKE '%"checkpointRetention":"retain"%'`).run().changes;
    raw.close();
    assert.equal(changed, 1);
    assert.equal((await recorded('left')).length, 1);
    const gc = await weft(['gc', ...flags, '--older-than', '0s', '--json']);
    assert.equal(gc.code, 0, gc.stderr);
    const objects = (await filesUnder(join(storeDir, 'checkpoints', 'left'))).length;
    assert.deepEqual(objects, 0);
    const reported = ofJob(gc.stdout, 'left') as { jobId: string; reason: string; checkpoints: number; objects: number }[];
    assert.deepEqual(reported.map((c) => [c.jobId, c.reason, c.checkpoints]), [['left', 'ended', 1]]);
    assert.ok((reported[0]?.objects ?? 0) >= 2, JSON.stringify(reported));
    assert.deepEqual(await recorded('left'), []);
    assert.deepEqual(await recorded('kept'), ids, 'the retained run\'s records are untouched');
  });
});
