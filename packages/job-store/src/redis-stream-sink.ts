import { randomBytes } from 'node:crypto';
import type { Redis } from 'ioredis';
import { type AbortLingeringRequest, EngineError, invalidEngineArgument, type TransactionHandle, type TwoPhaseCommitSink, type TwoPhaseCommitSinkContext, type TwoPhaseCommitSinkFactory } from '@weft/engine';
import { noopLogger } from '@weft/shuffle-api';
import { connectRedis } from '@weft/shuffle-remote/redis';

export interface RedisStreamSinkOptions<T> {
  /** The Redis the stream lives in (`redis://…`, `rediss://…`, `redis+sentinel://…`). */
  readonly url: string;
  /** The stream every committed record is XADDed to, as one field `value`. */
  readonly stream: string;
  /** Prefix of the sink's own keys: staged transactions (`<prefix>txn:<id>`) and commit markers (`<prefix>committed:<id>`). @defaultValue `<stream>:weft-2pc:` */
  readonly keyPrefix?: string;
  /** How long a commit marker is kept (a re-commit after a restore later than this would add the entries again). @defaultValue 604800 (7 days) */
  readonly markerTtlSeconds?: number;
  /** The entry's `value` field. @defaultValue strings as they are, anything else as JSON */
  readonly format?: (value: T) => string;
  /** Connect and command timeout. @defaultValue 5000 */
  readonly commandTimeoutMs?: number;
}

export const DEFAULT_REDIS_STREAM_SINK_OPTIONS = { markerTtlSeconds: 604_800, commandTimeoutMs: 5_000 } as const;

const KEYS = new Set(['url', 'stream', 'keyPrefix', 'markerTtlSeconds', 'format', 'commandTimeoutMs']);
/** Records staged with one RPUSH. */
const PUSH_BATCH = 1_000;
/** A commit whose marker changed under its WATCH (another committer raced it) is checked again this often. */
const COMMIT_TRIES = 5;

type ResolvedRedisStreamSinkOptions<T> = Required<Omit<RedisStreamSinkOptions<T>, 'format'>> & { readonly format: ((value: T) => string) | undefined };

interface StreamTransaction {
  readonly id: string;
  /** Records staged (set by preCommit). */
  readonly records?: number;
}

/**
 * A two-phase-commit sink appending to a Redis Stream exactly once: a transaction's records are buffered,
 * `preCommit` stages them in a list `<prefix>txn:<id>` (durable, not in the stream; the handle carries
 * their count), `commit` moves them
 * into the stream — WATCH on the transaction's marker `<prefix>committed:<id>`, then one MULTI with every
 * XADD, the marker's SET (with `markerTtlSeconds`) and the staging list's DEL — so a commit made again
 * after a restore finds the marker and adds nothing; `abort` deletes the staging list. Readers of the
 * stream see only committed transactions, each whole. A commit that finds neither the marker nor all the
 * staged records (an aborted transaction) fails with WEFT_ERR_SINK_FAILED and adds nothing. Use with `dataSet.sinkTo(redisStreamSink({ url, stream }))`.
 *
 * Transaction ids are `<jobId>/<operator>/<subtask>/<attempt>/<random>` (each segment with `%` and `/`
 * percent-encoded: `redisStreamTransactionPrefix`), so the staging is job-scoped:
 * `abortLingering` deletes the staging lists `<prefix>txn:<jobId>/<operator>/<subtask>/…` that it did not
 * begin and is not told to keep (SCAN, then DEL), and `weft gc` those of a job that ended
 * (`redisStreamStagingKeys`); the sink's staging (TwoPhaseCommitStaging) is `{ kind: 'redis-stream', url,
 * keyPrefix }`.
 *
 * Each sink instance (a subtask attempt; the job master's final commit) opens its own connection and
 * closes it in `close()`. Not in the contract: ordering between subtasks' transactions in the stream.
 */
