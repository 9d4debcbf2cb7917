import type { Redis } from 'ioredis';
import { type Logger, type SerializedShuffleError, invalidArgument, noopLogger } from '@weft/shuffle-api';
import type { RedisMetaOptions } from '../config/store-options.js';
import { connectRedis, quitRedis } from '../redis/connect-redis.js';
import { type ReplicaAckPolicy, parseRedisUrl } from '../redis/redis-url.js';
import { replicatedWrite } from '../redis/replicated-write.js';
import { encodeKeySegment } from '../storage/object-key.js';
import { storageUnavailable, storeNotOpen } from '../storage/storage-errors.js';
import {
  type AttemptRecord,
  type AttemptState,
  type BeginAttemptRequest,
  type CommitOutcome,
  type CommitRecord,
  type MetadataStore,
  type PartitionLookup,
  type PartitionRegistration,
  type RegisterJobOutcome,
  type RegisterOutcome,
  type ReleaseOutcome,
  descriptorEpoch,
  isCollectible,
} from './metadata-store.js';
import {
  ALL_SCRIPTS,
  BEGIN_ATTEMPT,
  COMMIT,
  EXPIRE_ATTEMPT,
  FAIL_ATTEMPT,
  FORGET_ATTEMPT,
  HEARTBEAT,
  REGISTER_JOB,
  REGISTER_PARTITION,
  RELEASE_PARTITION,
  type RedisScript,
} from './redis-scripts.js';

/** Server replies that mean "not now" rather than "never". */
const TRANSIENT_REPLY = /^(LOADING|BUSY|TRYAGAIN|MASTERDOWN|READONLY|CLUSTERDOWN|NOREPLICAS)/;

function isTransient(error: unknown): boolean {
  const e = error as { name?: string; message?: string };
  if (e?.name === 'ReplyError') return TRANSIENT_REPLY.test(e.message ?? '');
  return true; // connection closed, not writeable, timed out, refused: all transport problems
}

type Hash = Record<string, string>;

/** An epoch as the scripts take it: its decimal digits, '' for none. */
function epochArg(epoch: number | undefined): string {
  return epoch === undefined ? '' : String(epoch);
}

/** A TIME reply (seconds, microseconds) in milliseconds: the server's clock, the one leases are renewed by. */
function toMs(time: readonly [string, string] | readonly (string | number)[]): number {
  return Number(time[0]) * 1000 + Math.floor(Number(time[1]) / 1000);
}

function toAttempt(hash: Hash): AttemptRecord | undefined {
  if (hash['state'] === undefined || hash['writeId'] === undefined) return undefined;
  return {
    writeId: hash['writeId'],
    jobId: hash['jobId'] ?? '',
    partitionId: hash['partitionId'] ?? '',
    producerId: hash['producerId'] ?? '',
    objectKey: hash['objectKey'] ?? '',
    state: hash['state'] as AttemptState,
    startedAtMs: Number(hash['startedAt']),
    heartbeatAtMs: Number(hash['heartbeatAt']),
    ...(hash['uploadId'] === undefined ? {} : { uploadId: hash['uploadId'] }),
    ...(hash['failure'] === undefined ? {} : { failure: JSON.parse(hash['failure']) as SerializedShuffleError }),
    closed: hash['closed'] === '1',
    collected: hash['collected'] === '1',
  };
}

function toCommit(json: string | null | undefined, committedAt: string | null | undefined): CommitRecord | undefined {
  if (json === null || json === undefined) return undefined;
  const record = JSON.parse(json) as CommitRecord;
  return { ...record, committedAtMs: Number(committedAt ?? record.committedAtMs) };
}

/**
 * Metadata in Redis (ioredis). Every decision is one Lua script, atomic on the server; the commit script
 * lets the first writer of a partition in and turns every later one away. Keys (prefix `weft:` by
 * default; ids percent-encoded, so they cannot forge a key): `jobs`, `job:<job>:partitions`, `job:<job>:epoch`,
 * `partition:<job>:<partition>` (registration and commit), `partition:<job>:<partition>:attempts`,
 * `attempt:<writeId>`, `leases` (writing attempts by renewal time), `garbage`.
 *
 * Fails fast at `start()` when Redis cannot be reached; afterwards commands fail at once while it is away
 * (no offline queue) with SHF_ERR_STORAGE_UNAVAILABLE, and the connection comes back by itself.
 */
