import { isAbsolute, resolve } from 'node:path';
import { type Logger, invalidConfig, noopLogger } from '@weft/shuffle-api';
import type { S3StoreOptions } from '../config/store-options.js';
import { checkSecret } from '../protocol/job-token.js';
import { parseRedisUrl } from '../redis/redis-url.js';

/** How partitions reach the S3 tier. */
export type TierMode = 'write-through' | 'on-commit';

export interface ShuffleServerTierOptions {
  /** `s3://bucket/prefix` (endpoint and credentials from the AWS variables) or S3 options. */
  readonly store: string | S3StoreOptions;
  /**
   * `write-through`: pushed bytes go to S3 while the push runs (parts of a multipart upload, read back
   * from the disk file; the upload is completed at commit); `on-commit`: the committed object is copied
   * to S3 before the commit is acknowledged. Either way a partition is committed only once its S3 copy
   * is complete, and an attempt that never commits leaves no S3 object.
   * @defaultValue 'on-commit'
   */
  readonly mode?: TierMode;
  /**
   * S3 transfers (write-through parts, commit copies) run at once; more wait their turn (a commit then
   * answers later). Each streams from the disk file in 1 MiB pieces, holding about 3 MiB.
   * @defaultValue 16
   */
  readonly maxTransfers?: number;
  /**
   * Keep the disk copy of a committed partition. false (offload): once the S3 copy is complete and the
   * commit recorded, the disk copy is deleted and fetches are served from S3 with ranged reads.
   * @defaultValue true
   */
  readonly keepLocal?: boolean;
}

/**
 * Options of a shuffle server. Validated once, by `startShuffleServer`; each error is
 * SHF_ERR_INVALID_CONFIG naming the option.
 */
export interface ShuffleServerOptions {
  /** Directory holding the partitions (created when missing). */
  readonly dir: string;
  /** The shared secret job tokens are made with: at least 16 bytes. */
  readonly secret: string | Uint8Array;
  /** @defaultValue 0 (any free port) */
  readonly port?: number;
  /** Interface to listen on. @defaultValue '127.0.0.1' */
  readonly host?: string;
  /** The URL clients use, published in the registry. @defaultValue `http(s)://<host>:<port>` (the machine's hostname for 0.0.0.0 / ::) */
  readonly advertiseUrl?: string;
  /** Serve HTTPS with this certificate and key (PEM files). */
  readonly tls?: { readonly certFile: string; readonly keyFile: string };
  /** Register in this Redis (`redis://host:port/db` or `redis+sentinel://host:port[,…]/name/db`) and publish commits there. @defaultValue none (standalone) */
  readonly redis?: string;
  /** Prefix of the registry's Redis keys. @defaultValue 'weft:shuffle-server:' */
  readonly redisKeyPrefix?: string;
  /** Copy partitions to S3, so they outlive this server. */
  readonly tier?: ShuffleServerTierOptions;
  /** @defaultValue 2000 */
  readonly heartbeatIntervalMs?: number;
  /** A server whose heartbeat is older than this is gone. At least 2 × heartbeatIntervalMs. @defaultValue 10000 */
  readonly heartbeatTtlMs?: number;
  /** Largest push body. @defaultValue 17179869184 (16 GiB) */
  readonly maxBodyBytes?: number;
  /** Largest JSON body of a control request. @defaultValue 4194304 (4 MiB) */
  readonly maxJsonBodyBytes?: number;
  /** Pushes and fetches served at once; more are refused with 503 and Retry-After. @defaultValue 512 */
  readonly maxConcurrentStreams?: number;
  /** A connection with no traffic for this long is closed (a stalled client). @defaultValue 30000 */
  readonly idleTimeoutMs?: number;
  /** Time allowed for a request's headers. @defaultValue 10000 */
  readonly headersTimeoutMs?: number;
  /** Time allowed for a whole request, body included; 0 turns it off. @defaultValue 1800000 */
  readonly requestTimeoutMs?: number;
  /** How long an idle keep-alive connection stays open. @defaultValue 60000 */
  readonly keepAliveTimeoutMs?: number;
  /**
   * Memory all pushes and fetches share for their buffers. Each of n streams in flight gets a share of
   * streamMemoryBytes / n (capped by streamBufferBytes / readChunkBytes), so the total stays near this
   * however many streams there are: one stream runs with big buffers, 200 with small ones.
   * @defaultValue 67108864 (64 MiB)
   */
  readonly streamMemoryBytes?: number;
  /**
   * Most bytes one push queues before it stops reading from its socket (disk backpressure); a push holds
   * about twice its queue (the queue and the batch being written). @defaultValue 1048576
   */
  readonly streamBufferBytes?: number;
  /**
   * Largest disk read of a fetch. A fetch holds the piece being read, one read ahead and up to two waiting
   * in the socket: about 4 × its piece size. @defaultValue 1048576
   */
  readonly readChunkBytes?: number;
  /** Graceful shutdown waits this long for requests in flight before closing their connections. @defaultValue 30000 */
  readonly shutdownTimeoutMs?: number;
  /** A pushed attempt not committed within this time is deleted. @defaultValue 600000 */
  readonly uncommittedTtlMs?: number;
  /** fsync each pushed object before it can be committed. @defaultValue false */
  readonly syncOnPush?: boolean;
  /**
   * Check every pushed block's CRC32C as it arrives (a push with a damaged block is refused, 400). Off,
   * pushes are checked for structure only (headers, index, footer) and readers still verify every block:
   * about 0.2 s of CPU per GiB saved. @defaultValue true
   */
  readonly verifyPushChecksums?: boolean;
  /**
   * For fault tests only: at its fault points (push, commit, fetch: see SERVER_FAULT_POINTS) the server
   * asks Redis whether a fault was armed there for the partition and, if so, SIGKILLs or SIGSTOPs itself.
   * Needs `redis`. `weft shuffle-server` turns it on with `WEFT_SERVER_FAULT_HOOKS=1`. Never on in production:
   * anyone who can write to the Redis can then kill the server. @defaultValue false
   */
  readonly faultHooks?: boolean;
  readonly logger?: Logger;
}

