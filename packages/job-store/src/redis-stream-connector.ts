import type { Redis } from 'ioredis';
import { type StreamConnector, type StreamConnectorReference, type StreamEntry, type StreamReader, type StreamReaderRequest, redactSourceUrl, sourceUnavailable } from '@weft/engine';
import { invalidConfig, type JsonValue } from '@weft/shuffle-api';
import { openRedisClient, parseRedisUrl, quitRedis } from '@weft/shuffle-remote/redis';

/** Options of a RedisStreamConnector. Unknown keys are refused. */
export interface RedisStreamConnectorOptions {
  /** How long connecting (and its PING) may take before the source fails with WEFT_ERR_SOURCE_UNAVAILABLE. @defaultValue 5000 */
  readonly connectTimeoutMs?: number;
  /** The time one command may take, on top of a blocking read's wait. @defaultValue 5000 */
  readonly commandTimeoutMs?: number;
}

export const DEFAULT_REDIS_STREAM_CONNECTOR_OPTIONS: Required<RedisStreamConnectorOptions> = Object.freeze({ connectTimeoutMs: 5_000, commandTimeoutMs: 5_000 });

/** Entries moved per XPENDING / XCLAIM round when claiming a gone consumer's entries. */
const CLAIM_BATCH = 500;
/** Ids per XACK. */
const ACK_BATCH = 1_000;

type RawEntry = [string, string[] | null];
/** RESP2: `[[stream, entries]]`; RESP3 (a map, flattened by ioredis): `[stream, entries]`; null when nothing came. */
type RawRead = [string, RawEntry[]][] | [string, RawEntry[]] | null;

/**
 * The StreamConnector for `redis://`, `rediss://` and `redis+sentinel://` URLs (parseRedisUrl): each
 * reader has its own connection (a blocking XREADGROUP holds it), made with the connection helpers of
 * `@weft/shuffle-remote/redis`, so it reconnects as the other Redis users do. The consumer group is
 * created when missing (XGROUP CREATE … MKSTREAM). `reference` lets worker processes and cluster
 * executors rebuild an equal one (createRedisStreamConnector with the same options).
 */
export class RedisStreamConnector implements StreamConnector {
  readonly schemes = ['redis', 'rediss', 'redis+sentinel'] as const;
  readonly reference: StreamConnectorReference;
  readonly #options: Required<RedisStreamConnectorOptions>;

  constructor(options: RedisStreamConnectorOptions = {}) {
    if (typeof options !== 'object' || options === null) throw invalidConfig('redisStreamConnector', 'options must be an object');
    for (const key of Object.keys(options)) {
      if (!(key in DEFAULT_REDIS_STREAM_CONNECTOR_OPTIONS)) throw invalidConfig(`redisStreamConnector.${key}`, `unknown option; expected one of ${Object.keys(DEFAULT_REDIS_STREAM_CONNECTOR_OPTIONS).join(', ')}`);
    }
    const resolved = { ...DEFAULT_REDIS_STREAM_CONNECTOR_OPTIONS };
    for (const key of ['connectTimeoutMs', 'commandTimeoutMs'] as const) {
      const value = options[key];
      if (value === undefined) continue;
      if (!Number.isInteger(value) || value < 1) throw invalidConfig(`redisStreamConnector.${key}`, `expected an integer >= 1, got ${String(value)}`);
      resolved[key] = value;
    }
    this.#options = resolved;
    this.reference = { module: '@weft/job-store', exportName: 'createRedisStreamConnector', options: { ...resolved } };
  }

  async open(request: StreamReaderRequest): Promise<StreamReader> {
    const fail = (problem: string, cause?: unknown): Error => sourceUnavailable({ operator: request.operator, url: request.url, stream: request.stream, problem, cause });
    let closing = false;
    let redis: Redis;
    try {
      const endpoint = parseRedisUrl(request.url, 'readRedisStream url');
      redis = await openRedisClient(endpoint, {
        connectTimeoutMs: this.#options.connectTimeoutMs,
        commandTimeoutMs: this.#options.commandTimeoutMs,
        setting: 'readRedisStream url',
        logger: request.logger.child({ component: 'redis stream source', stream: request.stream }),
        reconnect: () => !closing,
      });
    } catch (error) {
      // (the helpers' SHF_ERR_INVALID_CONFIG names their setting; the source's error names the operator and URL instead)
      throw fail(String((error as Error).message).replace(/^invalid setting readRedisStream url: /u, ''), error);
    }
    try {
      await redis.call('XGROUP', 'CREATE', request.stream, request.group, request.startId, 'MKSTREAM');
    } catch (error) {
      if (!String((error as Error).message).startsWith('BUSYGROUP')) {
        closing = true;
        await quitRedis(redis);
        throw fail(`creating consumer group ${request.group} failed: ${(error as Error).message}`, error);
      }
    }
    return new RedisStreamReader(redis, request, this.#options.commandTimeoutMs, () => (closing = true));
  }
}

/** A RedisStreamConnector from JSON options (its `reference` names this export); unknown keys are refused. */
export function createRedisStreamConnector(options: JsonValue = {}): RedisStreamConnector {
  return new RedisStreamConnector(options as RedisStreamConnectorOptions);
}

/** One consumer of one group, on its own connection. */
class RedisStreamReader implements StreamReader {
  /** Where the next readPending starts: after the last pending entry returned. */
  #pendingCursor = '0';
  #closed: Promise<void> | undefined;