export class RedisMetadataStore implements MetadataStore {
  readonly description: string;
  private redis: Redis | undefined;
  private closed = false;
  private readonly prefix: string;
  private readonly ack: ReplicaAckPolicy;

  constructor(
    private readonly options: RedisMetaOptions,
    private readonly logger: Logger = noopLogger,
  ) {
    const endpoint = parseRedisUrl(options.url, 'meta');
    this.description = endpoint.description;
    this.ack = endpoint.ack;
    this.prefix = options.keyPrefix ?? 'weft:';
  }

  async start(): Promise<void> {
    if (this.redis !== undefined) return;
    const redis = await connectRedis({
      url: this.options.url,
      connectTimeoutMs: this.options.connectTimeoutMs ?? 3_000,
      commandTimeoutMs: this.options.commandTimeoutMs ?? 10_000,
      setting: 'meta',
      logger: this.logger,
    });
    for (const script of ALL_SCRIPTS) redis.defineCommand(script.name, { numberOfKeys: script.keys, lua: script.lua });
    this.redis = redis;
    this.closed = false;
  }

  async close(): Promise<void> {
    const redis = this.redis;
    this.redis = undefined;
    this.closed = true;
    await quitRedis(redis);
  }

  async registerJob(jobId: string, epoch?: number): Promise<RegisterJobOutcome> {
    const reply = (await this.script('registerJob', REGISTER_JOB, [this.key('jobs'), this.jobEpochKey(jobId)], [jobId, epochArg(epoch)])) as string[];
    return reply[0] === 'fenced' ? { status: 'fenced', newestEpoch: Number(reply[1]) } : { status: 'registered' };
  }

  async registerPartition(reg: PartitionRegistration): Promise<RegisterOutcome> {
    const partition = this.partitionKey(reg.jobId, reg.partitionId);
    const reply = (await this.script(
      'registerPartition',
      REGISTER_PARTITION,
      [this.key('jobs'), this.jobPartitionsKey(reg.jobId), partition, `${partition}:attempts`, this.jobEpochKey(reg.jobId), this.key('leases'), this.key('garbage')],
      [reg.jobId, reg.partitionId, JSON.stringify(reg.descriptor), reg.persistent ? '1' : '0', reg.descriptor.producer.producerId, epochArg(reg.epoch), this.key('attempt:')],
    )) as string[];
    if (reply[0] === 'fenced') return { status: 'fenced', newestEpoch: Number(reply[1]) };
    const ids = reply.slice(1);
    return this.call('registerPartition', async (r) => ({
      status: 'registered',
      released: { attempts: await this.attempts(r, ids), nowMs: toMs(await r.time()) },
    }));
  }

  async beginAttempt(a: BeginAttemptRequest): Promise<'ok' | 'not-registered'> {
    const partition = this.partitionKey(a.jobId, a.partitionId);
    return (await this.script('beginAttempt', BEGIN_ATTEMPT, [partition, `${partition}:attempts`, this.attemptKey(a.writeId), this.key('leases')], [
      a.writeId,
      a.jobId,
      a.partitionId,
      a.producerId,
      a.objectKey,
    ])) as 'ok' | 'not-registered';
  }

  async heartbeat(writeId: string, uploadId?: string): Promise<AttemptState | 'missing'> {
    return (await this.script('heartbeat', HEARTBEAT, [this.attemptKey(writeId), this.key('leases')], [writeId, uploadId ?? ''])) as AttemptState | 'missing';
  }

  async failAttempt(writeId: string, failure: SerializedShuffleError): Promise<void> {
    await this.script('failAttempt', FAIL_ATTEMPT, [this.attemptKey(writeId), this.key('leases'), this.key('garbage')], [writeId, JSON.stringify(failure)]);
  }

  async closeAttempt(writeId: string): Promise<void> {
    const key = this.attemptKey(writeId);
    await this.write('closeAttempt', async (r) => {
      if ((await r.exists(key)) === 1) await r.hset(key, 'closed', '1');
    });
  }

