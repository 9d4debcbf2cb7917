import type {
  JsonValue,
  ShuffleEnvironmentContext,
  ShuffleMasterContext,
  ShuffleServiceFactory,
  ShuffleServiceReference,
} from '@weft/shuffle-api';
import { MemoryShuffleEnvironment } from './memory-shuffle-environment.js';
import { MEMORY_SHUFFLE_SERVICE_ID, MemoryShuffleMaster } from './memory-shuffle-master.js';
import { type MemoryShuffleOptions, resolveMemoryShuffleOptions } from './memory-shuffle-options.js';
import { MemoryShuffleRegistry } from './memory-shuffle-registry.js';

/**
 * The in-memory shuffle service. Masters and environments from one factory share one registry, so
 * they must live in one process; `reference` rebuilds an independent factory in another process (where
 * the engine runs pipelined regions whole).
 */
export function createMemoryShuffleServiceFactory(options: MemoryShuffleOptions | JsonValue = {}): ShuffleServiceFactory {
  const resolved = resolveMemoryShuffleOptions((options ?? {}) as MemoryShuffleOptions);
  const registry = new MemoryShuffleRegistry(resolved);
  const reference: ShuffleServiceReference = {
    module: '@weft/shuffle-memory',
    exportName: 'createMemoryShuffleServiceFactory',
    options: { ...resolved },
  };
  return {
    shuffleServiceId: MEMORY_SHUFFLE_SERVICE_ID,
    reference,
    createShuffleMaster: (context: ShuffleMasterContext = {}) => new MemoryShuffleMaster(registry, context.logger),
    createShuffleEnvironment: (context: ShuffleEnvironmentContext) =>
      new MemoryShuffleEnvironment(registry, context.logger?.child({ taskExecutorId: context.taskExecutorId })),
  };
}
