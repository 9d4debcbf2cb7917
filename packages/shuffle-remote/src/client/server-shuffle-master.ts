import {
  type JobId,
  type JobShuffleContext,
  type Logger,
  type RegisterPartitionRequest,
  ShuffleError,
  type ShuffleDescriptor,
  type ShuffleMaster,
  type ShuffleMasterContext,
  type StoredPartition,
  closedError,
  invalidArgument,
  isShuffleError,
  noopLogger,
  validateId,
  validatePartitionDescriptor,
  validateProducerDescriptor,
} from '@weft/shuffle-api';
import { RedisCommitIndex } from '../coordinator/redis-commit-index.js';
import { RedisConnection } from '../coordinator/redis-connection.js';
import { RedisServerRegistry } from '../coordinator/redis-server-registry.js';
import { ServerPlacement } from '../coordinator/server-placement.js';
import type { CommittedPartition } from '../protocol/committed-partition.js';
import { createJobToken } from '../protocol/job-token.js';
import type { S3BlobStore } from '../storage/s3-blob-store.js';
import { type ResolvedShuffleServerClientOptions, readSecret } from './client-options.js';
import { createTierStore } from './partition-locator.js';
import { SHUFFLE_SERVER_SERVICE_ID, type ServerPartitionDetails, checkServerDescriptor } from './server-descriptor.js';
import { ShuffleServerClient } from './shuffle-server-client.js';

interface Cluster {
  readonly connection: RedisConnection;
  readonly registry: RedisServerRegistry;
  readonly index: RedisCommitIndex;
  readonly placement: ServerPlacement;
}

/**
 * The ShuffleMaster of the shuffle-server shuffle. It places each new partition on a live server
 * (load-aware, through the Redis registry; or round-robin over a fixed list) and hands out descriptors
 * carrying the server and the job token (HMAC of the job id) — only the master holds the secret.
 * `listPartitions` reads the cluster's commit index (a new master on the same Redis sees everything
 * committed), keeping partitions whose server is live or whose copy is in the S3 tier; with a fixed
 * list it asks every server. Releases go to the partition's server, and for a vanished server's tiered
 * partitions straight to the tier and the index.
 */
export class ServerShuffleMaster implements ShuffleMaster {
  readonly shuffleServiceId = SHUFFLE_SERVER_SERVICE_ID;
  private readonly logger: Logger;
  private secret: Buffer | undefined;
  private client: ShuffleServerClient | undefined;
  private cluster: Cluster | undefined;
  private tier: S3BlobStore | undefined;
  private turn = 0;
  private started: Promise<void> | undefined;
  private closed = false;

  constructor(
    private readonly options: ResolvedShuffleServerClientOptions,
    context: ShuffleMasterContext = {},
  ) {
    this.logger = (context.logger ?? noopLogger).child({ component: 'shuffle-server-master' });
  }

  /** Reads the secret and connects to the registry: SHF_ERR_INVALID_CONFIG naming the setting when either fails. */
  start(): Promise<void> {
    this.started ??= (async () => {
      this.secret = readSecret(this.options);
      this.client = new ShuffleServerClient(this.options, this.logger);
      if (this.options.redis !== undefined) {
        const connection = new RedisConnection({ url: this.options.redis, keyPrefix: this.options.redisKeyPrefix, setting: 'redis' }, this.logger);
        await connection.open();
        const registry = new RedisServerRegistry(connection);
        this.cluster = {
          connection,
          registry,
          index: new RedisCommitIndex(connection),
          placement: new ServerPlacement(registry, { refreshIntervalMs: this.options.placementRefreshMs, minFreeBytes: this.options.minFreeBytes }),
        };
      }
      if (this.options.tier !== undefined) this.tier = createTierStore(this.options.tier);
    })().catch(async (error: unknown) => {
      this.started = undefined;
      await this.client?.close();
      throw error;
    });
    return this.started;
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await this.started?.catch(() => undefined);
    await Promise.allSettled([this.client?.close(), this.cluster?.connection.close(), this.tier?.close()]);
  }

  [Symbol.asyncDispose](): Promise<void> {
    return this.close();
  }

  async registerJob(context: JobShuffleContext): Promise<void> {
    this.ready();
    validateId('jobId', context?.jobId);
  }