  async commit(c: CommitRecord): Promise<CommitOutcome> {
    const reply = (await this.script(
      'commit',
      COMMIT,
      [this.partitionKey(c.jobId, c.partitionId), this.attemptKey(c.writeId), this.key('leases'), this.key('garbage'), this.jobEpochKey(c.jobId)],
      [c.writeId, JSON.stringify(c), c.descriptor.producer.producerId, epochArg(descriptorEpoch(c.descriptor))],
    )) as string[];
    switch (reply[0]) {
      case 'committed':
        return { status: 'committed' };
      case 'conflict':
        return { status: 'conflict', winner: reply[1] ?? '' };
      case 'not-registered':
        return { status: 'not-registered' };
      case 'superseded':
        return { status: 'superseded', current: reply[1] ?? '' };
      case 'epoch-fenced':
        return { status: 'epoch-fenced', epoch: Number(reply[1]), newestEpoch: Number(reply[2]) };
      default:
        return { status: 'fenced', state: (reply[1] ?? 'missing') as AttemptState | 'missing' };
    }
  }

  async lookupPartition(jobId: string, partitionId: string): Promise<PartitionLookup> {
    const partition = this.partitionKey(jobId, partitionId);
    return this.call('lookupPartition', async (r) => {
      const [hash, ids, time] = (await r.multi().hgetall(partition).smembers(`${partition}:attempts`).time().exec())!.map(([error, value]) => {
        if (error) throw error;
        return value;
      }) as [Hash, string[], [string, string]];
      const attempts = await this.attempts(r, ids);
      return {
        registered: Object.keys(hash).length > 0,
        commit: toCommit(hash['commit'], hash['committedAt']),
        attempts,
        nowMs: toMs(time),
      };
    });
  }

  async listCommitted(jobId: string): Promise<CommitRecord[]> {
    return this.call('listCommitted', async (r) => {
      const ids = await r.smembers(this.jobPartitionsKey(jobId));
      if (ids.length === 0) return [];
      const pipeline = r.pipeline();
      for (const id of ids) pipeline.hmget(this.partitionKey(jobId, id), 'commit', 'committedAt');
      const out: CommitRecord[] = [];
      for (const [error, value] of (await pipeline.exec())!) {
        if (error) throw error;
        const [json, at] = value as [string | null, string | null];
        const commit = toCommit(json, at);
        if (commit !== undefined) out.push(commit);
      }
      return out;
    });
  }

  async releasePartition(jobId: string, partitionId: string, epoch?: number): Promise<ReleaseOutcome> {
    const partition = this.partitionKey(jobId, partitionId);
    const reply = (await this.script(
      'releasePartition',
      RELEASE_PARTITION,
      [partition, `${partition}:attempts`, this.jobPartitionsKey(jobId), this.key('leases'), this.key('garbage'), this.jobEpochKey(jobId)],
      [partitionId, this.key('attempt:'), epochArg(epoch)],
    )) as string[];
    if (reply[0] === 'fenced') return { status: 'fenced', newestEpoch: Number(reply[1]) };
    const ids = reply.slice(1);
    return this.call('releasePartition', async (r) => ({ status: 'released', attempts: await this.attempts(r, ids), nowMs: toMs(await r.time()) }));
  }

  async releaseJob(jobId: string, keepPersistent: boolean, epoch?: number): Promise<ReleaseOutcome> {
    const ids = await this.call('releaseJob', (r) => r.smembers(this.jobPartitionsKey(jobId)));
    const released: AttemptRecord[] = [];
    for (const partitionId of ids) {
      if (keepPersistent) {
        const persistent = await this.call('releaseJob', (r) => r.hget(this.partitionKey(jobId, partitionId), 'persistent'));
        if (persistent === '1') continue;
      }
      const outcome = await this.releasePartition(jobId, partitionId, epoch);
      if (outcome.status === 'fenced') return outcome;
      released.push(...outcome.attempts);
    }
    if (epoch !== undefined) {
      // a job with no partition left: the fencing check still holds before its leftovers go
      const newest = await this.call('releaseJob', (r) => r.get(this.jobEpochKey(jobId)));
      if (newest !== null && Number(newest) > epoch) return { status: 'fenced', newestEpoch: Number(newest) };
    }
    return this.call('releaseJob', async (r) => {
      // attempts of partitions released before whose objects are still there (a writer killed mid-write
      // keeps its lease, so its object outlived that release): the job's end takes them too
      const seen = new Set(released.map((a) => a.writeId));
      let cursor = '0';
      do {
        const [next, ids] = await r.sscan(this.key('garbage'), cursor, 'COUNT', 500);
        cursor = next;
        for (const attempt of await this.attempts(r, ids.filter((id) => !seen.has(id)))) {
          if (attempt.jobId === jobId && attempt.state === 'released' && !attempt.collected) released.push(attempt);
        }
      } while (cursor !== '0');
      if ((await r.scard(this.jobPartitionsKey(jobId))) === 0) await r.srem(this.key('jobs'), jobId);
      return { status: 'released', attempts: released, nowMs: toMs(await r.time()) };
    });
  }

