import { after, before } from 'node:test';
import { describeShuffleConformance } from '@weft/shuffle-api/testing';
import { type RedisServer, startRedis } from '@weft/testkit';
import { clusterHarness, startServerCluster } from './helpers/server-cluster.js';

// Two shuffle servers (in-process, each with its own directory) and a real redis-server: the registry,
// load-aware placement across both, and the commit index that listPartitions reads.
let redis: RedisServer;

before(async () => {
  redis = await startRedis({ persistent: false });
});

after(async () => {
  await redis?.close();
});

describeShuffleConformance({
  name: 'shuffle server: 2 servers + Redis',
  partitionTypes: ['BLOCKING', 'BLOCKING_PERSISTENT'],
  async createHarness() {
    const cluster = await startServerCluster({ redisUrl: redis.url, count: 2 });
    try {
      // a small budget and push buffer, so the 24 MiB backpressure test streams and spills many regions
      return await clusterHarness(cluster, { producerMemoryBytes: 2 * 1024 * 1024, maxBufferedPushBytes: 256 * 1024 }, () => cluster.close());
    } catch (error) {
      await cluster.close();
      throw error;
    }
  },
});
