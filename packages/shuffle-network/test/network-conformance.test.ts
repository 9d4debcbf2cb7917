import { taskExecutorId } from '@weft/shuffle-api';
import { describeShuffleConformance } from '@weft/shuffle-api/testing';
import { createNetworkShuffleServiceFactory } from '@weft/shuffle-network';

const suite = { partitionTypes: ['PIPELINED', 'PIPELINED_BOUNDED'] as const, maxRecordBytes: 16 * 1024 * 1024, backpressureBytes: 4 * 1024 * 1024 };
const options = { buffersPerPartition: 16, maxBuffersPerPipelinedPartition: 32, maxRecordBytes: 16 * 1024 * 1024 };

// Producer and consumer are separate environments on separate loopback addresses (two "hosts"): every
// record crosses a TCP connection, and the master reaches the producer over its control connection.
describeShuffleConformance({
  name: 'network (in process, over TCP)',
  ...suite,
  async createHarness() {
    const producerSide = createNetworkShuffleServiceFactory({ ...options, host: '127.0.0.2' });
    const consumerSide = createNetworkShuffleServiceFactory({ ...options, host: '127.0.0.3' });
    const master = producerSide.createShuffleMaster();
    await master.start();
    const producerEnvironment = producerSide.createShuffleEnvironment({ taskExecutorId: taskExecutorId('conformance') });
    const consumerEnvironment = consumerSide.createShuffleEnvironment({ taskExecutorId: taskExecutorId('conformance-consumer') });
    await producerEnvironment.start();
    await consumerEnvironment.start();
    return {
      master,
      producerEnvironment,
      consumerEnvironment,
      async close() {
        await Promise.allSettled([consumerEnvironment.close(), producerEnvironment.close()]);
        await master.close();
      },
    };
  },
});

// The consumer is the producer's own environment: every record travels over the in-process connection
// (LocalSocket) with the same frames and credit.
describeShuffleConformance({
  name: 'network (one environment, over the in-process connection)',
  ...suite,
  async createHarness() {
    const factory = createNetworkShuffleServiceFactory({ ...options, host: '127.0.0.2' });
    const master = factory.createShuffleMaster();
    await master.start();
    const environment = factory.createShuffleEnvironment({ taskExecutorId: taskExecutorId('conformance') });
    await environment.start();
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
