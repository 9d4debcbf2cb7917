import { Redis } from 'ioredis';
import { type Logger, invalidConfig } from '@weft/shuffle-api';

/** The URL without its password, for messages and logs. */
export function redactRedisUrl(url: string): string {
  try {
    const parsed = new URL(url);
    if (parsed.password !== '') parsed.password = '***';
    return parsed.toString();
  } catch {
    return 'redis://(unparseable)';
  }
}

export interface ConnectRedisOptions {
  /** `redis://[user:password@]host:port/db` (`rediss://` for TLS). */
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

/**
 * Opens one ioredis connection and checks it with PING: SHF_ERR_INVALID_CONFIG naming the setting when
 * Redis cannot be reached. Afterwards commands fail at once while Redis is away (no offline queue, no
 * per-request retries) and the connection comes back by itself, with pauses up to a second.
 */
export async function connectRedis(options: ConnectRedisOptions): Promise<Redis> {
  const description = redactRedisUrl(options.url);
  const redis = new Redis(options.url, {
    lazyConnect: true,
    enableOfflineQueue: false,
    maxRetriesPerRequest: 0,
    connectTimeout: options.connectTimeoutMs,
    commandTimeout: options.commandTimeoutMs,
    retryStrategy: (times) => (options.reconnect?.() === false ? null : Math.min(50 * 2 ** Math.min(times, 5), 1_000)),
  });
  redis.on('error', (error: Error) => options.logger.debug({ redis: description, error: error.message }, 'redis connection error'));
  try {
    await redis.connect();
    await redis.ping();
  } catch (cause) {
    redis.disconnect();
    throw invalidConfig(options.setting, `cannot reach Redis at ${description}: ${(cause as Error).message}`, cause);
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
