import { taskExecutorId } from '@weft/shuffle-api';
import { describeShuffleConformance } from '@weft/shuffle-api/testing';
import { createMemoryShuffleServiceFactory } from '@weft/shuffle-memory';

describeShuffleConformance({
  name: 'in-memory',
  partitionTypes: ['PIPELINED', 'PIPELINED_BOUNDED', 'BLOCKING', 'BLOCKING_PERSISTENT'],
  async createHarness() {
    const factory = createMemoryShuffleServiceFactory({ buffersPerPartition: 16 });
    const master = factory.createShuffleMaster();
    await master.start();
    const environment = factory.createShuffleEnvironment({ taskExecutorId: taskExecutorId('local') });
    return {
      master,
      producerEnvironment: environment,
      consumerEnvironment: environment,
      async close() {
        await environment.close();
        await master.close();
      },
    };
  },
});
