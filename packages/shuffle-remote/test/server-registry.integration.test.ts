import { strict as assert } from 'node:assert';
import { after, before, describe, it } from 'node:test';
import { ListObjectsV2Command } from '@aws-sdk/client-s3';
import { type ShuffleDescriptor, findShuffleError, isShuffleError } from '@weft/shuffle-api';
import { registerPartition, rejectionOf } from '@weft/shuffle-api/testing';
import type { S3StoreOptions } from '@weft/shuffle-remote';
import { ShuffleServerClient, resolveShuffleServerClientOptions } from '@weft/shuffle-remote/client';
import { type RedisServer, type S3Server, createTempDir, startRedis, startS3Server } from '@weft/testkit';
import { RedisServerRegistry } from '../src/coordinator/redis-server-registry.js';
import type { ServerRecord } from '../src/coordinator/server-record.js';
import { TEST_SECRET, clusterHarness, startServerCluster } from './helpers/server-cluster.js';
import { encodeObject, eventually, testDescriptor, text } from './helpers/server-objects.js';
import { startServerProcess } from './helpers/server-process.js';
import { readPartition, writePartition } from './helpers/server-process-pool.js';
import { createJobToken } from '../src/protocol/job-token.js';

let redis: RedisServer;
let s3: S3Server;

before(async () => {
  [redis, s3] = await Promise.all([startRedis({ persistent: false }), startS3Server({ buckets: ['tier'] })]);
});

after(async () => {
  await Promise.allSettled([redis?.close(), s3?.stop()]);
});

function registryOf(keyPrefix: string): RedisServerRegistry {
  return new RedisServerRegistry({ url: redis.url, keyPrefix });
}

function fakeServer(serverId: string, activeStreams: number): ServerRecord {
  return {
    serverId,
    url: 'http://127.0.0.1:9',
    capacityBytes: 10 ** 12,
    diskUsedBytes: 0,
    activeStreams,
    maxConcurrentStreams: 512,
    partitions: 0,
    tiered: false,
    startedAtMs: Date.now(),
    heartbeatAtMs: Date.now(),
  };
}

function tierStore(prefix: string): S3StoreOptions {
  return { type: 's3', bucket: 'tier', prefix, endpoint: s3.endpoint, region: s3.region, accessKeyId: s3.accessKeyId, secretAccessKey: s3.secretAccessKey };
}