export function redisStreamSink<T>(options: RedisStreamSinkOptions<T>): TwoPhaseCommitSinkFactory<T> {
  for (const key of Object.keys(options)) if (!KEYS.has(key)) throw invalidEngineArgument(`redisStreamSink.${key}`, 'unknown option');
  if (typeof options.url !== 'string' || options.url === '') throw invalidEngineArgument('redisStreamSink.url', 'expected a Redis URL');
  if (typeof options.stream !== 'string' || options.stream === '') throw invalidEngineArgument('redisStreamSink.stream', 'expected a stream key');
  const ttl = options.markerTtlSeconds ?? DEFAULT_REDIS_STREAM_SINK_OPTIONS.markerTtlSeconds;
  if (!Number.isSafeInteger(ttl) || ttl < 1) throw invalidEngineArgument('redisStreamSink.markerTtlSeconds', `an integer >= 1, got ${String(ttl)}`);
  const timeout = options.commandTimeoutMs ?? DEFAULT_REDIS_STREAM_SINK_OPTIONS.commandTimeoutMs;
  if (!Number.isSafeInteger(timeout) || timeout < 1) throw invalidEngineArgument('redisStreamSink.commandTimeoutMs', `an integer >= 1, got ${String(timeout)}`);
  if (options.format !== undefined && typeof options.format !== 'function') throw invalidEngineArgument('redisStreamSink.format', 'expected a function');
  const resolved: ResolvedRedisStreamSinkOptions<T> = { url: options.url, stream: options.stream, keyPrefix: options.keyPrefix ?? `${options.stream}:weft-2pc:`, markerTtlSeconds: ttl, commandTimeoutMs: timeout, format: options.format };
  return Object.assign((context: TwoPhaseCommitSinkContext) => new RedisStreamSink<T>(resolved, context), { staging: { kind: 'redis-stream', url: resolved.url, keyPrefix: resolved.keyPrefix } });
}

/** The glob that matches `text` literally (SCAN MATCH). */
function globLiteral(text: string): string {
  return text.replace(/[*?[\]\\]/gu, (c) => `\\${c}`);
}

/** One segment of a transaction id: `%` and `/` percent-encoded, so a segment never spans a `/`. */
function idSegment(value: string | number): string {
  return String(value).replace(/[%/]/gu, (c) => (c === '%' ? '%25' : '%2F'));
}

/**
 * The transaction-id prefix of a job's transactions (`[jobId]`) or one subtask's (`[jobId, operator,
 * subtask]`): each segment encoded and followed by `/`, so the prefix of operator `sink` subtask 1 is no
 * prefix of operator `sink/1`'s (`sink%2F1`).
 */
export function redisStreamTransactionPrefix(...segments: readonly (string | number)[]): string {
  return segments.map((s) => `${idSegment(s)}/`).join('');
}

/**
 * The staging lists of a redisStreamSink under `keyPrefix` whose transaction ids start with `idPrefix`
 * (`redisStreamTransactionPrefix`: a job's, or one subtask's), found with SCAN.
 */
export async function redisStreamStagingKeys(redis: Redis, keyPrefix: string, idPrefix: string): Promise<string[]> {
  const match = `${globLiteral(`${keyPrefix}txn:${idPrefix}`)}*`;
  const keys = new Set<string>();
  let cursor = '0';
  do {
    const [next, found] = await redis.scan(cursor, 'MATCH', match, 'COUNT', 1000);
    cursor = next;
    for (const key of found) keys.add(key);
  } while (cursor !== '0');
  return [...keys];
}

class RedisStreamSink<T> implements TwoPhaseCommitSink<T> {
  readonly #options: ResolvedRedisStreamSinkOptions<T>;
  readonly #context: TwoPhaseCommitSinkContext;
  readonly #buffers = new Map<string, string[]>();
  #redis: Promise<Redis> | undefined;

  constructor(options: ResolvedRedisStreamSinkOptions<T>, context: TwoPhaseCommitSinkContext) {
    this.#options = options;
    this.#context = context;
  }

  beginTransaction(): TransactionHandle {
    const { jobId, operatorName, subtask, attempt } = this.#context;
    const id = `${redisStreamTransactionPrefix(jobId, operatorName, subtask, attempt)}${randomBytes(6).toString('hex')}`;
    this.#buffers.set(id, []);
    return { id };
  }

  write(handle: TransactionHandle, value: T): void {
    const buffer = this.#buffers.get((handle as unknown as StreamTransaction).id);
    if (buffer === undefined) throw new Error(`transaction ${JSON.stringify(handle)} is not open in this sink`);
    const format = this.#options.format;
    buffer.push(format !== undefined ? format(value) : typeof value === 'string' ? value : JSON.stringify(value));
  }

