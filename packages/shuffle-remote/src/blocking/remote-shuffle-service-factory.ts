import type {
  JsonValue,
  ShuffleEnvironment,
  ShuffleEnvironmentContext,
  ShuffleMasterContext,
  ShuffleServiceFactory,
  ShuffleServiceReference,
} from '@weft/shuffle-api';
import { type RemoteShuffleOptions, type ResolvedRemoteShuffleOptions, optionsAsJson, resolveRemoteShuffleOptions } from '../config/remote-shuffle-options.js';
import { REMOTE_SHUFFLE_SERVICE_ID } from './descriptor-checks.js';
import { RemoteShuffleEnvironment } from './remote-shuffle-environment.js';
import { RemoteShuffleMaster } from './remote-shuffle-master.js';

/** The remote shuffle's factory: typed masters and environments, and a reference other processes rebuild it from. */
export interface RemoteShuffleServiceFactory extends ShuffleServiceFactory {
  readonly options: ResolvedRemoteShuffleOptions;
  readonly reference: ShuffleServiceReference;
  createShuffleMaster(context?: ShuffleMasterContext): RemoteShuffleMaster;
  createShuffleEnvironment(context: ShuffleEnvironmentContext): RemoteShuffleEnvironment & ShuffleEnvironment;
}

/**
 * Creates the remote (persisted, blocking) shuffle from options (RemoteShuffleOptions, plain JSON).
 * Options are validated here: a malformed one is SHF_ERR_INVALID_CONFIG naming it. Reaching the
 * stores is checked by `master.start()` (and `environment.start()` or first use).
 *
 * `reference` names this export with the resolved options, so a worker process rebuilds an equal factory.
 */
export function createRemoteShuffleServiceFactory(options: RemoteShuffleOptions | JsonValue = {}): RemoteShuffleServiceFactory {
  const resolved = resolveRemoteShuffleOptions(options);
  return {
    shuffleServiceId: REMOTE_SHUFFLE_SERVICE_ID,
    options: resolved,
    reference: {
      module: '@weft/shuffle-remote',
      exportName: 'createRemoteShuffleServiceFactory',
      options: optionsAsJson(resolved),
    },
    createShuffleMaster: (context) => new RemoteShuffleMaster(resolved, context),
    createShuffleEnvironment: (context) => new RemoteShuffleEnvironment(resolved, context),
  };
}
