import { join } from 'node:path';
import { taskExecutorId } from '@weft/shuffle-api';
import { describeShuffleConformance } from '@weft/shuffle-api/testing';
import { createRemoteShuffleServiceFactory } from '@weft/shuffle-remote';
import { createTempDir } from '@weft/testkit';

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
    const master = factory.createShuffleMaster();
    const producerEnvironment = factory.createShuffleEnvironment({ taskExecutorId: taskExecutorId('producer') });
    const consumerEnvironment = factory.createShuffleEnvironment({ taskExecutorId: taskExecutorId('consumer') });
    try {
      await master.start();
    } catch (error) {
      await dir.remove();
      throw error;
    }
    return {
      master,
      producerEnvironment,
      consumerEnvironment,
      async close() {
        try {
          await producerEnvironment.close();
          await consumerEnvironment.close();
          await master.close();
        } finally {
          await dir.remove();
        }
      },
    };
  },
});
