import type { JsonValue, ShuffleEnvironmentContext, ShuffleMasterContext, ShuffleServiceFactory, ShuffleServiceReference } from '@weft/shuffle-api';
import { type ShuffleServerClientOptions, resolveShuffleServerClientOptions } from './client-options.js';
import { SHUFFLE_SERVER_SERVICE_ID } from './server-descriptor.js';
import { ServerShuffleEnvironment } from './server-shuffle-environment.js';
import { type ReplicationReport, ServerShuffleMaster } from './server-shuffle-master.js';

export interface ShuffleServerServiceFactory extends ShuffleServiceFactory {
  readonly reference: ShuffleServiceReference;
  createShuffleMaster(context?: ShuffleMasterContext): ServerShuffleMaster;
  createShuffleEnvironment(context: ShuffleEnvironmentContext): ServerShuffleEnvironment;
  /** Copies per partition of the latest master this factory made (undefined before one): what `weft run` reports. */
  replication(): ReplicationReport | undefined;
}

/**
 * The shuffle-server shuffle (`shuffleServiceId` 'shuffle-server'): partitions pushed to and fetched
 * from standalone shuffle servers (`weft shuffle-server`). Options are checked here (SHF_ERR_INVALID_CONFIG
 * naming the option); `reference` rebuilds the factory in a worker process — without `secret`, which
 * only a master needs and reads from `secretFile` or the environment there.
 */
export function createShuffleServerServiceFactory(options: ShuffleServerClientOptions = {}): ShuffleServerServiceFactory {
  const resolved = resolveShuffleServerClientOptions(options);
  const { secret: _secret, ...shareable } = options;
  let latest: ServerShuffleMaster | undefined;
  return {
    shuffleServiceId: SHUFFLE_SERVER_SERVICE_ID,
    reference: {
      module: '@weft/shuffle-remote/client',
      exportName: 'createShuffleServerServiceFactory',
      options: JSON.parse(JSON.stringify(shareable)) as JsonValue,
    },
    createShuffleMaster: (context) => (latest = new ServerShuffleMaster(resolved, context)),
    replication: () => latest?.replication,
    createShuffleEnvironment: (context) => new ServerShuffleEnvironment(resolved, context),
  };
}
