export { createMemoryShuffleServiceFactory } from './memory-shuffle-service-factory.js';
export { MemoryShuffleMaster, MEMORY_SHUFFLE_SERVICE_ID } from './memory-shuffle-master.js';
export { MemoryShuffleEnvironment } from './memory-shuffle-environment.js';
export { DEFAULT_MEMORY_SHUFFLE_OPTIONS, type MemoryShuffleOptions, resolveMemoryShuffleOptions } from './memory-shuffle-options.js';
