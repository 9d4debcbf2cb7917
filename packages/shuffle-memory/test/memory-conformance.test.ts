import { taskExecutorId } from '@weft/shuffle-api';
import { describeShuffleConformance } from '@weft/shuffle-api/testing';
import { createMemoryShuffleServiceFactory } from '@weft/shuffle-memory';

describeShuffleConformance({
  name: 'in-memory',
  partitionTypes: ['PIPELINED', 'PIPELINED_BOUNDED', 'BLOCKING', 'BLOCKING_PERSISTENT'],
  // not the default, so that a writer ignoring its configured limit fails the oversized-record case
  maxRecordBytes: 16 * 1024 * 1024,
  async createHarness() {
    const factory = createMemoryShuffleServiceFactory({ buffersPerPartition: 16, maxRecordBytes: 16 * 1024 * 1024 });
    const master = factory.createShuffleMaster();
    await master.start();
    const environment = factory.createShuffleEnvironment({ taskExecutorId: taskExecutorId('local') });
    return {
      master,
      producerEnvironment: environment,
      consumerEnvironment: environment,
      // a second master of the same factory shares its registry, as a new job master shares the backends
      async createMaster() {
        const second = factory.createShuffleMaster();
        await second.start();
        return second;
      },
      async close() {
        await environment.close();
        await master.close();
      },
    };
  },
});
