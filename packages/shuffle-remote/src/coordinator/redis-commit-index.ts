import { type Logger, noopLogger } from '@weft/shuffle-api';
import { type CommittedPartition, validateCommittedPartition } from '../protocol/committed-partition.js';
import { encodeKeySegment } from '../storage/object-key.js';
import { RedisConnection, type RedisConnectionOptions } from './redis-connection.js';

/** A further server's copy of the committed attempt (a replica, or a push a writer moved to a spare). */
export interface PartitionCopy {
  readonly serverId: string;
  readonly objectKey: string;
  readonly tiered: boolean;
}

/** Compare-and-set of a partition's two fields (record, copies): '' means absent. 1 when set. */
const SET_IF_UNCHANGED = `
local p = redis.call('HGET', KEYS[1], ARGV[1]) or ''
local c = redis.call('HGET', KEYS[2], ARGV[1]) or ''
if p ~= ARGV[2] or c ~= ARGV[3] then return 0 end
if ARGV[4] == '' then redis.call('HDEL', KEYS[1], ARGV[1]) else redis.call('HSET', KEYS[1], ARGV[1], ARGV[4]) end
if ARGV[5] == '' then redis.call('HDEL', KEYS[2], ARGV[1]) else redis.call('HSET', KEYS[2], ARGV[1], ARGV[5]) end
return 1`;

export type PublishOutcome = { readonly status: 'committed' } | { readonly status: 'conflict'; readonly winner: CommittedPartition };