  async unregisterJob(jobId: JobId): Promise<void> {
    const { client } = this.ready();
    validateId('jobId', jobId);
    const token = this.tokenOf(jobId);
    for (const url of await this.serverUrls()) {
      await client.releaseJob(url, token, jobId, true).catch((error: unknown) => {
        this.logger.warn({ jobId, server: url, error: (error as Error).message }, 'could not release a job on a server');
      });
    }
    // what vanished servers left: tier copies and index entries
    const removed = (await this.cluster?.index.removeJob(jobId, true)) ?? [];
    for (const record of removed) if (record.tiered) await this.tier?.delete(record.objectKey).catch(() => undefined);
  }

  async registerPartitionWithProducer(request: RegisterPartitionRequest): Promise<ShuffleDescriptor> {
    this.ready();
    if (typeof request !== 'object' || request === null) throw invalidArgument('request', 'expected an object');
    const jobId = validateId('jobId', request.jobId) as JobId;
    const partition = validatePartitionDescriptor(request.partition);
    const producer = validateProducerDescriptor(request.producer);
    if (partition.partitionType !== 'BLOCKING' && partition.partitionType !== 'BLOCKING_PERSISTENT') {
      throw invalidArgument('partition.partitionType', `the shuffle server stores BLOCKING and BLOCKING_PERSISTENT partitions, not ${partition.partitionType}`);
    }
    const server = await this.place();
    const details: ServerPartitionDetails = { serverId: server.serverId, url: server.url, token: this.tokenOf(jobId) };
    return { shuffleServiceId: SHUFFLE_SERVER_SERVICE_ID, jobId, partition, producer, details: { ...details } };
  }

  async releasePartitionExternally(descriptor: ShuffleDescriptor): Promise<void> {
    const { client } = this.ready();
    const d = checkServerDescriptor(descriptor);
    const { jobId } = d;
    const { partitionId } = d.partition;
    const token = this.tokenOf(jobId);
    let url: string | undefined = d.details.url;
    if (this.cluster !== undefined) url = (await this.cluster.registry.get(d.details.serverId))?.url;
    if (url !== undefined) {
      try {
        await client.release(url, token, jobId, partitionId);
      } catch (error) {
        if (!(isShuffleError(error) && error.context['unreachable'] === true && this.cluster !== undefined)) throw error;
      }
    }
    if (this.cluster !== undefined) {
      const record = await this.cluster.index.lookup(jobId, partitionId);
      if (record?.tiered === true) await this.tier?.delete(record.objectKey);
      await this.cluster.index.remove(jobId, partitionId);
    }
  }

  async listPartitions(jobId: JobId): Promise<readonly StoredPartition[]> {
    const { client } = this.ready();
    validateId('jobId', jobId);
    const token = this.tokenOf(jobId);
    let records: CommittedPartition[];
    const urls = new Map<string, string>();
    if (this.cluster !== undefined) {
      const live = await this.cluster.placement.live(true);
      for (const server of live) urls.set(server.serverId, server.url);
      records = (await this.cluster.index.list(jobId)).filter((r) => urls.has(r.serverId) || r.tiered);
    } else {
      records = [];
      for (const url of this.options.servers) {
        for (const record of await client.list(url, token, jobId)) {
          urls.set(record.serverId, url);
          records.push(record);
        }
      }
    }
    return records.map((record) => {
      const url = urls.get(record.serverId) ?? (record.descriptor.details as Partial<ServerPartitionDetails> | null)?.url ?? 'http://unknown';
      const details: ServerPartitionDetails = { serverId: record.serverId, url, token };
      return {
        descriptor: { ...record.descriptor, shuffleServiceId: SHUFFLE_SERVER_SERVICE_ID, details: { ...details } },
        subpartitionBytes: record.subpartitionBytes,
        totalBytes: record.totalBytes,
      };
    });
  }

  private ready(): { client: ShuffleServerClient } {
    if (this.closed) throw closedError('shuffle master');
    if (this.client === undefined) throw new ShuffleError('SHF_ERR_CLOSED', 'the shuffle master is not started: call start() first');
    return { client: this.client };
  }

  private tokenOf(jobId: string): string {
    return createJobToken(this.secret!, jobId);
  }

  private async place(): Promise<{ serverId: string; url: string }> {
    if (this.cluster !== undefined) return this.cluster.placement.place();
    const url = this.options.servers[this.turn++ % this.options.servers.length]!;
    return { serverId: `static-${this.options.servers.indexOf(url)}`, url };
  }

  private async serverUrls(): Promise<string[]> {
    if (this.cluster !== undefined) return (await this.cluster.placement.live(true)).map((s) => s.url);
    return [...this.options.servers];
  }
}