  constructor(
    private readonly redis: Redis,
    private readonly request: StreamReaderRequest,
    private readonly commandTimeoutMs: number,
    private readonly onClose: () => void,
  ) {}

  async readPending(count: number): Promise<StreamEntry[]> {
    const { stream, group, consumer } = this.request;
    for (;;) {
      const reply = (await this.redis.call('XREADGROUP', 'GROUP', group, consumer, 'COUNT', count, 'STREAMS', stream, this.#pendingCursor)) as RawRead;
      const raw = entriesOf(reply);
      if (raw.length === 0) return [];
      this.#pendingCursor = (raw.at(-1) as RawEntry)[0];
      // an entry deleted (or trimmed) since it was delivered comes back without fields: nothing to emit, acknowledged
      const gone = raw.filter(([, fields]) => fields === null).map(([id]) => id);
      if (gone.length > 0) await this.ack(gone);
      const entries = decode(raw);
      if (entries.length > 0) return entries;
    }
  }

  async readNew(count: number, blockMs: number): Promise<StreamEntry[]> {
    const { stream, group, consumer } = this.request;
    // the connection's command timeout must outlast the wait
    const block = Math.max(1, Math.min(blockMs, Math.floor(this.commandTimeoutMs / 2)));
    const reply = (await this.redis.call('XREADGROUP', 'GROUP', group, consumer, 'COUNT', count, 'BLOCK', block, 'STREAMS', stream, '>')) as RawRead;
    return decode(entriesOf(reply));
  }

  async append(fields: Readonly<Record<string, string>>): Promise<string> {
    return String(await this.redis.call('XADD', this.request.stream, '*', ...Object.entries(fields).flat()));
  }

  async ack(ids: readonly string[]): Promise<void> {
    for (let i = 0; i < ids.length; i += ACK_BATCH) await this.redis.call('XACK', this.request.stream, this.request.group, ...ids.slice(i, i + ACK_BATCH));
  }

  async claimFrom(isOrphan: (consumer: string) => boolean): Promise<number> {
    const { stream, group, consumer } = this.request;
    const consumers = ((await this.redis.call('XINFO', 'CONSUMERS', stream, group)) as unknown[][]).map((c) => String(c[1]));
    let claimed = 0;
    for (const name of consumers) {
      if (name === consumer || !isOrphan(name)) continue;
      for (;;) {
        const pending = (await this.redis.call('XPENDING', stream, group, '-', '+', CLAIM_BATCH, name)) as [string, string, number, number][];
        if (pending.length === 0) break;
        await this.redis.call('XCLAIM', stream, group, consumer, 0, ...pending.map(([id]) => id), 'JUSTID');
        claimed += pending.length;
      }
      await this.redis.call('XGROUP', 'DELCONSUMER', stream, group, name);
      this.request.logger.info({ from: name, to: consumer, stream: redactSourceUrl(this.request.url) }, 'claimed the pending entries of a consumer that is gone');
    }
    return claimed;
  }

  close(): Promise<void> {
    this.#closed ??= (async () => {
      this.onClose();
      await quitRedis(this.redis);
    })();
    return this.#closed;
  }
}

function entriesOf(reply: RawRead): RawEntry[] {
  if (reply === null || reply.length === 0) return [];
  if (typeof reply[0] === 'string') return (reply[1] as RawEntry[] | undefined) ?? [];
  return ((reply[0] as [string, RawEntry[]])[1] as RawEntry[] | undefined) ?? [];
}

function decode(raw: readonly RawEntry[]): StreamEntry[] {
  const entries: StreamEntry[] = [];
  for (const [id, flat] of raw) {
    if (flat === null) continue;
    const fields: Record<string, string> = {};
    for (let i = 0; i + 1 < flat.length; i += 2) fields[flat[i] as string] = flat[i + 1] as string;
    entries.push({ id, fields });
  }
  return entries;
}
