export { NetworkShuffleEnvironment, type NetworkShuffleEnvironmentOptions } from './network-shuffle-environment.js';
export { NETWORK_SHUFFLE_SERVICE_ID, NetworkShuffleMaster } from './network-shuffle-master.js';
export {
  DEFAULT_NETWORK_SHUFFLE_OPTIONS,
  type NetworkShuffleOptions,
  type ResolvedNetworkShuffleOptions,
  resolveNetworkShuffleOptions,
} from './network-shuffle-options.js';
export { createNetworkShuffleServiceFactory, type NetworkShuffleServiceFactory } from './network-shuffle-service-factory.js';
export { type TaskExecutorAddress, TaskExecutorDirectory } from './task-executor-directory.js';
export type { NetworkDescriptorDetails } from './network-descriptor-details.js';