/**
 * The cluster-wide view of committed partitions, in Redis: one hash per job (`job:<job>:commits`,
 * partition id → CommittedPartition JSON). Servers publish at commit with HSETNX, so the first attempt
 * to commit a partition wins across servers, not only on one; masters list a job from it (JobMaster
 * failover) and readers find a vanished server's S3-tiered copy in it.
 *
 * Copies: when a writer pushes one attempt to several servers (replicas, or a spare it moved to), the
 * first server to commit publishes the record; the others add themselves to `job:<job>:copies`
 * (partition id → JSON list of PartitionCopy) with `addCopy` — the same attempt, never a rival one.
 * `locations` gives the record once per server holding it; a server releasing its copy removes only
 * that one (`removeCopy`: a copy takes the record's place when the record's server goes first).
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

  /**
   * Records `record` (committed on its server) as a copy of the partition's committed attempt: published
   * as the record when none is there yet, added to the copies when the record is the same attempt on
   * another server, a conflict when another attempt won. Idempotent.
   */
  async addCopy(record: CommittedPartition): Promise<PublishOutcome> {
    const copy: PartitionCopy = { serverId: record.serverId, objectKey: record.objectKey, tiered: record.tiered };
    const outcome = await this.update<PublishOutcome>('addCopy', record.jobId, record.partitionId, (current, copies) => {
      if (current === undefined) return { record, copies: [], outcome: { status: 'committed' } };
      if (current.attempt !== record.attempt) return { outcome: { status: 'conflict', winner: current } };
      if (current.serverId === record.serverId) {
        return current.tiered || !record.tiered ? { outcome: { status: 'committed' } } : { record, copies, outcome: { status: 'committed' } };
      }
      const kept = copies.filter((c) => c.serverId !== copy.serverId);
      const same = copies.find((c) => c.serverId === copy.serverId);
      if (same !== undefined && same.objectKey === copy.objectKey && same.tiered === copy.tiered) return { outcome: { status: 'committed' } };
      return { record: current, copies: [...kept, copy], outcome: { status: 'committed' } };
    });
    return outcome ?? { status: 'committed' };
  }

  /** The committed attempt once per server holding it: the record first, then its copies. */
  async locations(jobId: string, partitionId: string): Promise<CommittedPartition[]> {
    return this.connection.call('lookupCopies', async (r) => {
      const [json, copiesJson] = await Promise.all([r.hget(this.jobKey(jobId), partitionId), r.hget(this.copiesKey(jobId), partitionId)]);
      const record = parse(json);
      return record === undefined ? [] : [record, ...parseCopies(copiesJson).map((c) => ({ ...record, ...c }))];
    });
  }

  /** Every committed partition of a job, once per server holding it (see `locations`). */
  async listLocations(jobId: string): Promise<CommittedPartition[][]> {
    return this.connection.call('listCopies', async (r) => {
      const [all, copies] = await Promise.all([r.hgetall(this.jobKey(jobId)), r.hgetall(this.copiesKey(jobId))]);
      return Object.entries(all).flatMap(([field, json]) => {
        const record = parse(json);
        return record === undefined ? [] : [[record, ...parseCopies(copies[field]).map((c) => ({ ...record, ...c }))]];
      });
    });
  }

  /** Forgets one server's copy of a partition (the record's server: a copy takes its place). Idempotent. */
  async removeCopy(jobId: string, partitionId: string, serverId: string): Promise<void> {
    await this.update('removeCopy', jobId, partitionId, (current, copies) => {
      if (current === undefined) return copies.length === 0 ? {} : { copies: [] };
      if (current.serverId !== serverId) {
        const kept = copies.filter((c) => c.serverId !== serverId);
        return kept.length === copies.length ? {} : { record: current, copies: kept };
      }
      const [next, ...others] = copies;
      return next === undefined ? { record: null, copies: [] } : { record: { ...current, ...next }, copies: others };
    });
  }

  /** Forgets a partition's commit and every copy of it. Idempotent. */
  async remove(jobId: string, partitionId: string): Promise<void> {
    await this.connection.call('removeCommit', (r) => r.multi().hdel(this.jobKey(jobId), partitionId).hdel(this.copiesKey(jobId), partitionId).exec());
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
      const copies = await r.hgetall(this.copiesKey(jobId));
      for (const record of [...removed]) for (const c of parseCopies(copies[record.partitionId])) removed.push({ ...record, ...c });
      if (fields.length > 0) await r.multi().hdel(key, ...fields).hdel(this.copiesKey(jobId), ...fields).exec();
      return removed;
    });
  }

  async close(): Promise<void> {
    if (this.owned) await this.connection.close();
  }

  /**
   * Read, decide, compare-and-set (in Redis, atomically against both fields) until nothing changed in
   * between. `decide` returns the new record (null: delete it; undefined: keep) and copies (undefined:
   * keep), and the outcome.
   */
  private async update<T>(
    operation: string,
    jobId: string,
    partitionId: string,
    decide: (record: CommittedPartition | undefined, copies: PartitionCopy[]) => { record?: CommittedPartition | null; copies?: PartitionCopy[]; outcome?: T },
  ): Promise<T | undefined> {
    const keys = [this.jobKey(jobId), this.copiesKey(jobId)];
    return this.connection.call(operation, async (r) => {
      for (let tries = 0; tries < 10; tries++) {
        const [json, copiesJson] = await Promise.all([r.hget(keys[0]!, partitionId), r.hget(keys[1]!, partitionId)]);
        const copies = parseCopies(copiesJson);
        const change = decide(parse(json), copies);
        if (change.record === undefined && change.copies === undefined) return change.outcome;
        const record = change.record === undefined ? (json ?? '') : change.record === null ? '' : JSON.stringify(change.record);
        const nextCopies = change.copies === undefined ? (copiesJson ?? '') : change.copies.length === 0 ? '' : JSON.stringify(change.copies);
        const set = await r.eval(SET_IF_UNCHANGED, 2, keys[0]!, keys[1]!, partitionId, json ?? '', copiesJson ?? '', record, nextCopies);
        if (set === 1) return change.outcome;
      }
      throw new Error(`partition ${partitionId} kept changing while its copies were updated`);
    });
  }

  private copiesKey(jobId: string): string {
    return this.connection.key('job', encodeKeySegment('jobId', jobId), 'copies');
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

function parseCopies(value: string | null | undefined): PartitionCopy[] {
  if (value === null || value === undefined || value === '') return [];
  try {
    const list: unknown = JSON.parse(value);
    if (!Array.isArray(list)) return [];
    return list.filter(
      (c): c is PartitionCopy => typeof c === 'object' && c !== null && typeof c.serverId === 'string' && typeof c.objectKey === 'string' && typeof c.tiered === 'boolean',
    );
  } catch {
    return [];
  }
}
