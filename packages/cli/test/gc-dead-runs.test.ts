// `weft gc` removing one dead run (removeDeadRun) while a run of the same job id starts: gc's lease fences
// each step, so the newer run keeps its sink directory and its log. A real SQLite log and the real remote
// shuffle master on a local store (both on one SQLite file, as `weft gc --meta` uses them); what must still
// be there is stated by hand.
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { pathToFileURL } from 'node:url';
import type { JobRunRecord } from '@weft/engine';
import { SqliteJobEventLog } from '@weft/job-store';
import type { JobId, ShuffleMaster } from '@weft/shuffle-api';
import { createRemoteShuffleServiceFactory } from '@weft/shuffle-remote';
import { createTempDir, type TempDir } from '@weft/testkit';
import { removeDeadRun } from '../src/commands/gc-dead-runs.js';
import { leaseDeadRuns } from '../src/commands/gc-leases.js';

describe('weft gc: removing a dead run while a newer run of the job id starts', () => {
  let dir: TempDir;
  let log: SqliteJobEventLog;
  let master: ShuffleMaster;
  before(async () => {
    dir = await createTempDir('weft-gc-dead-runs-');
    const metaPath = join(dir.path, 'meta.db');
    log = new SqliteJobEventLog({ path: metaPath });
    master = createRemoteShuffleServiceFactory({ store: pathToFileURL(join(dir.path, 'store')).href, meta: `sqlite://${metaPath}`, sweepIntervalMs: 0 }).createShuffleMaster({});
    await master.start();
  });
  after(async () => {
    await master.close();
    await log.close();
    await dir.remove();
  });

  /** A run killed mid-job: registered in the shuffle, its text sink's attempt directory holding a part file. */
  async function deadRun(jobId: string): Promise<{ run: JobRunRecord; sinkDir: string }> {
    const sinkDir = join(dir.path, `.out.txt.weft-${jobId}`);
    await mkdir(sinkDir, { recursive: true });
    await writeFile(join(sinkDir, 'part-0'), 'a\n');
    const dead = await log.open({ jobId, owner: 'gone-host:1' });
    await master.registerJob({ jobId: jobId as JobId, epoch: dead.epoch });
    await dead.append({ type: 'job-submitted', data: { name: 'sort', tasksTotal: 1, sinkTempDirs: [sinkDir] } });
    await dead.close();
    return { run: (await log.readRunRecord(jobId)) as JobRunRecord, sinkDir };
  }

  async function leased(run: JobRunRecord) {
    const leases = await leaseDeadRuns(log, [run], () => assert.fail('nothing to skip'));
    return { leases, lease: leases.byJobId.get(run.jobId) };
  }

  it('removes a dead run nothing opened since: its sink directory and its log go (the case the two below must not look like)', async () => {
    const { run, sinkDir } = await deadRun('quiet');
    const { leases, lease } = await leased(run);
    try {
      const removed = await removeDeadRun({ log, master, run, lease, stderr: { write: () => assert.fail('nothing to say') } });
      assert.deepEqual(removed?.sinkDirs, [sinkDir]);
      assert.equal(existsSync(sinkDir), false);
      assert.equal(await log.readRunRecord('quiet'), undefined);
    } finally {
      await leases.close();
    }
  });

  it('a newer run that registered the job in the shuffle after gc took the lease fences gc there: nothing is removed', async () => {
    const { run, sinkDir } = await deadRun('registered');
    const { leases, lease } = await leased(run);
    const newer = await log.open({ jobId: 'registered', owner: 'new-host:2' });
    try {
      await master.registerJob({ jobId: 'registered' as JobId, epoch: newer.epoch });
      await assert.rejects(removeDeadRun({ log, master, run, lease, stderr: { write: () => {} } }), (error: { code?: string }) => error.code === 'SHF_ERR_FENCED');
      assert.equal(existsSync(join(sinkDir, 'part-0')), true);
      await newer.append({ type: 'task-deployed', data: {} });
      assert.deepEqual((await log.readRun('registered')).map((e) => e.type), ['job-submitted', 'task-deployed']);
    } finally {
      await newer.close();
      await leases.close();
    }
  });

  it('a newer run that opened the job id but has not reached the shuffle yet keeps its sink directory and its log (gc says so)', async () => {
    const { run, sinkDir } = await deadRun('opening');
    const { leases, lease } = await leased(run);
    const newer = await log.open({ jobId: 'opening', owner: 'new-host:3' });
    const said: string[] = [];
    try {
      assert.equal(await removeDeadRun({ log, master, run, lease, stderr: { write: (text) => said.push(text) } }), undefined);
      assert.match(said.join(''), /kept opening: a newer run opened the job id/);
      assert.equal(existsSync(join(sinkDir, 'part-0')), true);
      await newer.append({ type: 'task-deployed', data: {} });
      assert.deepEqual((await log.readRun('opening')).map((e) => e.type), ['job-submitted', 'task-deployed']);
    } finally {
      await newer.close();
      await leases.close();
    }
  });
});
