import { after, before } from 'node:test';
import { describeShuffleConformance } from '@weft/shuffle-api/testing';
import { createRemoteShuffleServiceFactory } from '@weft/shuffle-remote';
import { type RedisServer, type S3Server, startRedis, startS3Server } from '@weft/testkit';
import { factoryHarness } from './helpers/factory-harness.js';
import { s3StoreOn } from './helpers/s3-store-on.js';

// S3 (a real s3rver) + Redis (a real redis-server), started once for the file; every harness gets its
// own key prefix in the bucket and in Redis.
let s3: S3Server;
let redis: RedisServer;
let harnesses = 0;

before(async () => {
  [s3, redis] = await Promise.all([startS3Server({ buckets: ['conformance'] }), startRedis()]);
});

after(async () => {
  await Promise.allSettled([s3?.stop(), redis?.close()]);
});

describeShuffleConformance({
  name: 'remote: S3 (s3rver) + Redis',
  partitionTypes: ['BLOCKING', 'BLOCKING_PERSISTENT'],
  async createHarness() {
    const prefix = `h${++harnesses}`;
    const factory = createRemoteShuffleServiceFactory({
      store: s3StoreOn(s3, 'conformance', `${prefix}/`),
      meta: { type: 'redis', url: redis.url, keyPrefix: `weft-test:${prefix}:` },
      // the smallest budget S3's 5 MiB parts allow, so the 24 MiB backpressure test spills several regions
      producerMemoryBytes: 11 * 1024 * 1024 + 512 * 1024,
    });
    return factoryHarness(factory);
  },
});
