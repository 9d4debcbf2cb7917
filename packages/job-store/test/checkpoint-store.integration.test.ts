// The checkpoint stores next to the job event log — SQLite (a temp file) and Redis (a real redis-server):
// ids that keep increasing across job masters, completed checkpoints in order, removal, fencing of an
// older epoch (nothing written), a CheckpointCoordinator whose successor restores the latest one, and the
// end-of-run discard of a run a newer one of the job id took over: refused, nothing removed.
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { CheckpointCoordinator, type CheckpointStore, type CompletedCheckpoint, discardJobCheckpoints, InMemoryCheckpointStorage, isEngineError } from '@weft/engine';
import { RedisJobEventLog, SqliteJobEventLog } from '@weft/job-store';
import { createTempDir, type RedisServer, startRedis, type TempDir } from '@weft/testkit';

type Log = SqliteJobEventLog | RedisJobEventLog;

const checkpoint = (checkpointId: number): CompletedCheckpoint => ({ checkpointId, triggeredAtMs: 1_000 + checkpointId, completedAtMs: 2_000 + checkpointId, tasks: { 'count#0': { key: `cp-${checkpointId}/count-0`, bytes: 10 } } });
const fenced = (e: unknown): boolean => isEngineError(e, 'WEFT_ERR_FENCED') && /refused/.test((e as Error).message);

for (const kind of ['sqlite', 'redis'] as const) {
  describe(`${kind} checkpoint store`, () => {
    let dir: TempDir;
    let redis: RedisServer | undefined;
    let log: Log;
    before(async () => {
      dir = await createTempDir('weft-checkpoint-store-');
      if (kind === 'redis') redis = await startRedis({ persistent: false });
      log = kind === 'sqlite' ? new SqliteJobEventLog({ path: join(dir.path, 'meta.db') }) : await RedisJobEventLog.connect({ url: redis!.url });
    });
    after(async () => {
      await log?.close();
      await redis?.close();
      await dir?.remove();
    });

    it('hands out increasing ids, keeps completed checkpoints in order, removes them, and fences an older epoch', async () => {
      const first = await log.open({ jobId: 'cp', owner: 'master-1' });
      const store: CheckpointStore = log.checkpointStore('cp', first.epoch);
      assert.deepEqual([await store.nextCheckpointId(), await store.nextCheckpointId(), await store.nextCheckpointId()], [1, 2, 3]);
      await store.addCompleted(checkpoint(2));
      await store.addCompleted(checkpoint(1));
      assert.deepEqual(await store.completed(), [checkpoint(1), checkpoint(2)]);
      await store.remove(1);
      assert.deepEqual(await store.completed(), [checkpoint(2)]);

      const second = await log.open({ jobId: 'cp', owner: 'master-2' });
      assert.equal(second.epoch, first.epoch + 1);
      await assert.rejects(store.addCompleted(checkpoint(3)), fenced);
      await assert.rejects(store.remove(2), fenced);
      await assert.rejects(store.nextCheckpointId(), fenced);
      const successor = log.checkpointStore('cp', second.epoch);
      assert.deepEqual(await successor.completed(), [checkpoint(2)], 'the fenced writes changed nothing');
      assert.equal(await successor.nextCheckpointId(), 4, 'ids go on from the last one handed out');
      assert.deepEqual(await log.checkpointStore('other-job', 1).completed(), [], 'per job');
      await Promise.all([first.close(), second.close()]);
    });

    it("a coordinator's completed checkpoint is the one its successor (a new job master) restores from", async () => {
      const master = await log.open({ jobId: 'restore', owner: 'master-1' });
      const coordinator = new CheckpointCoordinator({ tasks: ['src#0'], intervalMs: 60_000, store: log.checkpointStore('restore', master.epoch), triggerSources: () => {}, onFailure: (e) => assert.fail(e) });
      await coordinator.start();
      const id = await coordinator.triggerCheckpoint();
      await coordinator.acknowledge(id as number, 'src#0', { key: 'snapshot-1' });
      coordinator.stop();
      const next = await log.open({ jobId: 'restore', owner: 'master-2' });
      const successor = new CheckpointCoordinator({ tasks: ['src#0'], intervalMs: 60_000, store: log.checkpointStore('restore', next.epoch), triggerSources: () => {}, onFailure: (e) => assert.fail(e) });
      await successor.start();
      assert.deepEqual([successor.latestCompleted?.checkpointId, successor.latestCompleted?.tasks], [id, { 'src#0': { key: 'snapshot-1' } }]);
      successor.stop();
      await Promise.all([master.close(), next.close()]);
    });

    it("a run's end-of-run discard removes nothing once a newer run of the job id took the lease; the newer run's removes records, data and leftovers below its id", async () => {
      const storage = new InMemoryCheckpointStorage();
      const snapshot = (id: number): CompletedCheckpoint => ({ checkpointId: id, triggeredAtMs: 1, completedAtMs: 2, tasks: { 'count#0': { operators: { count: { keyed: `checkpoints/resumed/chk-${id}/count%230/count.keyed` } } } } });
      const first = await log.open({ jobId: 'resumed', owner: 'master-1' });
      const store = log.checkpointStore('resumed', first.epoch);
      for (const id of [await store.nextCheckpointId(), await store.nextCheckpointId()]) {
        await storage.write(`checkpoints/resumed/chk-${id}/count%230/count.keyed`, new Uint8Array([id]));
        if (id === 2) await store.addCompleted(snapshot(id));
      }
      // a resumed run of the same job id, restoring from checkpoint 2
      const second = await log.open({ jobId: 'resumed', owner: 'master-2' });
      const everything = storage.keys();
      await assert.rejects(discardJobCheckpoints({ jobId: 'resumed', store, storage }), fenced);
      assert.deepEqual(storage.keys(), everything, 'the fenced run deleted no object');
      const successor = log.checkpointStore('resumed', second.epoch);
      assert.deepEqual((await successor.completed()).map((c) => c.checkpointId), [2]);
      const own = await successor.nextCheckpointId();
      await storage.write(`checkpoints/resumed/chk-${own}/count%230/count.keyed`, new Uint8Array([own]));
      await successor.addCompleted(snapshot(own));
      assert.deepEqual(await discardJobCheckpoints({ jobId: 'resumed', store: successor, storage }), { checkpoints: 2, objects: 3 });
      assert.deepEqual(await successor.completed(), []);
      assert.deepEqual(storage.keys(), []);
      await Promise.all([first.close(), second.close()]);
    });

    it("a fenced run with no completed checkpoint leaves a newer run's in-progress snapshots alone", async () => {
      const storage = new InMemoryCheckpointStorage();
      const first = await log.open({ jobId: 'in-progress', owner: 'master-1' });
      const stale = log.checkpointStore('in-progress', first.epoch);
      await stale.nextCheckpointId();
      const second = await log.open({ jobId: 'in-progress', owner: 'master-2' });
      const id = await log.checkpointStore('in-progress', second.epoch).nextCheckpointId();
      await storage.write(`checkpoints/in-progress/chk-${id}/count%230/count.keyed`, new Uint8Array([1]));
      await assert.rejects(discardJobCheckpoints({ jobId: 'in-progress', store: stale, storage }), fenced);
      assert.deepEqual(storage.keys(), [`checkpoints/in-progress/chk-${id}/count%230/count.keyed`]);
      await Promise.all([first.close(), second.close()]);
    });
  });
}
