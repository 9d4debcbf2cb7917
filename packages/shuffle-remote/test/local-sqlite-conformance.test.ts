import { join } from 'node:path';
import { describeShuffleConformance } from '@weft/shuffle-api/testing';
import { createRemoteShuffleServiceFactory } from '@weft/shuffle-remote';
import { createTempDir } from '@weft/testkit';
import { factoryHarness } from './helpers/factory-harness.js';

// local directory + embedded SQLite metadata: a fresh directory and database per test
describeShuffleConformance({
  name: 'remote: local directory + SQLite',
  partitionTypes: ['BLOCKING', 'BLOCKING_PERSISTENT'],
  async createHarness() {
    const dir = await createTempDir('weft-conformance-local-');
    const factory = createRemoteShuffleServiceFactory({
      store: `file://${join(dir.path, 'data')}`,
      meta: `sqlite://${join(dir.path, 'meta.db')}`,
      // small enough that the 24 MiB backpressure test spills several regions
      producerMemoryBytes: 4 * 1024 * 1024,
    });
    return factoryHarness(factory, () => dir.remove());
  },
});