  async collectGarbage(leaseMs: number, limit: number): Promise<AttemptRecord[]> {
    return this.call('collectGarbage', async (r) => {
      const now = toMs(await r.time());
      const cutoff = now - leaseMs;
      const expired = await r.zrangebyscore(this.key('leases'), '-inf', `(${cutoff}`, 'LIMIT', 0, limit);
      for (const id of expired) {
        await this.invoke(r, EXPIRE_ATTEMPT, [this.attemptKey(id), this.key('leases'), this.key('garbage')], [id, String(cutoff)]);
      }
      const out: AttemptRecord[] = [];
      let cursor = '0';
      do {
        const [next, ids] = await r.sscan(this.key('garbage'), cursor, 'COUNT', 500);
        cursor = next;
        for (const attempt of await this.attempts(r, ids)) {
          if (out.length < limit && isCollectible(attempt, now, leaseMs)) out.push(attempt);
        }
      } while (cursor !== '0' && out.length < limit);
      return out;
    });
  }

  async forgetAttempt(writeId: string): Promise<void> {
    await this.script('forgetAttempt', FORGET_ATTEMPT, [this.attemptKey(writeId), this.key('garbage')], [writeId]);
  }

  private async attempts(r: Redis, ids: readonly string[]): Promise<AttemptRecord[]> {
    if (ids.length === 0) return [];
    const pipeline = r.pipeline();
    for (const id of ids) pipeline.hgetall(this.attemptKey(id));
    const out: AttemptRecord[] = [];
    for (const [error, value] of (await pipeline.exec())!) {
      if (error) throw error;
      const attempt = toAttempt(value as Hash);
      if (attempt !== undefined) out.push(attempt);
    }
    return out;
  }

  private key(name: string): string {
    return this.prefix + name;
  }

  private jobPartitionsKey(jobId: string): string {
    return this.key(`job:${encodeKeySegment('jobId', jobId)}:partitions`);
  }

  /** The newest job master epoch seen for the job; outlives the job, so an old master stays fenced. */
  private jobEpochKey(jobId: string): string {
    return this.key(`job:${encodeKeySegment('jobId', jobId)}:epoch`);
  }

  private partitionKey(jobId: string, partitionId: string): string {
    return this.key(`partition:${encodeKeySegment('jobId', jobId)}:${encodeKeySegment('partitionId', partitionId)}`);
  }

  /** Write ids are generated (UUIDs); the release script builds attempt keys from them, so they are used as they are. */
  private attemptKey(writeId: string): string {
    if (!/^[A-Za-z0-9_-]{1,128}$/.test(writeId)) throw invalidArgument('writeId', `${JSON.stringify(writeId)} is not a generated write id`);
    return this.key(`attempt:${writeId}`);
  }

  private client(): Redis {
    if (this.redis === undefined) throw storeNotOpen(`metadata store ${this.description}`, this.closed);
    return this.redis;
  }

  private async call<T>(operation: string, body: (redis: Redis) => Promise<T>): Promise<T> {
    const redis = this.client();
    try {
      return await body(redis);
    } catch (cause) {
      throw storageUnavailable(this.description, operation, cause, isTransient(cause));
    }
  }

  /** `call` for a write the job relies on: it resolves once the URL's `minReplicas` replicas hold it (replicatedWrite). */
  private async write<T>(operation: string, body: (redis: Redis) => Promise<T>): Promise<T> {
    return this.call(operation, (redis) => replicatedWrite({ redis, ack: this.ack, description: this.description, operation, write: body }));
  }

  private invoke(redis: Redis, script: RedisScript, keys: readonly string[], args: readonly string[]): Promise<unknown> {
    const command = (redis as unknown as Record<string, (...a: string[]) => Promise<unknown>>)[script.name]!;
    return command.call(redis, ...keys, ...args);
  }

  private script(operation: string, script: RedisScript, keys: readonly string[], args: readonly string[]): Promise<unknown> {
    return this.write(operation, (r) => this.invoke(r, script, keys, args));
  }
}
