import type { Redis } from 'ioredis';
import { type Logger, noopLogger } from '@weft/shuffle-api';
import { connectRedis, quitRedis } from '../redis/connect-redis.js';
import { type ReplicaAckPolicy, parseRedisUrl } from '../redis/redis-url.js';
import { replicatedWrite } from '../redis/replicated-write.js';
import { storageUnavailable } from '../storage/storage-errors.js';

export interface RedisConnectionOptions {
  /** `redis://[user:password@]host:port/db` (`rediss://` for TLS) or `redis+sentinel://host:port[,host:port…]/name/db` (parseRedisUrl). */
  readonly url: string;
  /** Prefix of every key. @defaultValue 'weft:shuffle-server:' */
  readonly keyPrefix?: string;
  /** @defaultValue 3000 */
  readonly connectTimeoutMs?: number;
  /** A command without an answer within this time fails. @defaultValue 5000 */
  readonly commandTimeoutMs?: number;
  /** Names the setting in start-up errors. @defaultValue 'redis' */
  readonly setting?: string;
}

export const DEFAULT_REGISTRY_KEY_PREFIX = 'weft:shuffle-server:';

/**
 * One ioredis connection for the registry and the commit index. Connects at `open()` (SHF_ERR_INVALID_CONFIG
 * naming the setting when Redis cannot be reached), then fails commands at once while Redis is away
 * (no offline queue) with SHF_ERR_STORAGE_UNAVAILABLE, reconnecting by itself.
 */
export class RedisConnection {
  readonly description: string;
  readonly prefix: string;
  /** Replicas a write must reach before it counts (the URL's; one for `redis+sentinel://`). */
  readonly ack: ReplicaAckPolicy;
  private redis: Redis | undefined;
  private closed = false;

  constructor(
    private readonly options: RedisConnectionOptions,
    private readonly logger: Logger = noopLogger,
  ) {
    const endpoint = parseRedisUrl(options.url, options.setting ?? 'redis');
    this.description = endpoint.description;
    this.ack = endpoint.ack;
    this.prefix = options.keyPrefix ?? DEFAULT_REGISTRY_KEY_PREFIX;
  }

  async open(): Promise<void> {
    if (this.redis !== undefined) return;
    this.redis = await connectRedis({
      url: this.options.url,
      connectTimeoutMs: this.options.connectTimeoutMs ?? 3_000,
      commandTimeoutMs: this.options.commandTimeoutMs ?? 5_000,
      setting: this.options.setting ?? 'redis',
      logger: this.logger,
      reconnect: () => !this.closed,
    });
  }

  /** Runs `operation` on the connection; transport and server errors become SHF_ERR_STORAGE_UNAVAILABLE. */
  async call<T>(operation: string, body: (redis: Redis) => Promise<T>): Promise<T> {
    const redis = this.redis;
    if (redis === undefined) throw storageUnavailable(this.description, operation, new Error('the Redis connection is not open'));
    try {
      return await body(redis);
    } catch (cause) {
      throw storageUnavailable(this.description, operation, cause);
    }
  }

  /**
   * `call` for writes the job relies on (registrations, commits): they resolve once `ack.minReplicas`
   * replicas hold them (replicatedWrite), SHF_ERR_NOT_REPLICATED when they never do.
   */
  async write<T>(operation: string, body: (redis: Redis) => Promise<T>): Promise<T> {
    return this.call(operation, (redis) => replicatedWrite({ redis, ack: this.ack, description: this.description, operation, write: body }));
  }

  key(...parts: string[]): string {
    return this.prefix + parts.join(':');
  }

  async close(): Promise<void> {
    this.closed = true;
    const redis = this.redis;
    this.redis = undefined;
    await quitRedis(redis);
  }
}
