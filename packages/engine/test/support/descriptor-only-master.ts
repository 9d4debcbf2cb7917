import type { RegisterPartitionRequest, ShuffleDescriptor, ShuffleMaster } from '@weft/shuffle-api';

/**
 * A ShuffleMaster that only hands out descriptors (no data anywhere): for job-master tests whose scripted
 * executors run no real tasks. `registered` collects every registration, in order, when given.
 */
export function testingDescriptorOnlyMaster(registered?: RegisterPartitionRequest[]): ShuffleMaster {
  return {
    shuffleServiceId: 'testing-descriptors',
    start: async () => {},
    close: async () => {},
    registerJob: async () => {},
    unregisterJob: async () => {},
    registerPartitionWithProducer: async (request): Promise<ShuffleDescriptor> => {
      registered?.push(request);
      const { jobId, partition, producer } = request;
      return { shuffleServiceId: 'testing-descriptors', jobId, partition, producer, details: null };
    },
    releasePartitionExternally: async () => {},
    listPartitions: async () => [],
    [Symbol.asyncDispose]: async () => {},
  };
}
