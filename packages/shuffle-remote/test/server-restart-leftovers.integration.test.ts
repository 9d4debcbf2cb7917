// Review of issue 10 ("storage is freed as the job goes"): a shuffle server SIGKILLed mid-job and started
// again on its directory only after the job ended. The job's releases and its unregisterJob could not reach
// it (it was down), so what it had committed for that job must go once it is back — by its start-up, a
// sweep, or the master. Today nothing removes it: the finished job's partitions stay on its disk for good.
import { strict as assert } from 'node:assert';
import { readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { JobId, ShuffleDescriptor } from '@weft/shuffle-api';
import { emitAll, makeRecord, registerPartition } from '@weft/shuffle-api/testing';
import { type ShuffleServerServiceFactory, createShuffleServerServiceFactory } from '@weft/shuffle-remote/client';
import { type RedisServer, type TempDir, createTempDir, startRedis } from '@weft/testkit';
import { TEST_SECRET } from './helpers/server-cluster.js';
import { eventually } from './helpers/server-objects.js';
import { type ServerProcess, startServerProcess } from './helpers/server-process.js';

let redis: RedisServer;

before(async () => {
  redis = await startRedis({ persistent: false });
});

after(async () => {
  await redis?.close();
});

async function writePartition(factory: ShuffleServerServiceFactory, descriptor: ShuffleDescriptor, records: number): Promise<void> {
  const environment = factory.createShuffleEnvironment({ taskExecutorId: 'producer' as never });
  try {
    const writer = await environment.createResultPartitionWriter({ descriptor });
    await emitAll(writer, Array.from({ length: records }, (_, seq) => ({ subpartition: seq % 2, record: makeRecord(descriptor.partition.partitionIndex, seq % 2, seq, 100) })));
    await writer.finish();
    await writer.close();
  } finally {
    await environment.close();
  }
}

/** The job's files under a server's directory (objects and commit records). */
async function jobFiles(dir: string, jobId: string): Promise<string[]> {
  const out: string[] = [];
  for (const sub of ['objects', 'commits']) {
    const entries = await readdir(join(dir, sub, jobId), { recursive: true }).catch(() => [] as string[]);
    for (const e of entries) if (e.includes('.')) out.push(join(sub, jobId, e));
  }
  return out;
}

describe('a shuffle server that was down when its job ended', () => {
  it("drops the finished job's committed partitions once it is back", async () => {
    const keyPrefix = `weft-test-leftovers-${process.pid}:`;
    const dirs: TempDir[] = [await createTempDir('weft-ss-leftovers-'), await createTempDir('weft-ss-leftovers-')];
    const servers: ServerProcess[] = [];
    const start = async (dir: TempDir): Promise<ServerProcess> => {
      const s = await startServerProcess({ dir: dir.path, port: 0, secret: TEST_SECRET, redis: redis.url, redisKeyPrefix: keyPrefix, heartbeatIntervalMs: 100, heartbeatTtlMs: 1_000 });
      servers.push(s);
      return s;
    };
    try {
      const a = await start(dirs[0]!);
      await start(dirs[1]!);
      const factory = createShuffleServerServiceFactory({ redis: redis.url, redisKeyPrefix: keyPrefix, secret: TEST_SECRET, placementRefreshMs: 0, retryAttempts: 2, retryInitialDelayMs: 5, retryMaxDelayMs: 20 });
      const master = factory.createShuffleMaster();
      await master.start();
      const jobId = 'leftover-job';
      try {
        await master.registerJob({ jobId: jobId as JobId });
        const descriptors: ShuffleDescriptor[] = [];
        for (let i = 0; i < 6; i++) descriptors.push(await registerPartition(master, { jobId, resultId: 'r', index: i, type: 'BLOCKING', subpartitions: 2 }));
        for (const d of descriptors) await writePartition(factory, d, 40);
        assert.ok((await jobFiles(dirs[0]!.path, jobId)).length > 0, 'server A holds some of the job');
        await a.kill('SIGKILL');
        // the job ends while A is down: its releases and unregisterJob cannot reach A
        for (const d of descriptors) await master.releasePartitionExternally(d).catch(() => undefined);
        await master.unregisterJob(jobId as JobId);
      } finally {
        await master.close();
      }
      // A comes back on its directory (same id) after the job is gone
      await start(dirs[0]!);
      await eventually(async () => (await jobFiles(dirs[0]!.path, jobId)).length === 0, `server A to drop the finished job's files: ${(await jobFiles(dirs[0]!.path, jobId)).join(', ')}`, 15_000);
    } finally {
      for (const s of servers) await s.kill();
      await Promise.all(dirs.map((d) => d.remove()));
    }
  });
});
