import { strict as assert } from 'node:assert';
import { describe, it } from 'node:test';
import { isShuffleError } from '@weft/shuffle-api';
import { LocalBlobStore } from '@weft/shuffle-remote';
import { createTempDir } from '@weft/testkit';

const KEY = 'job/edge%230/map%230%400.w1.wsm';

async function startedStore(dir: string): Promise<LocalBlobStore> {
  const store = new LocalBlobStore({ dir });
  await store.start();
  return store;
}

describe('local blob store', () => {
  it('refuses to create an object that already exists with INVALID_ARGUMENT naming the key, not retryable, and leaves the object as it was', async () => {
    await using dir = await createTempDir('weft-local-blob-');
    const store = await startedStore(dir.path);
    try {
      const first = await store.createWriter(KEY);
      await first.append([new Uint8Array([1, 2, 3])]);
      await first.complete();
      const error = await store.createWriter(KEY).then(
        () => undefined,
        (e: unknown) => e,
      );
      assert.ok(isShuffleError(error, 'SHF_ERR_INVALID_ARGUMENT'), `expected INVALID_ARGUMENT, got ${String(error)}`);
      assert.equal(error.retryable, false);
      assert.equal(error.context['field'], 'key');
      assert.equal(error.context['blobKey'], KEY);
      assert.match(error.message, /already exists/);
      const reader = await store.openReader(KEY);
      try {
        assert.deepEqual([...(await reader.read(0, 3))], [1, 2, 3]);
      } finally {
        await reader.close();
      }
    } finally {
      await store.close();
    }
  });

  it('tells whether a delete found an object (deleteExisting), and deleting nothing is fine', async () => {
    await using dir = await createTempDir('weft-local-blob-');
    const store = await startedStore(dir.path);
    try {
      const writer = await store.createWriter(KEY);
      await writer.append([new Uint8Array(10)]);
      await writer.complete();
      assert.equal(await store.deleteExisting(KEY), true);
      assert.deepEqual(await store.listKeys(), []);
      assert.equal(await store.deleteExisting(KEY), false);
      await store.delete(KEY);
    } finally {
      await store.close();
    }
  });
});