  async preCommit(handle: TransactionHandle): Promise<TransactionHandle> {
    const { id } = handle as unknown as StreamTransaction;
    const buffer = this.#buffers.get(id) ?? [];
    this.#buffers.delete(id);
    const redis = await this.#connection();
    const key = this.#txnKey(id);
    for (let i = 0; i < buffer.length; i += PUSH_BATCH) await this.#send('stage', () => redis.rpush(key, ...buffer.slice(i, i + PUSH_BATCH)));
    return { id, records: buffer.length };
  }

  async commit(handle: TransactionHandle): Promise<void> {
    const { id, records } = handle as unknown as StreamTransaction;
    const redis = await this.#connection();
    const marker = this.#markerKey(id);
    const key = this.#txnKey(id);
    for (let attempt = 0; attempt < COMMIT_TRIES; attempt++) {
      await this.#send('watch', () => redis.watch(marker));
      if ((await this.#send('check', () => redis.exists(marker))) === 1) {
        await redis.unwatch();
        return; // committed before: a re-commit adds nothing
      }
      const values = await this.#send('read', () => redis.lrange(key, 0, -1));
      if (values.length !== records) {
        await redis.unwatch();
        // not committed and not (all) staged: aborted, expired, or never pre-committed — nothing is added
        throw new EngineError('WEFT_ERR_SINK_FAILED', `redis stream sink ${JSON.stringify(this.#context.operatorName)} (${this.#options.stream}): transaction ${id} is not committed and ${values.length} of its ${String(records)} records are staged`, { context: { operator: this.#context.operatorName, stream: this.#options.stream } });
      }
      const multi = redis.multi();
      for (const value of values) multi.xadd(this.#options.stream, '*', 'value', value);
      multi.set(marker, String(values.length), 'EX', this.#options.markerTtlSeconds);
      multi.del(key);
      const result = await this.#send('commit', () => multi.exec());
      if (result !== null) {
        const failed = result.find(([error]) => error !== null);
        if (failed !== undefined) throw failed[0] as Error;
        return;
      }
    }
    throw new Error(`transaction ${id}: its marker kept changing during ${COMMIT_TRIES} commits`);
  }

  async abort(handle: TransactionHandle): Promise<void> {
    const { id } = handle as unknown as StreamTransaction;
    this.#buffers.delete(id);
    const redis = await this.#connection();
    await this.#send('abort', () => redis.del(this.#txnKey(id)));
  }

  async abortLingering(request: AbortLingeringRequest): Promise<number> {
    const { jobId, operatorName, subtask } = this.#context;
    const redis = await this.#connection();
    const keep = new Set(request.keep.map((h) => this.#txnKey(String((h as unknown as StreamTransaction | null)?.id))));
    const mine = new Set([...this.#buffers.keys()].map((id) => this.#txnKey(id)));
    const keys = await this.#send('list the staged transactions', () => redisStreamStagingKeys(redis, this.#options.keyPrefix, redisStreamTransactionPrefix(jobId, operatorName, subtask)));
    const lingering = keys.filter((key) => !keep.has(key) && !mine.has(key));
    if (lingering.length > 0) await this.#send('abort the lingering transactions', () => redis.del(...lingering));
    return lingering.length;
  }

  async close(): Promise<void> {
    this.#buffers.clear();
    const redis = this.#redis;
    this.#redis = undefined;
    if (redis !== undefined) await redis.then((r) => r.quit()).catch(() => {});
  }

  #txnKey(id: string): string {
    return `${this.#options.keyPrefix}txn:${id}`;
  }

  #markerKey(id: string): string {
    return `${this.#options.keyPrefix}committed:${id}`;
  }

  #connection(): Promise<Redis> {
    this.#redis ??= connectRedis({ url: this.#options.url, connectTimeoutMs: this.#options.commandTimeoutMs, commandTimeoutMs: this.#options.commandTimeoutMs, setting: 'redisStreamSink.url', logger: noopLogger });
    return this.#redis;
  }

  async #send<R>(what: string, command: () => Promise<R>): Promise<R> {
    try {
      return await command();
    } catch (error) {
      throw new EngineError('WEFT_ERR_SINK_FAILED', `redis stream sink ${JSON.stringify(this.#context.operatorName)} (${this.#options.stream}): ${what} failed: ${(error as Error).message}`, { cause: error, context: { operator: this.#context.operatorName, stream: this.#options.stream } });
    }
  }
}
