import { after, before } from 'node:test';
import { describeShuffleConformance } from '@weft/shuffle-api/testing';
import { type RedisServer, startRedis } from '@weft/testkit';
import { clusterHarness, startServerCluster } from './helpers/server-cluster.js';

// The server shuffle's conformance with every partition pushed to two servers (replicas 2): two
// in-process servers (one host, so the replicas fall back to different servers of one host) and a real
// redis-server whose commit index records the copies listPartitions and releases must see.
let redis: RedisServer;

before(async () => {
  redis = await startRedis({ persistent: false });
});

after(async () => {
  await redis?.close();
});

describeShuffleConformance({
  name: 'shuffle server: 2 servers + Redis, replicas 2',
  partitionTypes: ['BLOCKING', 'BLOCKING_PERSISTENT'],
  async createHarness() {
    const cluster = await startServerCluster({ redisUrl: redis.url, count: 2 });
    try {
      return await clusterHarness(cluster, { replicas: 2, producerMemoryBytes: 2 * 1024 * 1024, maxBufferedPushBytes: 256 * 1024 }, () => cluster.close());
    } catch (error) {
      await cluster.close();
      throw error;
    }
  },
});