describe('shuffle servers in a Redis registry', () => {
  it('registers each server with its address, free disk and load, refreshes it, and deregisters it on a graceful close', async () => {
    await using cluster = await startServerCluster({ redisUrl: redis.url, count: 2 });
    const registry = registryOf(cluster.keyPrefix);
    await registry.start();
    try {
      const live = await registry.listLive();
      assert.deepEqual(live.map((s) => s.url).sort(), cluster.servers.map((s) => s.url).sort());
      for (const record of live) {
        assert.ok(record.capacityBytes > 0, 'free disk is published');
        assert.equal(record.activeStreams, 0);
        assert.equal(record.maxConcurrentStreams, 512);
        assert.ok(record.expiresInMs > 0 && record.expiresInMs <= 1_000, `the time its heartbeat has left, from Redis: ${record.expiresInMs}`);
      }
      const first = live.find((s) => s.serverId === cluster.servers[0]!.serverId)!;
      await eventually(async () => ((await registry.get(first.serverId))?.heartbeatAtMs ?? 0) > first.heartbeatAtMs, 'a newer heartbeat');
      await cluster.servers[0]!.close();
      assert.deepEqual((await registry.listLive()).map((s) => s.serverId), [cluster.servers[1]!.serverId]);
    } finally {
      await registry.close();
    }
  });

  it('places partitions load-aware, and gives a server whose heartbeat expired no new partitions (default refresh interval)', async () => {
    await using cluster = await startServerCluster({ redisUrl: redis.url, count: 1 });
    const registry = registryOf(cluster.keyPrefix);
    await registry.start();
    // the master reuses its list of servers for placementRefreshMs (1 s by default): an expired server must be skipped anyway
    const master = cluster.factory({ placementRefreshMs: 1_000 }).createShuffleMaster();
    await master.start();
    try {
      await registry.heartbeat(fakeServer('busy', 500), 60_000);
      await registry.heartbeat(fakeServer('fading', 0), 1_000);
      const place = async (n: number, tag: string): Promise<Map<string, number>> => {
        const counts = new Map<string, number>();
        for (let i = 0; i < n; i++) {
          const d = await registerPartition(master, { jobId: 'placement', resultId: tag, index: i, type: 'BLOCKING', subpartitions: 1 });
          const serverId = (d.details as { serverId: string }).serverId;
          counts.set(serverId, (counts.get(serverId) ?? 0) + 1);
        }
        return counts;
      };
      const whileLive = await place(20, 'live');
      assert.equal(whileLive.get('busy'), undefined, 'a server near its stream limit gets nothing while idle ones have room');
      assert.ok((whileLive.get('fading') ?? 0) > 0, 'an idle live server gets partitions');
      await eventually(async () => !(await registry.listLive()).some((s) => s.serverId === 'fading'), "the fading server's heartbeat to expire");
      const afterExpiry = await place(20, 'expired');
      assert.equal(afterExpiry.get('fading'), undefined, 'a server whose heartbeat expired must get no new partitions');
      assert.equal(afterExpiry.get(cluster.servers[0]!.serverId), 20);
    } finally {
      await master.close();
      await registry.close();
    }
  });

  it('lets the first attempt to commit a partition win across servers, through the commit index', async () => {
    await using cluster = await startServerCluster({ redisUrl: redis.url, count: 2 });
    const client = new ShuffleServerClient(resolveShuffleServerClientOptions({ servers: cluster.servers.map((s) => s.url) }));
    try {
      const token = createJobToken(Buffer.from(TEST_SECRET), 'race');
      const at = (server: number, attempt: number) => ({ url: cluster.servers[server]!.url, token, jobId: 'race', partitionId: 'r#0', attempt });
      const object = await encodeObject([[[text('x')]]]);
      await client.push({ ...at(0, 0), body: [object.bytes], length: object.bytes.length });
      await client.push({ ...at(1, 1), body: [object.bytes], length: object.bytes.length });
      await client.commit(at(1, 1), testDescriptor({ jobId: 'race', partitionId: 'r#0', attempt: 1, subpartitions: 1, token }), object.subpartitionBytes);
      const lost = await rejectionOf(client.commit(at(0, 0), testDescriptor({ jobId: 'race', partitionId: 'r#0', attempt: 0, subpartitions: 1, token }), object.subpartitionBytes));
      assert.ok(isShuffleError(lost, 'SHF_ERR_COMMIT_CONFLICT'), String(lost));
      assert.match(lost.message, /attempt 1/);
      assert.deepEqual(await client.list(cluster.servers[0]!.url, token, 'race'), []);
    } finally {
      await client.close();
    }
  });

  it("reports a crashed server's disk-only partitions as PARTITION_NOT_FOUND and still reads the other server's", async () => {
    const dirs = [await createTempDir('weft-ss-crash-'), await createTempDir('weft-ss-crash-')];
    const keyPrefix = `weft-test-crash-${process.pid}:`;
    const common = { secret: TEST_SECRET, redis: redis.url, redisKeyPrefix: keyPrefix, heartbeatIntervalMs: 100, heartbeatTtlMs: 500 };
    await using a = await startServerProcess({ ...common, dir: dirs[0]!.path });
    await using b = await startServerProcess({ ...common, dir: dirs[1]!.path });
    await using cluster = await startServerCluster({ redisUrl: redis.url, count: 0 });
    const factory = cluster.factory({ redisKeyPrefix: keyPrefix, retryAttempts: 2 });
    const h = await clusterHarness({ ...cluster, factory: () => factory });
    try {
      const descriptors: ShuffleDescriptor[] = [];
      for (let i = 0; i < 4; i++) descriptors.push(await registerPartition(h.master, { jobId: 'crash', resultId: 'c', index: i, type: 'BLOCKING', subpartitions: 2 }));
      const on = (server: { serverId: string }) => descriptors.filter((d) => (d.details as { serverId: string }).serverId === server.serverId);
      assert.ok(on(a).length > 0 && on(b).length > 0, 'both servers hold partitions');
      for (const d of descriptors) await writePartition(factory, d, 50);
      await a.kill('SIGKILL');
      const registry = registryOf(keyPrefix);
      await registry.start();
      await eventually(async () => !(await registry.listLive()).some((s) => s.serverId === a.serverId), "the crashed server's heartbeat to expire");
      await registry.close();
      for (const d of on(b)) assert.equal((await readPartition(factory, d)).length, 50);
      for (const d of on(a)) {
        const error = await rejectionOf(readPartition(factory, d));
        const notFound = findShuffleError(error, 'SHF_ERR_PARTITION_NOT_FOUND');
        assert.ok(notFound, `expected PARTITION_NOT_FOUND, got ${String(error)}`);
        assert.equal(notFound.partitionId, d.partition.partitionId);
      }
      const listed = (await h.master.listPartitions(descriptors[0]!.jobId)).map((p) => p.descriptor.partition.partitionId).sort();
      assert.deepEqual(listed, on(b).map((d) => d.partition.partitionId).sort(), 'a crashed server\'s disk-only partitions are not listed');
    } finally {
      await h.close();
      await Promise.all(dirs.map((d) => d.remove()));
    }
  });

  it("reads a vanished server's partitions from the S3 tier (on-commit), lists them, and releases them there too", async () => {
    const dirs = [await createTempDir('weft-ss-tier-'), await createTempDir('weft-ss-tier-')];
    const keyPrefix = `weft-test-tier-${process.pid}:`;
    const store = tierStore(`vanish-${process.pid}/`);
    const common = { secret: TEST_SECRET, redis: redis.url, redisKeyPrefix: keyPrefix, heartbeatIntervalMs: 100, heartbeatTtlMs: 500, tier: { store, mode: 'on-commit' as const } };
    await using a = await startServerProcess({ ...common, dir: dirs[0]!.path });
    await using b = await startServerProcess({ ...common, dir: dirs[1]!.path });
    await using cluster = await startServerCluster({ redisUrl: redis.url, count: 0 });
    const factory = cluster.factory({ redisKeyPrefix: keyPrefix, retryAttempts: 2, tier: store });
    const h = await clusterHarness({ ...cluster, factory: () => factory });
    try {
      const descriptors: ShuffleDescriptor[] = [];
      for (let i = 0; i < 4; i++) descriptors.push(await registerPartition(h.master, { jobId: 'tiered', resultId: 't', index: i, type: 'BLOCKING', subpartitions: 2 }));
      for (const d of descriptors) await writePartition(factory, d, 40);
      const onA = descriptors.filter((d) => (d.details as { serverId: string }).serverId === a.serverId);
      assert.ok(onA.length > 0);
      await a.kill('SIGKILL');
      const registry = registryOf(keyPrefix);
      await registry.start();
      await eventually(async () => !(await registry.listLive()).some((s) => s.serverId === a.serverId), "the vanished server's heartbeat to expire");
      await registry.close();
      for (const d of descriptors) assert.deepEqual(await readPartition(factory, d), Array.from({ length: 40 }, (_, i) => i), `partition ${d.partition.partitionId}`);
      const listed = await h.master.listPartitions(descriptors[0]!.jobId);
      assert.equal(listed.length, 4, 'tiered partitions of a vanished server are still listed');
      const objects = async (): Promise<number> =>
        (await s3.client().send(new ListObjectsV2Command({ Bucket: 'tier', Prefix: store.prefix }))).KeyCount ?? 0;
      assert.equal(await objects(), 4);
      await h.master.releasePartitionExternally(onA[0]!);
      assert.equal(await objects(), 3, "releasing a vanished server's partition deletes its S3 copy");
      assert.ok(findShuffleError(await rejectionOf(readPartition(factory, onA[0]!)), 'SHF_ERR_PARTITION_NOT_FOUND'));
      await h.master.unregisterJob(descriptors[0]!.jobId);
      assert.equal(await objects(), 0, 'unregistering the job deletes every S3 copy');
    } finally {
      await h.close();
      await Promise.all(dirs.map((d) => d.remove()));
    }
  });
});
