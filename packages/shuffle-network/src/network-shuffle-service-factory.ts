import type { JsonValue, ShuffleEnvironmentContext, ShuffleMasterContext, ShuffleServiceFactory, ShuffleServiceReference } from '@weft/shuffle-api';
import { NetworkShuffleEnvironment } from './network-shuffle-environment.js';
import { NETWORK_SHUFFLE_SERVICE_ID, NetworkShuffleMaster } from './network-shuffle-master.js';
import { type NetworkShuffleOptions, resolveNetworkShuffleOptions } from './network-shuffle-options.js';
import { TaskExecutorDirectory } from './task-executor-directory.js';

/** The network shuffle service: its masters and environments, and the directory of where executors listen. */
export interface NetworkShuffleServiceFactory extends ShuffleServiceFactory {
  createShuffleMaster(context?: ShuffleMasterContext): NetworkShuffleMaster;
  createShuffleEnvironment(context: ShuffleEnvironmentContext): NetworkShuffleEnvironment;
  /** Where this factory's masters look up producers; environments of this factory add themselves on start(). */
  readonly directory: TaskExecutorDirectory;
}

/**
 * The network pipelined shuffle. Environments created here register their address in the factory's
 * directory when they start, so a master of the same factory finds them; an environment in another
 * process (built from `reference`) is told to a master with `registerTaskExecutor(environment.address)`
 * or through the `taskExecutors` option.
 */
export function createNetworkShuffleServiceFactory(options: NetworkShuffleOptions | JsonValue = {}): NetworkShuffleServiceFactory {
  const resolved = resolveNetworkShuffleOptions((options ?? {}) as NetworkShuffleOptions);
  const directory = new TaskExecutorDirectory(resolved.taskExecutors);
  const reference: ShuffleServiceReference = {
    module: '@weft/shuffle-network',
    exportName: 'createNetworkShuffleServiceFactory',
    options: { ...resolved },
  };
  return {
    shuffleServiceId: NETWORK_SHUFFLE_SERVICE_ID,
    reference,
    directory,
    createShuffleMaster: (context: ShuffleMasterContext = {}) => new NetworkShuffleMaster(directory, resolved, context.logger),
    createShuffleEnvironment: (context: ShuffleEnvironmentContext) =>
      new NetworkShuffleEnvironment({
        taskExecutorId: context.taskExecutorId,
        // a cluster task executor says where its host is reached (ShuffleEnvironmentContext.peerAddress)
        options: context.peerAddress === undefined ? resolved : resolveNetworkShuffleOptions({ ...resolved, host: context.peerAddress.listenHost, advertisedHost: context.peerAddress.advertisedHost }),
        directory,
        ...(context.logger === undefined ? {} : { logger: context.logger.child({ taskExecutorId: context.taskExecutorId }) }),
      }),
  };
}
