import type { ShuffleServiceFactory } from '@weft/shuffle-api';
import { REMOTE_SHUFFLE_SERVICE_ID, type RemoteShuffleServiceFactory } from '@weft/shuffle-remote';
import { type FaultActions, FaultHarness } from './fault-harness.js';
import type { FaultSpec } from './fault-spec.js';
import { restartRedis } from './redis-restart.js';
import { remotePartitionDamage, type ShuffleServerPoolRef, shuffleServerFaultActions } from './remote-fault-actions.js';
import { SHUFFLE_SERVER_SERVICE_ID } from '@weft/shuffle-remote/client';

export interface CreateFaultHarnessRequest {
  readonly spec: FaultSpec;
  /** The job's blocking shuffle: partitions are damaged through it when it is the persisted one. */
  readonly blocking: ShuffleServiceFactory;
  /** How to restart the metadata store; default: `restartRedis` on the blocking shuffle's Redis, if it has one. */
  readonly restartMetadataStore?: () => Promise<string>;
}

function isRemote(factory: ShuffleServiceFactory): factory is RemoteShuffleServiceFactory {
  return factory.shuffleServiceId === REMOTE_SHUFFLE_SERVICE_ID && typeof (factory as Partial<RemoteShuffleServiceFactory>).options === 'object';
}

/** The registry of a shuffle-server pool factory (`--shuffle-servers`), from its shareable options. */
function shuffleServerPool(factory: ShuffleServiceFactory): ShuffleServerPoolRef | undefined {
  if (factory.shuffleServiceId !== SHUFFLE_SERVER_SERVICE_ID) return undefined;
  const options = (factory as { reference?: { options?: unknown } }).reference?.options as { redis?: unknown; redisKeyPrefix?: unknown } | undefined;
  if (typeof options?.redis !== 'string') return undefined;
  return { redis: options.redis, ...(typeof options.redisKeyPrefix === 'string' ? { redisKeyPrefix: options.redisKeyPrefix } : {}) };
}

/** A FaultHarness wired to the job's blocking shuffle, as `weft run --inject-faults` uses it. */
const isSentinelUrl = (url: string): boolean => url.startsWith('redis+sentinel://');

export function createFaultHarness(request: CreateFaultHarnessRequest): FaultHarness {
  const actions: FaultActions = {};
  const { blocking } = request;
  const pool = shuffleServerPool(blocking);
  if (pool !== undefined) {
    Object.assign(actions, shuffleServerFaultActions(pool));
    // restart-redis restarts one server; behind Sentinel, kill the primary from outside instead
    if (request.restartMetadataStore !== undefined) actions.restartMetadataStore = request.restartMetadataStore;
    else if (!isSentinelUrl(pool.redis)) actions.restartMetadataStore = () => restartRedis(pool.redis);
  } else if (isRemote(blocking)) {
    Object.assign(actions, remotePartitionDamage(blocking));
    const meta = blocking.options.meta;
    if (request.restartMetadataStore !== undefined) actions.restartMetadataStore = request.restartMetadataStore;
    else if (meta.type === 'redis' && !isSentinelUrl(meta.url)) actions.restartMetadataStore = () => restartRedis(meta.url);
  } else if (request.restartMetadataStore !== undefined) {
    actions.restartMetadataStore = request.restartMetadataStore;
  }
  return new FaultHarness(request.spec, actions);
}
