import { join } from 'node:path';
import { after, before, describe } from 'node:test';
import { createMetadataStore, resolveRemoteShuffleOptions } from '@weft/shuffle-remote';
import { type TempDir, createTempDir } from '@weft/testkit';
import { metadataStoreContract, metadataStoreLifecycleContract } from './helpers/metadata-contract.js';

let dir: TempDir;
before(async () => {
  dir = await createTempDir('weft-sqlite-contract-');
});
after(async () => {
  await dir?.remove();
});

describe('SQLite metadata store', () => {
  metadataStoreContract(async (label) => {
    const store = createMetadataStore(resolveRemoteShuffleOptions({ store: `file://${dir.path}/data`, meta: `sqlite://${join(dir.path, `${label}.db`)}` }));
    await store.start();
    return store;
  });
  metadataStoreLifecycleContract((label, logger) =>
    createMetadataStore(resolveRemoteShuffleOptions({ store: `file://${dir.path}/data`, meta: `sqlite://${join(dir.path, `${label}.db`)}` }), logger),
  );
});
