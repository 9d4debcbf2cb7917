import { after, before, describe } from 'node:test';
import { createMetadataStore, resolveRemoteShuffleOptions } from '@weft/shuffle-remote';
import { type RedisServer, startRedis } from '@weft/testkit';
import { metadataStoreContract, metadataStoreLifecycleContract } from './helpers/metadata-contract.js';

let redis: RedisServer;
before(async () => {
  redis = await startRedis();
});
after(async () => {
  await redis?.close();
});

describe('Redis metadata store', () => {
  metadataStoreContract(async (label) => {
    const store = createMetadataStore(
      resolveRemoteShuffleOptions({ store: 'file:///tmp/unused', meta: { type: 'redis', url: redis.url, keyPrefix: `${label}:` } }),
    );
    await store.start();
    return store;
  });
  metadataStoreLifecycleContract((label, logger) =>
    createMetadataStore(resolveRemoteShuffleOptions({ store: 'file:///tmp/unused', meta: { type: 'redis', url: redis.url, keyPrefix: `${label}:` } }), logger),
  );
});
