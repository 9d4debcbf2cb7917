// What `weft run` runs a job against, built from its settings: the pipelined and the blocking shuffle, the
// S3 file system of s3:// inputs and outputs, and the job event log. Each implementation is imported when
// it is needed, not when `weft` starts; a config error it throws becomes a usage error naming the setting.
import type { ExternalFileSystem, JobEventLog } from '@weft/engine';
import type { ShuffleServiceFactory } from '@weft/shuffle-api';
import type { ShuffleServerServiceFactory } from '@weft/shuffle-remote/client';
import { usageError } from '../parse-command-args.js';
import { isShuffleConfigError, type Setting, settingOf, settingProblem } from './run-settings.js';

// The shuffle implementations are imported when a job runs (after its workers were forked, so their
// start-up overlaps this import), not when `weft` starts.
export const PIPELINED_MODULE = '@weft/shuffle-memory';
export const NETWORK_MODULE = '@weft/shuffle-network';
export const BLOCKING_MODULE = '@weft/shuffle-remote';
export const SERVER_MODULE = '@weft/shuffle-remote/client';

/** The pipelined shuffle: in memory (a region whole in one executor), or over TCP between workers. */
export async function pipelinedShuffle(kind: 'memory' | 'network', reconnectTimeoutMs: number | undefined, flushTimeoutMs: number | undefined): Promise<ShuffleServiceFactory> {
  // --buffer-timeout: how old a partly filled buffer gets before it is sent
  const flush = flushTimeoutMs === undefined ? {} : { flushTimeoutMs };
  if (kind === 'network') {
    const { createNetworkShuffleServiceFactory } = await import('@weft/shuffle-network');
    // an approximate job: a channel whose producer went away waits this long for its new attempt (--approximate-reconnect-timeout)
    return createNetworkShuffleServiceFactory({ ...flush, ...(reconnectTimeoutMs === undefined ? {} : { reconnectTimeoutMs }) });
  }
  const { createMemoryShuffleServiceFactory } = await import('@weft/shuffle-memory');
  return createMemoryShuffleServiceFactory(flush);
}

/** The blocking shuffle from --store / --meta (or WEFT_STORE / WEFT_META); defaults under ./.weft/. */
export async function blockingShuffle(store: Setting, meta: Setting): Promise<ShuffleServiceFactory> {
  const { createRemoteShuffleServiceFactory } = await import('@weft/shuffle-remote');
  try {
    return createRemoteShuffleServiceFactory({ store: store.value, meta: meta.value });
  } catch (error) {
    if (!isShuffleConfigError(error)) throw error;
    throw usageError('run', settingProblem(settingOf(error, { meta, store }) ?? 'the blocking shuffle', error), error);
  }
}

/**
 * The blocking shuffle of a `weft shuffle-server` pool found in the Redis registry at `registry`; `tier`
 * is the servers' S3 tier, if they have one.
 */
export async function serverShuffle(registry: Setting, tier: Setting | undefined, replicas: number | undefined): Promise<ShuffleServerServiceFactory> {
  const { createShuffleServerServiceFactory } = await import('@weft/shuffle-remote/client');
  try {
    return createShuffleServerServiceFactory({ redis: registry.value, ...(tier === undefined ? {} : { tier: tier.value }), ...(replicas === undefined ? {} : { replicas }) });
  } catch (error) {
    if (!isShuffleConfigError(error)) throw error;
    const secret = { value: '', source: 'WEFT_SHUFFLE_SECRET' };
    throw usageError('run', settingProblem(settingOf(error, { tier, secret, redis: registry }) ?? registry.source, error), error);
  }
}

/**
 * Where `s3://bucket/key` job inputs and outputs live: the S3 file system, with the same endpoint and
 * credentials as an S3 store (the AWS variables, read when first used; worker processes read their own).
 */
export async function s3FileSystem(): Promise<ExternalFileSystem> {
  const { createS3FileSystem } = await import('@weft/shuffle-remote');
  return createS3FileSystem();
}

/** The job event log in the store named by `where` (--meta, or the shuffle servers' Redis). */
export async function openEventLog(where: Setting): Promise<JobEventLog> {
  const { createJobEventLog } = await import('@weft/job-store');
  try {
    return await createJobEventLog(where.value, { setting: where.source });
  } catch (error) {
    if (!isShuffleConfigError(error)) throw error;
    throw usageError('run', settingProblem(where.source, error), error);
  }
}
