import type { Redis, RedisOptions } from 'ioredis';
import { type Logger, invalidConfig } from '@weft/shuffle-api';
import { type RedisEndpoint, parseRedisUrl } from './redis-url.js';
import { ioredis } from '../lazy/ioredis.js';

export { redactRedisUrl } from './redis-url.js';

export interface ConnectRedisOptions {
  /** A Redis URL (parseRedisUrl): `redis://…`, `rediss://…` or `redis+sentinel://…`. */
  readonly url: string;
  readonly connectTimeoutMs: number;
  /** A command without an answer within this time fails. */
  readonly commandTimeoutMs: number;
  /** Names the setting in the start-up error. */
  readonly setting: string;
  readonly logger: Logger;
  /** False once the owner closed: stop reconnecting. @defaultValue always true */
  readonly reconnect?: () => boolean;
}

/** How many times each connection became ready: a write and its WAIT must see the same number. */
const generations = new WeakMap<Redis, { n: number }>();

/** The connection's generation: bumped each time it (re)connects, to the same primary or a new one. */
export function connectionGeneration(redis: Redis): number {
  return generations.get(redis)?.n ?? 0;
}

/**
 * ioredis options for an endpoint: host, port, db and credentials, or the Sentinels and the primary's name
 * (ioredis asks them for the primary, and asks again on every reconnect). A READONLY reply (a primary that
 * was demoted under us) reconnects, so the next try finds the new primary.
 */
export function redisClientOptions(endpoint: RedisEndpoint): RedisOptions {
  const auth = { ...(endpoint.username === undefined ? {} : { username: endpoint.username }), ...(endpoint.password === undefined ? {} : { password: endpoint.password }) };
  const reconnectOnError = (error: Error): 1 | false => (String(error.message).startsWith('READONLY') ? 1 : false);
  if (endpoint.kind === 'sentinel') {
    return { sentinels: endpoint.sentinels.map((s) => ({ host: s.host, port: s.port })), name: endpoint.name, db: endpoint.db, ...auth, reconnectOnError };
  }
  return { host: endpoint.host, port: endpoint.port, db: endpoint.db, ...auth, ...(endpoint.tls ? { tls: { servername: endpoint.host } } : {}), reconnectOnError };
}

/**
 * An ioredis client for `endpoint` that is not connected yet (lazyConnect): no offline queue, no per-request
 * retries (callers retry), reconnecting with pauses up to a second until `reconnect()` says no, and
 * counting its connections (connectionGeneration).
 */
export function createRedisClient(endpoint: RedisEndpoint, options: Omit<ConnectRedisOptions, 'url' | 'setting'>): Redis {
  const retry = (times: number): number | null => (options.reconnect?.() === false ? null : Math.min(50 * 2 ** Math.min(times, 5), 1_000));
  const redis = new ioredis.Redis({
    ...redisClientOptions(endpoint),
    lazyConnect: true,
    enableOfflineQueue: false,
    maxRetriesPerRequest: 0,
    connectTimeout: options.connectTimeoutMs,
    commandTimeout: options.commandTimeoutMs,
    retryStrategy: retry,
    ...(endpoint.kind === 'sentinel' ? { sentinelRetryStrategy: retry } : {}),
  });
  const generation = { n: 0 };
  generations.set(redis, generation);
  redis.on('ready', () => {
    generation.n += 1;
    if (generation.n > 1) options.logger.info({ redis: endpoint.description, connection: generation.n }, 'redis connection ready again');
  });
  redis.on('error', (error: Error) => options.logger.debug({ redis: endpoint.description, error: error.message }, 'redis connection error'));
  return redis;
}

/**
 * Opens one ioredis connection and checks it with PING: SHF_ERR_INVALID_CONFIG naming the setting when
 * the URL is malformed or Redis cannot be reached (for a Sentinel URL: no Sentinel answers, or none knows
 * the primary) within `connectTimeoutMs` — ioredis would otherwise keep asking unreachable Sentinels
 * forever. Afterwards commands fail at once while Redis is away (no offline queue, no per-request
 * retries) and the connection comes back by itself, with pauses up to a second — to the new primary after
 * a Sentinel failover.
 */
export async function connectRedis(options: ConnectRedisOptions): Promise<Redis> {
  return openRedisClient(parseRedisUrl(options.url, options.setting), options);
}

/** connectRedis for an endpoint already parsed; `setting` names it in the start-up error. */
export async function openRedisClient(endpoint: RedisEndpoint, options: Omit<ConnectRedisOptions, 'url'>): Promise<Redis> {
  const deadline = Date.now() + options.connectTimeoutMs;
  let starting = true;
  const redis = createRedisClient(endpoint, { ...options, reconnect: () => (starting ? Date.now() < deadline : true) && options.reconnect?.() !== false });
  // why the connection went away (ECONNREFUSED, ENOTFOUND, …): the command itself only says it is closed
  let connectionError: Error | undefined;
  const onError = (error: Error): void => void (connectionError = error);
  redis.on('error', onError);
  let timer: NodeJS.Timeout | undefined;
  try {
    const timedOut = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`no answer within ${options.connectTimeoutMs} ms`)), options.connectTimeoutMs + 1_000);
    });
    await Promise.race([redis.connect().then(() => redis.ping()), timedOut]);
  } catch (cause) {
    redis.disconnect();
    const why = connectionError !== undefined && connectionError.message !== (cause as Error).message ? `${(cause as Error).message} (${connectionError.message})` : (cause as Error).message;
    throw invalidConfig(options.setting, `cannot reach Redis at ${endpoint.description}: ${why}`, cause);
  } finally {
    clearTimeout(timer);
    redis.off('error', onError);
    starting = false;
  }
  return redis;
}

/** Closes a connection politely (QUIT), or at once when that fails. */
export async function quitRedis(redis: Redis | undefined): Promise<void> {
  if (redis === undefined) return;
  try {
    await redis.quit();
  } catch {
    redis.disconnect();
  }
}
