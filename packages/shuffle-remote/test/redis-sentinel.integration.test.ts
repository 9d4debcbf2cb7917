// Partition metadata and the server registry's connection through Redis Sentinel: the metadata store
// contract holds with every write acknowledged by a replica, and a write no replica holds fails with
// SHF_ERR_NOT_REPLICATED instead of counting.
import { strict as assert } from 'node:assert';
import { after, before, describe, it } from 'node:test';
import { isShuffleError } from '@weft/shuffle-api';
import { createMetadataStore, resolveRemoteShuffleOptions } from '@weft/shuffle-remote';
import { type RedisSentinelGroup, startRedisSentinelGroup } from '@weft/testkit';
import { RedisConnection } from '../src/coordinator/redis-connection.js';
import { metadataStoreContract } from './helpers/metadata-contract.js';

let group: RedisSentinelGroup;
before(async () => {
  group = await startRedisSentinelGroup({ replicas: 1, sentinels: 3 });
});
after(async () => {
  await group?.close();
});

const notReplicated = (operation: string) => (error: unknown) =>
  isShuffleError(error, 'SHF_ERR_NOT_REPLICATED') && !error.retryable && error.context['operation'] === operation && error.context['replicas'] === 0 && error.context['minReplicas'] === 1;

describe('Redis metadata store through Sentinel', () => {
  metadataStoreContract(async (label) => {
    const store = createMetadataStore(resolveRemoteShuffleOptions({ store: 'file:///tmp/unused', meta: { type: 'redis', url: group.url, keyPrefix: `sentinel-${label}:` } }));
    await store.start();
    return store;
  });
});

describe('writes no replica acknowledges', () => {
  it('fail with SHF_ERR_NOT_REPLICATED (not retried) in the metadata store and the registry connection, and count again once a replica is back', async () => {
    const url = `${group.url}?replicaTimeoutMs=100&replicaTries=2`;
    const store = createMetadataStore(resolveRemoteShuffleOptions({ store: 'file:///tmp/unused', meta: { type: 'redis', url, keyPrefix: 'unacked:' } }));
    const connection = new RedisConnection({ url, keyPrefix: 'unacked-registry:' });
    await store.start();
    await connection.open();
    try {
      await store.registerJob('before');
      const primary = await group.primary();
      const replica = group.nodes.find((n) => n !== primary && n.running)!;
      await replica.kill();
      try {
        await assert.rejects(store.registerJob('unacked'), notReplicated('registerJob'));
        await assert.rejects(connection.write('publishCommit', (r) => r.set(connection.key('x'), '1')), notReplicated('publishCommit'));
        assert.equal(await connection.call('read', (r) => r.get(connection.key('x'))), '1', 'a read needs no replica (and WAIT does not undo the write)');
      } finally {
        await replica.start();
      }
      await group.waitForReplicas(1);
      // online is not yet acknowledging: a replica that just synced may miss a 2 × 100 ms WAIT under load,
      // so the first write that counts again may take a few tries (each refused as SHF_ERR_NOT_REPLICATED)
      await untilReplicated(() => store.registerJob('after'));
      await untilReplicated(() => connection.write('publishCommit', (r) => r.set(connection.key('y'), '1')));
    } finally {
      await store.close();
      await connection.close();
    }
  });
});

/** Retries `write` while it is refused as not replicated, for up to 10 s; any other error, or the last refusal, is thrown. */
async function untilReplicated(write: () => Promise<unknown>): Promise<void> {
  const deadline = Date.now() + 10_000;
  for (;;) {
    try {
      await write();
      return;
    } catch (error) {
      if ((error as { code?: unknown }).code !== 'SHF_ERR_NOT_REPLICATED' || Date.now() > deadline) throw error;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }
}
