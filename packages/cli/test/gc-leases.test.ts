// `weft gc` and a run of the same job id that starts while gc works: gc acts on a dead run only under its
// lease, taken while the epoch gc read still holds, and its checkpoint records and `deleteRun` are fenced
// by it — so the newer run is never fenced, its checkpoints never removed, its log never deleted. A real
// SQLite log; the expected outcomes are hand-stated (what must still be there), not another gc's.
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { checkpointPrefix, InMemoryCheckpointStorage, type JobRunRecord } from '@weft/engine';
import { SqliteJobEventLog } from '@weft/job-store';
import { createTempDir, type TempDir } from '@weft/testkit';
import { collectCheckpoints } from '../src/commands/gc-checkpoints.js';
import { leaseDeadRuns } from '../src/commands/gc-leases.js';

describe('weft gc: leases of dead runs, and a newer run of the same job id', () => {
  let dir: TempDir;
  let log: SqliteJobEventLog;
  before(async () => {
    dir = await createTempDir('weft-gc-leases-');
    log = new SqliteJobEventLog({ path: join(dir.path, 'meta.db') });
  });
  after(async () => {
    await log.close();
    await dir.remove();
  });

  /** A run that succeeded with one completed checkpoint left (its master died before removing it, retention `delete`). */
  async function deadSucceededRun(jobId: string, storage: InMemoryCheckpointStorage): Promise<JobRunRecord> {
    const master = await log.open({ jobId, owner: 'gone-host:1' });
    await master.append({ type: 'job-submitted', data: { name: 'stream', tasksTotal: 1, options: { checkpointRetention: 'delete' } } });
    const store = log.checkpointStore(jobId, master.epoch);
    const checkpointId = await store.nextCheckpointId();
    await storage.write(`${checkpointPrefix(jobId, checkpointId)}count#0`, new Uint8Array([1, 2, 3]));
    await store.addCompleted({ checkpointId, triggeredAtMs: 1, completedAtMs: 2, tasks: {} });
    await master.append({ type: 'job-finished', data: {} });
    await master.close();
    const record = await log.readRunRecord(jobId);
    assert.equal(record?.status, 'succeeded');
    return record as JobRunRecord;
  }

  async function collect(storage: InMemoryCheckpointStorage, runs: JobRunRecord[], leases: Awaited<ReturnType<typeof leaseDeadRuns>>) {
    const skipped: string[] = [];
    const collected = await collectCheckpoints({ log, storage, runs, isDead: (r) => leases.byJobId.has(r.jobId), leases: leases.byJobId, dryRun: false }, (jobId, error) => skipped.push(`${jobId}: ${error.message}`));
    return { collected, skipped };
  }

  it('collects a dead run under its lease when nothing opened the job id since (the case the two below must not look like)', async () => {
    const storage = new InMemoryCheckpointStorage();
    const run = await deadSucceededRun('quiet', storage);
    const leases = await leaseDeadRuns(log, [run], () => assert.fail('nothing to skip'));
    try {
      const { collected, skipped } = await collect(storage, [run], leases);
      assert.deepEqual(skipped, []);
      assert.deepEqual(collected.map((c) => [c.jobId, c.reason, c.checkpoints, c.objects]), [['quiet', 'ended', 1, 1]]);
      assert.deepEqual(await log.checkpointStore('quiet', 0).completed(), []);
      await log.deleteRun('quiet', { ifEpoch: leases.byJobId.get('quiet')?.epoch });
      assert.equal(await log.readRunRecord('quiet'), undefined);
    } finally {
      await leases.close();
    }
  });

  it('takes no lease of a run whose job id a newer run opened after gc read its record: the newer run is not fenced, its checkpoints stay', async () => {
    const storage = new InMemoryCheckpointStorage();
    const stale = await deadSucceededRun('raced', storage);
    // `weft run --job-id raced` starts between gc's listRuns and its lease
    const newer = await log.open({ jobId: 'raced', owner: 'new-host:2' });
    const skipped: string[] = [];
    const leases = await leaseDeadRuns(log, [stale], (jobId, error) => skipped.push(`${jobId}: ${(error as { code?: string }).code}`));
    try {
      assert.deepEqual(skipped, ['raced: WEFT_ERR_FENCED']);
      assert.equal(leases.byJobId.size, 0);
      const { collected } = await collect(storage, [stale], leases);
      assert.deepEqual(collected, []);
      await newer.append({ type: 'job-submitted', data: { name: 'stream again' } });
      assert.equal((await log.checkpointStore('raced', 0).completed()).length, 1);
      assert.equal((await storage.listKeys('checkpoints/raced/')).length, 1);
    } finally {
      await leases.close();
      await newer.close();
    }
  });

  it('a run that opens the job id after gc took the lease fences gc: its checkpoints and its log stay', async () => {
    const storage = new InMemoryCheckpointStorage();
    const run = await deadSucceededRun('late', storage);
    const leases = await leaseDeadRuns(log, [run], () => assert.fail('nothing to skip'));
    const newer = await log.open({ jobId: 'late', owner: 'new-host:3' });
    try {
      const { collected, skipped } = await collect(storage, [run], leases);
      assert.deepEqual(collected, []);
      assert.equal(skipped.length, 1);
      assert.match(skipped[0] as string, /^late: /);
      assert.equal((await log.checkpointStore('late', 0).completed()).length, 1);
      assert.equal((await storage.listKeys('checkpoints/late/')).length, 1);
      await assert.rejects(log.deleteRun('late', { ifEpoch: leases.byJobId.get('late')?.epoch }), (error: { code?: string }) => error.code === 'WEFT_ERR_FENCED');
      await newer.append({ type: 'task-deployed', data: {} });
      assert.deepEqual((await log.readRun('late')).map((e) => e.type), ['job-submitted', 'job-finished', 'task-deployed']);
    } finally {
      await leases.close();
      await newer.close();
    }
  });
});
