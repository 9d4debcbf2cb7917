import { closedError, type ShuffleEnvironment, type ShuffleMaster, type ShuffleServiceFactory } from '@weft/shuffle-api';

/**
 * A shuffle service for jobs without exchanges (every operator chained): a master and environments that
 * accept a job but refuse every partition. Lets engine tests run jobs without a shuffle implementation,
 * which the engine package may not depend on. Records how it was used.
 */
export function testingNoShuffleFactory(): ShuffleServiceFactory & { readonly calls: string[] } {
  const calls: string[] = [];
  const refuse = (what: string) => async (): Promise<never> => {
    calls.push(what);
    throw closedError(`testing no-shuffle (${what})`);
  };
  const master: ShuffleMaster = {
    shuffleServiceId: 'testing-none',
    start: async () => void calls.push('start'),
    close: async () => void calls.push('close'),
    registerJob: async () => void calls.push('registerJob'),
    unregisterJob: async () => void calls.push('unregisterJob'),
    registerPartitionWithProducer: refuse('registerPartitionWithProducer'),
    releasePartitionExternally: async () => {},
    listPartitions: async () => [],
    [Symbol.asyncDispose]: async () => {},
  };
  const environment: ShuffleEnvironment = {
    shuffleServiceId: 'testing-none',
    createResultPartitionWriter: refuse('createResultPartitionWriter'),
    createInputGate: refuse('createInputGate'),
    releasePartitionsLocally: async () => {},
    close: async () => void calls.push('environment.close'),
    [Symbol.asyncDispose]: async () => {},
  };
  return { shuffleServiceId: 'testing-none', calls, createShuffleMaster: () => master, createShuffleEnvironment: () => environment };
}
