import { type Logger, invalidConfig } from '@weft/shuffle-api';
import type { S3StoreOptions } from '../config/store-options.js';
import { resolveS3StoreOptions } from '../config/store-options.js';
import { parseStoreUrl } from '../config/store-url.js';
import { RedisCommitIndex } from '../coordinator/redis-commit-index.js';
import { RedisConnection } from '../coordinator/redis-connection.js';
import { RedisServerRegistry } from '../coordinator/redis-server-registry.js';
import type { ServerRecord } from '../coordinator/server-record.js';
import type { CommittedPartition } from '../protocol/committed-partition.js';
import type { BlobReader } from '../storage/blob-store.js';
import { S3BlobStore } from '../storage/s3-blob-store.js';
import type { ResolvedShuffleServerClientOptions } from './client-options.js';

/** Builds the S3 store of the servers' tier from client options; SHF_ERR_INVALID_CONFIG naming `tier`. */
export function createTierStore(tier: string | S3StoreOptions): S3BlobStore {
  const options = typeof tier === 'string' ? parseStoreUrl(tier, 'tier') : tier;
  if (options.type !== 's3') throw invalidConfig('tier', `the servers' tier is an S3 store (s3://bucket/prefix), got ${JSON.stringify(tier)}`);
  return new S3BlobStore(resolveS3StoreOptions(options));
}

/**
 * Where a partition can be read when its descriptor's server cannot serve it: the server's current URL
 * from the registry (it may have moved), or — once its heartbeat expired — the S3 tier's copy recorded in
 * the commit index. Connects to Redis and S3 on first use only, so environments that never meet a
 * vanished server open nothing.
 */
export class PartitionLocator {
  private redis: Promise<{ connection: RedisConnection; registry: RedisServerRegistry; index: RedisCommitIndex }> | undefined;
  private tierStore: S3BlobStore | undefined;
  private closed = false;

  constructor(
    private readonly options: ResolvedShuffleServerClientOptions,
    private readonly logger: Logger,
  ) {}

  /** Whether a registry is configured (without one, an unreachable server is only unreachable). */
  get hasRegistry(): boolean {
    return this.options.redis !== undefined;
  }

  /** The server's live record, or undefined when its heartbeat expired (or there is no registry). */
  async liveServer(serverId: string): Promise<ServerRecord | undefined> {
    const redis = await this.connect();
    return redis?.registry.get(serverId);
  }

  /** The commit index's record of a partition, or undefined. */
  async commitOf(jobId: string, partitionId: string): Promise<CommittedPartition | undefined> {
    const redis = await this.connect();
    return redis?.index.lookup(jobId, partitionId);
  }

  /** Every server's committed copy of a partition (commit record first), or [] (or no registry). */
  async copiesOf(jobId: string, partitionId: string): Promise<CommittedPartition[]> {
    const redis = await this.connect();
    return (await redis?.index.locations(jobId, partitionId)) ?? [];
  }

  /** A reader of the tier's copy, or undefined when no tier is configured. */
  async openTierCopy(record: CommittedPartition): Promise<BlobReader | undefined> {
    if (this.options.tier === undefined || !record.tiered) return undefined;
    this.tierStore ??= createTierStore(this.options.tier);
    return this.tierStore.openReader(record.objectKey);
  }

  async close(): Promise<void> {
    this.closed = true;
    const redis = this.redis;
    this.redis = undefined;
    await Promise.allSettled([redis?.then((r) => r.connection.close()), this.tierStore?.close()]);
  }

  private async connect(): Promise<{ connection: RedisConnection; registry: RedisServerRegistry; index: RedisCommitIndex } | undefined> {
    if (this.options.redis === undefined || this.closed) return undefined;
    this.redis ??= (async () => {
      const connection = new RedisConnection({ url: this.options.redis!, keyPrefix: this.options.redisKeyPrefix, setting: 'redis' }, this.logger);
      await connection.open();
      return { connection, registry: new RedisServerRegistry(connection, this.logger), index: new RedisCommitIndex(connection) };
    })();
    this.redis.catch(() => {
      this.redis = undefined;
    });
    return this.redis;
  }
}
