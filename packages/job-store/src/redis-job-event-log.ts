import { randomUUID } from 'node:crypto';
import type { Redis } from 'ioredis';
import {
  type CheckpointStore,
  type DeleteJobRunOptions,
  isEngineError,
  type JobEventLog,
  type JobLog,
  type JobRunRecord,
  type LoggedJobEvent,
  type OpenJobLogRequest,
  type PublishedJobProgress,
  summarizeJobRun,
  summarizeUnreadableJobRun,
} from '@weft/engine';
import { closedError, isShuffleError } from '@weft/shuffle-api';
import { type RedisEndpoint, type ReplicaAckPolicy, openRedisClient, parseRedisUrl, replicatedWrite } from '@weft/shuffle-remote/redis';
import { decodeHistory, type DecodedHistory, type StoredEntry } from './decode-history.js';
import { epochMovedError, eventLogError, fencedError } from './event-log-errors.js';
import { type FencedJobLog, openedJobLog } from './fenced-job-log.js';
import { type JobEventLogOptions, type ResolvedJobEventLogOptions, resolveJobEventLogOptions } from './job-event-log-options.js';
import { RedisCheckpointStore } from './redis-checkpoint-store.js';
import { APPEND_SCRIPT, DELETE_RUN_SCRIPT, DROP_TAIL_SCRIPT, OPEN_SCRIPT, PROGRESS_SCRIPT, RENEW_SCRIPT } from './redis-scripts.js';
import { decodeProgress } from './decode-progress.js';
import { type StoreRetry, storeRetry } from './retry.js';

/** Redis replies worth retrying; connection failures (no reply at all) are always retried. */
const TRANSIENT_REPLY = /^(LOADING|TRYAGAIN|BUSY |MASTERDOWN|CLUSTERDOWN|READONLY|NOREPLICAS)/;

function isTransientRedis(error: unknown): boolean {
  if (isEngineError(error) || isShuffleError(error, 'SHF_ERR_NOT_REPLICATED')) return false;
  if ((error as { name?: unknown } | null)?.name !== 'ReplyError') return true;
  return TRANSIENT_REPLY.test(String((error as Error).message));
}

type StreamEntry = [id: string, fields: string[]];

/**
 * The job event log in Redis: one Stream per job (`<prefix>{<jobId>}:events`), its epoch in a counter
 * (`…:epoch`, INCR in `open()`), the lease's owner in a hash (`…:lease`), and every job id in a sorted set
 * (`<prefix>runs`), the live progress snapshot in a string with a TTL (`…:progress`, `progressTtlMs`). An
 * append is one Lua script that checks the epoch and XADDs atomically. Durable means
 * acknowledged by Redis: how much survives a Redis crash is the server's `appendonly` / `appendfsync`
 * setting (`appendfsync always` for no loss; the default `everysec` may lose the last second), and — with a
 * `redis+sentinel://` URL, or `?minReplicas=N` — acknowledged by that many replicas too (WAIT), so a
 * failover to a replica loses nothing `append()` resolved. While Redis is away (or failing over), commands
 * fail at once and are retried with backoff until `retryTimeoutMs`. Not for Redis Cluster.
 */
export class RedisJobEventLog implements JobEventLog {
  readonly description: string;
  readonly #options: ResolvedJobEventLogOptions;
  readonly #redis: Redis;
  readonly #logs = new Set<FencedJobLog>();
  #closing = false;
  #closed: Promise<void> | undefined;
  readonly #retry: StoreRetry;
  readonly #ack: ReplicaAckPolicy;

  private constructor(redis: Redis, endpoint: RedisEndpoint, options: ResolvedJobEventLogOptions) {
    this.#redis = redis;
    const description = endpoint.description;
    this.description = description;
    this.#ack = endpoint.ack;
    this.#options = options;
    this.#retry = storeRetry({ description, options, isTransient: isTransientRedis, checkOpen: () => this.#checkOpen() });
  }

  /**
   * Connects to `url` (`redis://[user:password@]host:port/db`, `rediss://` for TLS,
   * `redis+sentinel://host:port[,host:port…]/name/db` for a Sentinel-managed primary; parseRedisUrl) and
   * checks it with PING: SHF_ERR_INVALID_CONFIG naming `setting` when the URL is bad or Redis cannot be reached.
   */
  static async connect(request: { readonly url: string; readonly setting?: string }, options: JobEventLogOptions = {}): Promise<RedisJobEventLog> {
    const resolved = resolveJobEventLogOptions(options);
    const endpoint = parseRedisUrl(request.url, request.setting ?? 'meta');
    let closing = false;
    const redis = await openRedisClient(endpoint, {
      connectTimeoutMs: resolved.commandTimeoutMs,
      commandTimeoutMs: resolved.commandTimeoutMs,
      setting: request.setting ?? 'meta',
      logger: resolved.logger.child({ component: 'job event log' }),
      reconnect: () => !closing,
    });
    redis.on('end', () => (closing = true));
    return new RedisJobEventLog(redis, endpoint, resolved);
  }