export interface ResolvedShuffleServerOptions {
  readonly dir: string;
  readonly secret: Buffer;
  readonly port: number;
  readonly host: string;
  readonly advertiseUrl: string | undefined;
  readonly tls: { readonly certFile: string; readonly keyFile: string } | undefined;
  readonly redis: string | undefined;
  readonly redisKeyPrefix: string | undefined;
  readonly tier: { readonly store: string | S3StoreOptions; readonly mode: TierMode; readonly maxTransfers: number; readonly keepLocal: boolean } | undefined;
  readonly heartbeatIntervalMs: number;
  readonly heartbeatTtlMs: number;
  readonly maxBodyBytes: number;
  readonly maxJsonBodyBytes: number;
  readonly maxConcurrentStreams: number;
  readonly idleTimeoutMs: number;
  readonly headersTimeoutMs: number;
  readonly requestTimeoutMs: number;
  readonly keepAliveTimeoutMs: number;
  readonly streamMemoryBytes: number;
  readonly streamBufferBytes: number;
  readonly readChunkBytes: number;
  readonly shutdownTimeoutMs: number;
  readonly uncommittedTtlMs: number;
  readonly syncOnPush: boolean;
  readonly verifyPushChecksums: boolean;
  readonly faultHooks: boolean;
  readonly logger: Logger;
}

/** Default of `tier.maxTransfers`. */
export const DEFAULT_TIER_MAX_TRANSFERS = 16;

export const DEFAULT_SHUFFLE_SERVER_OPTIONS = Object.freeze({
  port: 0,
  host: '127.0.0.1',
  heartbeatIntervalMs: 2_000,
  heartbeatTtlMs: 10_000,
  maxBodyBytes: 16 * 1024 ** 3,
  maxJsonBodyBytes: 4 * 1024 * 1024,
  maxConcurrentStreams: 512,
  idleTimeoutMs: 30_000,
  headersTimeoutMs: 10_000,
  requestTimeoutMs: 1_800_000,
  keepAliveTimeoutMs: 60_000,
  streamMemoryBytes: 64 * 1024 * 1024,
  streamBufferBytes: 1024 * 1024,
  readChunkBytes: 1024 * 1024,
  shutdownTimeoutMs: 30_000,
  uncommittedTtlMs: 600_000,
  syncOnPush: false,
  verifyPushChecksums: true,
  faultHooks: false,
});

function integer(setting: string, value: unknown, min: number, max = Number.MAX_SAFE_INTEGER): number {
  if (typeof value !== 'number' || !Number.isInteger(value) || value < min || value > max) {
    throw invalidConfig(setting, `expected an integer in [${min}, ${max}], got ${JSON.stringify(value)}`);
  }
  return value;
}

function faultHooks(options: ShuffleServerOptions): boolean {
  const on = options.faultHooks ?? DEFAULT_SHUFFLE_SERVER_OPTIONS.faultHooks;
  if (typeof on !== 'boolean') throw invalidConfig('faultHooks', `expected true or false, got ${JSON.stringify(on)}`);
  if (on && options.redis === undefined) throw invalidConfig('faultHooks', 'fault points are armed in Redis: set redis too');
  return on;
}

