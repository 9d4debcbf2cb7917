import { type ShuffleMaster, type ShuffleServiceFactory, taskExecutorId } from '@weft/shuffle-api';
import type { ConformanceHarness } from '@weft/shuffle-api/testing';

/**
 * A conformance harness over one factory: a started master, a producer and a consumer environment.
 * `onClose` runs last when the harness closes, and also when the master does not start.
 */
export async function factoryHarness(factory: ShuffleServiceFactory, onClose?: () => Promise<void>): Promise<ConformanceHarness> {
  const master = factory.createShuffleMaster();
  const producerEnvironment = factory.createShuffleEnvironment({ taskExecutorId: taskExecutorId('producer') });
  const consumerEnvironment = factory.createShuffleEnvironment({ taskExecutorId: taskExecutorId('consumer') });
  const extraMasters: ShuffleMaster[] = [];
  const closeAll = async (): Promise<void> => {
    try {
      await producerEnvironment.close();
      await consumerEnvironment.close();
      await master.close();
      for (const extra of extraMasters) await extra.close();
    } finally {
      await onClose?.();
    }
  };
  try {
    await master.start();
  } catch (error) {
    await closeAll().catch(() => undefined);
    throw error;
  }
  const createMaster = async (): Promise<ShuffleMaster> => {
    const extra = factory.createShuffleMaster();
    extraMasters.push(extra);
    await extra.start();
    return extra;
  };
  return { master, producerEnvironment, consumerEnvironment, createMaster, close: closeAll };
}