  /** The completed checkpoints of `jobId` next to its event log, written by the job master of `epoch` (fenced like its appends; WAIT as they do). */
  checkpointStore(jobId: string, epoch: number): CheckpointStore {
    const base = `${this.#options.keyPrefix}{${jobId}}`;
    const keys = { epoch: this.#keys(jobId).epoch, ids: `${base}:checkpoint-id`, checkpoints: `${base}:checkpoints` };
    return new RedisCheckpointStore(this.#redis, keys, jobId, epoch, this.#retry, (operation, write) => this.#replicated(operation, write), this.description);
  }

  async open(request: OpenJobLogRequest): Promise<JobLog> {
    const { jobId, owner, ifEpoch } = request;
    const keys = this.#keys(jobId);
    // one token for every try of this call: a try that finds it recorded knows an earlier one went through
    const token = randomUUID();
    const now = this.#options.clock();
    const reply = await this.#retry('open', jobId, () => this.#replicated('open', () => OPEN_SCRIPT.run(this.#redis, [keys.epoch, keys.lease, keys.runs, keys.lastOp], [jobId, owner, now, ifEpoch ?? '', token])));
    if (Array.isArray(reply)) throw epochMovedError(jobId, 'open', ifEpoch ?? 0, Number(reply[1]));
    const epoch = Number(reply);
    const decoded = await this.#read(jobId);
    if (decoded.tornTail !== undefined) {
      const tail = decoded.tornTail;
      await this.#retry('open', jobId, () => this.#replicated('open', () => DROP_TAIL_SCRIPT.run(this.#redis, [keys.epoch, keys.events], [epoch, tail])));
    }
    return openedJobLog({
      jobId,
      epoch,
      owner,
      history: decoded.events,
      clock: this.#options.clock,
      logger: this.#options.logger,
      writer: {
        write: (event, checkOpen) => this.#write(jobId, event, checkOpen),
        renew: async (epoch, atMs) => {
          this.#checkOpen();
          return Number(await RENEW_SCRIPT.run(this.#redis, [keys.epoch, keys.lease], [String(epoch), String(atMs)])) === 1;
        },
        publish: async (snapshot) => {
          this.#checkOpen();
          return Number(await PROGRESS_SCRIPT.run(this.#redis, [keys.epoch, keys.progress], [String(snapshot.epoch), JSON.stringify(snapshot), String(this.#options.progressTtlMs)])) === 1;
        },
      },
      checkStoreOpen: () => this.#checkOpen(),
      openLogs: this.#logs,
    });
  }

  async readRun(jobId: string): Promise<readonly LoggedJobEvent[]> {
    return (await this.#read(jobId)).events;
  }

  async readProgress(jobId: string): Promise<PublishedJobProgress | undefined> {
    return decodeProgress(jobId, await this.#retry('readProgress', jobId, () => this.#redis.get(this.#keys(jobId).progress)));
  }

  async listRuns(): Promise<JobRunRecord[]> {
    const ids = await this.#retry('listRuns', undefined, () => this.#redis.zrange(`${this.#options.keyPrefix}runs`, '0', '-1'));
    const runs: JobRunRecord[] = [];
    for (const jobId of ids) runs.push(await this.#record(jobId));
    return runs.sort((a, b) => a.firstAtMs - b.firstAtMs || a.jobId.localeCompare(b.jobId));
  }

  async readRunRecord(jobId: string): Promise<JobRunRecord | undefined> {
    const known = await this.#retry('listRuns', jobId, () => this.#redis.zscore(`${this.#options.keyPrefix}runs`, jobId));
    return known === null ? undefined : this.#record(jobId);
  }

  async #record(jobId: string): Promise<JobRunRecord> {
    const keys = this.#keys(jobId);
    const [epoch, lease] = await this.#retry('listRuns', jobId, () => Promise.all([this.#redis.get(keys.epoch), this.#redis.hgetall(keys.lease)]));
    const record = { jobId, epoch: Number(epoch ?? 0), owner: lease['owner'], takenAtMs: Number(lease['takenAt'] ?? 0), renewedAtMs: lease['renewedAt'] === undefined ? undefined : Number(lease['renewedAt']) };
    try {
      return summarizeJobRun(record, await this.readRun(jobId));
    } catch (error) {
      return summarizeUnreadableJobRun(record, error);
    }
  }

  async deleteRun(jobId: string, options: DeleteJobRunOptions = {}): Promise<void> {
    const keys = this.#keys(jobId);
    // the epoch counter stays, one up: the deleted run's log is fenced, and a later run of the id must
    // still fence every earlier one (the shuffle remembers the epochs it saw), so it starts above them
    const token = randomUUID();
    const reply = await this.#retry('deleteRun', jobId, () => DELETE_RUN_SCRIPT.run(this.#redis, [keys.epoch, keys.events, keys.lease, keys.progress, keys.runs, keys.lastOp], [jobId, options.ifEpoch ?? '', token]));
    if (Array.isArray(reply)) throw epochMovedError(jobId, 'deleteRun', options.ifEpoch ?? 0, Number(reply[1]));
  }

  /** Closes every JobLog it opened (their pending appends stop retrying), then the connection (QUIT). Memoized. */
  close(): Promise<void> {
    this.#closing = true;
    return (this.#closed ??= (async () => {
      await Promise.allSettled([...this.#logs].map((log) => log.close()));
      try {
        await this.#redis.quit();
      } catch {
        this.#redis.disconnect();
      }
    })());
  }

  [Symbol.asyncDispose](): Promise<void> {
    return this.close();
  }

  #keys(jobId: string): { events: string; epoch: string; lease: string; progress: string; runs: string; lastOp: string } {
    const base = `${this.#options.keyPrefix}{${jobId}}`;
    return { events: `${base}:events`, epoch: `${base}:epoch`, lease: `${base}:lease`, progress: `${base}:progress`, runs: `${this.#options.keyPrefix}runs`, lastOp: `${base}:last-op` };
  }

  async #write(jobId: string, event: LoggedJobEvent, checkOpen: () => void): Promise<void> {
    const keys = this.#keys(jobId);
    const args = [event.epoch, event.seq, event.atMs, event.type, JSON.stringify(event.data), event.v];
    const reply = (await this.#retry('append', jobId, () => this.#replicated('append', () => APPEND_SCRIPT.run(this.#redis, [keys.epoch, keys.events], args)), checkOpen)) as [string, number];
    const [status, value] = reply;
    if (status === 'fenced') throw fencedError(jobId, event.epoch, Number(value));
    if (status === 'conflict') throw eventLogError({ jobId, description: this.description, problem: `seq ${event.seq} cannot follow seq ${value} already in the log` });
  }

  async #read(jobId: string): Promise<DecodedHistory> {
    const raw = (await this.#retry('readRun', jobId, () => this.#redis.xrange(this.#keys(jobId).events, '-', '+'))) as StreamEntry[];
    const entries = raw.map(([id, fields]): StoredEntry => {
      const f = new Map<string, string>();
      for (let i = 0; i + 1 < fields.length; i += 2) f.set(fields[i] as string, fields[i + 1] as string);
      const [v, seq, epoch, at, type, data] = ['v', 'seq', 'epoch', 'at', 'type', 'data'].map((name) => f.get(name));
      if (v === undefined || seq === undefined || epoch === undefined || at === undefined || type === undefined || data === undefined) {
        return { ok: false, problem: `fields missing (${[...f.keys()].join(', ') || 'none'})`, at: id };
      }
      let parsed: unknown;
      try {
        parsed = JSON.parse(data);
      } catch (error) {
        return { ok: false, problem: `data is not JSON (${(error as Error).message})`, at: id };
      }
      return { ok: true, value: { v: Number(v), seq: Number(seq), epoch: Number(epoch), atMs: Number(at), type, data: parsed }, at: id };
    });
    return decodeHistory({ jobId, description: this.description, entries, logger: this.#options.logger });
  }

  /**
   * A write that counts once the URL's `minReplicas` replicas hold it (replicatedWrite); a connection that
   * changed before they did is a transient failure (the write is tried again: open takes a newer epoch, an
   * append is found as a duplicate), too few replicas is WEFT_ERR_EVENT_LOG with the SHF_ERR_NOT_REPLICATED cause.
   */
  async #replicated<T>(operation: string, write: () => Promise<T>): Promise<T> {
    try {
      return await replicatedWrite({ redis: this.#redis, ack: this.#ack, description: this.description, operation, write: () => write() });
    } catch (error) {
      if (!isShuffleError(error, 'SHF_ERR_NOT_REPLICATED')) throw error;
      throw eventLogError({ description: this.description, problem: error.message, cause: error, context: { replicas: Number(error.context['replicas']) } });
    }
  }

  #checkOpen(): void {
    if (this.#closing) throw closedError(`job event log ${this.description}`);
  }
}
