import { after, before } from 'node:test';
import { describeShuffleConformance } from '@weft/shuffle-api/testing';
import { type RedisServer, type S3Server, startRedis, startS3Server } from '@weft/testkit';
import { clusterHarness, startServerCluster } from './helpers/server-cluster.js';
import { s3StoreOn } from './helpers/s3-store-on.js';

// Two shuffle servers + Redis + a real s3rver as the servers' S3 tier (write-through: pushes stream to
// S3 as they arrive; a partition commits only once its S3 copy is complete).
let redis: RedisServer;
let s3: S3Server;
let harnesses = 0;

before(async () => {
  [redis, s3] = await Promise.all([startRedis({ persistent: false }), startS3Server({ buckets: ['tier'] })]);
});

after(async () => {
  await Promise.allSettled([redis?.close(), s3?.stop()]);
});

describeShuffleConformance({
  name: 'shuffle server: 2 servers + Redis + S3 tier (write-through, s3rver)',
  partitionTypes: ['BLOCKING', 'BLOCKING_PERSISTENT'],
  async createHarness() {
    const store = s3StoreOn(s3, 'tier', `h${++harnesses}/`);
    const cluster = await startServerCluster({ redisUrl: redis.url, count: 2, server: { tier: { store, mode: 'write-through' } } });
    try {
      return await clusterHarness(cluster, { producerMemoryBytes: 2 * 1024 * 1024, maxBufferedPushBytes: 256 * 1024, tier: store }, () => cluster.close());
    } catch (error) {
      await cluster.close();
      throw error;
    }
  },
});