/** Fills in defaults and checks every option; SHF_ERR_INVALID_CONFIG naming the first bad one. */
export function resolveShuffleServerOptions(options: ShuffleServerOptions): ResolvedShuffleServerOptions {
  if (typeof options !== 'object' || options === null) throw invalidConfig('options', 'expected an object');
  const d = DEFAULT_SHUFFLE_SERVER_OPTIONS;
  if (typeof options.dir !== 'string' || options.dir === '') throw invalidConfig('dir', 'expected a directory');
  const dir = resolve(options.dir);
  const secret = checkSecret(options.secret, 'secret');
  const host = options.host ?? d.host;
  if (typeof host !== 'string' || host === '') throw invalidConfig('host', 'expected a host name or address');
  let advertiseUrl: string | undefined;
  if (options.advertiseUrl !== undefined) {
    let url: URL;
    try {
      url = new URL(options.advertiseUrl);
    } catch (cause) {
      throw invalidConfig('advertiseUrl', `${JSON.stringify(options.advertiseUrl)} is not a URL`, cause);
    }
    if ((url.protocol !== 'http:' && url.protocol !== 'https:') || url.pathname !== '/' || url.search !== '') {
      throw invalidConfig('advertiseUrl', `${JSON.stringify(options.advertiseUrl)} must be http(s)://host:port`);
    }
    advertiseUrl = url.origin;
  }
  let tls: ResolvedShuffleServerOptions['tls'];
  if (options.tls !== undefined) {
    const { certFile, keyFile } = options.tls;
    if (typeof certFile !== 'string' || !isAbsolute(resolve(certFile))) throw invalidConfig('tls.certFile', 'expected a PEM file path');
    if (typeof keyFile !== 'string' || keyFile === '') throw invalidConfig('tls.keyFile', 'expected a PEM file path');
    tls = { certFile: resolve(certFile), keyFile: resolve(keyFile) };
  }
  if (options.redis !== undefined) parseRedisUrl(options.redis, 'redis');
  let tier: ResolvedShuffleServerOptions['tier'];
  if (options.tier !== undefined) {
    const mode = options.tier.mode ?? 'on-commit';
    if (mode !== 'write-through' && mode !== 'on-commit') throw invalidConfig('tier.mode', `expected "write-through" or "on-commit", got ${JSON.stringify(mode)}`);
    if (options.tier.store === undefined) throw invalidConfig('tier.store', 'expected s3://bucket/prefix');
    const keepLocal = options.tier.keepLocal ?? true;
    if (typeof keepLocal !== 'boolean') throw invalidConfig('tier.keepLocal', `expected true or false, got ${JSON.stringify(keepLocal)}`);
    tier = { store: options.tier.store, mode, maxTransfers: integer('tier.maxTransfers', options.tier.maxTransfers ?? DEFAULT_TIER_MAX_TRANSFERS, 1, 10_000), keepLocal };
  }
  const heartbeatIntervalMs = integer('heartbeatIntervalMs', options.heartbeatIntervalMs ?? d.heartbeatIntervalMs, 10);
  const heartbeatTtlMs = integer('heartbeatTtlMs', options.heartbeatTtlMs ?? Math.max(d.heartbeatTtlMs, 2 * heartbeatIntervalMs), 2 * heartbeatIntervalMs);
  return {
    dir,
    secret,
    port: integer('port', options.port ?? d.port, 0, 65_535),
    host,
    advertiseUrl,
    tls,
    redis: options.redis,
    redisKeyPrefix: options.redisKeyPrefix,
    tier,
    heartbeatIntervalMs,
    heartbeatTtlMs,
    maxBodyBytes: integer('maxBodyBytes', options.maxBodyBytes ?? d.maxBodyBytes, 1024),
    maxJsonBodyBytes: integer('maxJsonBodyBytes', options.maxJsonBodyBytes ?? d.maxJsonBodyBytes, 1024),
    maxConcurrentStreams: integer('maxConcurrentStreams', options.maxConcurrentStreams ?? d.maxConcurrentStreams, 1, 1_000_000),
    idleTimeoutMs: integer('idleTimeoutMs', options.idleTimeoutMs ?? d.idleTimeoutMs, 1),
    headersTimeoutMs: integer('headersTimeoutMs', options.headersTimeoutMs ?? d.headersTimeoutMs, 1),
    requestTimeoutMs: integer('requestTimeoutMs', options.requestTimeoutMs ?? d.requestTimeoutMs, 0),
    keepAliveTimeoutMs: integer('keepAliveTimeoutMs', options.keepAliveTimeoutMs ?? d.keepAliveTimeoutMs, 1),
    streamMemoryBytes: integer('streamMemoryBytes', options.streamMemoryBytes ?? d.streamMemoryBytes, 1024 * 1024, 1024 ** 4),
    streamBufferBytes: integer('streamBufferBytes', options.streamBufferBytes ?? d.streamBufferBytes, 16 * 1024, 1024 ** 3),
    readChunkBytes: integer('readChunkBytes', options.readChunkBytes ?? d.readChunkBytes, 4 * 1024, 1024 ** 3),
    shutdownTimeoutMs: integer('shutdownTimeoutMs', options.shutdownTimeoutMs ?? d.shutdownTimeoutMs, 0),
    uncommittedTtlMs: integer('uncommittedTtlMs', options.uncommittedTtlMs ?? d.uncommittedTtlMs, 1),
    syncOnPush: options.syncOnPush ?? d.syncOnPush,
    verifyPushChecksums: options.verifyPushChecksums ?? d.verifyPushChecksums,
    faultHooks: faultHooks(options),
    logger: options.logger ?? noopLogger,
  };
}
