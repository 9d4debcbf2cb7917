import { type Logger, noopLogger } from '@weft/shuffle-api';
import { type CommittedPartition, validateCommittedPartition } from '../protocol/committed-partition.js';
import { encodeKeySegment } from '../storage/object-key.js';
import { RedisConnection, type RedisConnectionOptions } from './redis-connection.js';

export type PublishOutcome = { readonly status: 'committed' } | { readonly status: 'conflict'; readonly winner: CommittedPartition };

/**
 * The cluster-wide view of committed partitions, in Redis: one hash per job (`job:<job>:commits`,
 * partition id → CommittedPartition JSON). Servers publish at commit with HSETNX, so the first attempt
 * to commit a partition wins across servers, not only on one; masters list a job from it (JobMaster
 * failover) and readers find a vanished server's S3-tiered copy in it.
 */
export class RedisCommitIndex {
  readonly connection: RedisConnection;
  private readonly owned: boolean;

  constructor(options: RedisConnectionOptions | RedisConnection, logger: Logger = noopLogger) {
    this.owned = !(options instanceof RedisConnection);
    this.connection = options instanceof RedisConnection ? options : new RedisConnection(options, logger);
  }

  async start(): Promise<void> {
    await this.connection.open();
  }

  /** Publishes a commit unless another attempt (or server) committed the partition first. Idempotent. */
  async publish(record: CommittedPartition): Promise<PublishOutcome> {
    const key = this.jobKey(record.jobId);
    const json = JSON.stringify(record);
    return this.connection.call('publishCommit', async (r) => {
      for (let tries = 0; tries < 5; tries++) {
        if ((await r.hsetnx(key, record.partitionId, json)) === 1) return { status: 'committed' } as const;
        const current = parse(await r.hget(key, record.partitionId));
        if (current === undefined) continue; // released in between: try again
        if (current.serverId === record.serverId && current.attempt === record.attempt) {
          if (!current.tiered && record.tiered) await r.hset(key, record.partitionId, json);
          return { status: 'committed' } as const;
        }
        return { status: 'conflict', winner: current } as const;
      }
      throw new Error(`partition ${record.partitionId} kept changing while its commit was published`);
    });
  }

  async lookup(jobId: string, partitionId: string): Promise<CommittedPartition | undefined> {
    return this.connection.call('lookupCommit', async (r) => parse(await r.hget(this.jobKey(jobId), partitionId)));
  }

  async list(jobId: string): Promise<CommittedPartition[]> {
    return this.connection.call('listCommits', async (r) => {
      const all = await r.hgetall(this.jobKey(jobId));
      return Object.values(all).flatMap((json) => parse(json) ?? []);
    });
  }

  /** Forgets a partition's commit (only `attempt`'s, when given). Idempotent. */
  async remove(jobId: string, partitionId: string): Promise<void> {
    await this.connection.call('removeCommit', (r) => r.hdel(this.jobKey(jobId), partitionId));
  }

  /** Forgets every commit of a job (but persistent ones when `keepPersistent`); returns what it removed. */
  async removeJob(jobId: string, keepPersistent: boolean): Promise<CommittedPartition[]> {
    const key = this.jobKey(jobId);
    return this.connection.call('removeJobCommits', async (r) => {
      const all = await r.hgetall(key);
      const removed: CommittedPartition[] = [];
      const fields: string[] = [];
      for (const [field, json] of Object.entries(all)) {
        const record = parse(json);
        if (keepPersistent && record?.persistent === true) continue;
        fields.push(field);
        if (record !== undefined) removed.push(record);
      }
      if (fields.length > 0) await r.hdel(key, ...fields);
      return removed;
    });
  }

  async close(): Promise<void> {
    if (this.owned) await this.connection.close();
  }

  private jobKey(jobId: string): string {
    return this.connection.key('job', encodeKeySegment('jobId', jobId), 'commits');
  }
}

function parse(value: string | null | undefined): CommittedPartition | undefined {
  if (value === null || value === undefined) return undefined;
  try {
    return validateCommittedPartition(JSON.parse(value));
  } catch {
    return undefined;
  }
}
