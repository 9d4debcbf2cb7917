import { readFileSync } from 'node:fs';
import {
  DEFAULT_BUFFER_SIZE_BYTES,
  DEFAULT_MAX_RECORD_BYTES,
  invalidConfig,
  validateBufferSize,
  validateMaxRecordBytes,
} from '@weft/shuffle-api';
import type { S3StoreOptions } from '../config/store-options.js';
import { checkSecret } from '../protocol/job-token.js';
import { MAX_LEASE_MS } from '../protocol/routes.js';
import { parseRedisUrl } from '../redis/redis-url.js';

/**
 * Options of the shuffle-server client (`createShuffleServerServiceFactory`). Plain JSON, so worker
 * processes rebuild the factory from `factory.reference`. Give `redis` (servers found in the registry,
 * commits listed from the commit index) or `servers` (a fixed list of URLs). Only the ShuffleMaster needs
 * the shared secret (it makes the job tokens that descriptors carry); it is never put in `reference`.
 */
export interface ShuffleServerClientOptions {
  /** The registry: `redis://host:port/db` or `redis+sentinel://host:port[,host:port…]/name/db` (parseRedisUrl). */
  readonly redis?: string;
  /** Prefix of the registry's keys. @defaultValue 'weft:shuffle-server:' */
  readonly redisKeyPrefix?: string;
  /** Fixed server URLs (`http(s)://host:port`) instead of a registry. */
  readonly servers?: readonly string[];
  /** The shared secret itself (kept out of `reference`). @defaultValue read from secretFile or secretEnv */
  readonly secret?: string;
  /** A file holding the shared secret. */
  readonly secretFile?: string;
  /** The environment variable holding the shared secret. @defaultValue 'WEFT_SHUFFLE_SECRET' */
  readonly secretEnv?: string;
  /** The servers' S3 tier (`s3://bucket/prefix` or S3 options), read when a server is gone. @defaultValue none */
  readonly tier?: string | S3StoreOptions;
  /** Most memory one writer holds (sort buffer, region being pushed, index). @defaultValue 33554432 (32 MiB) */
  readonly producerMemoryBytes?: number;
  /** Largest block. @defaultValue 32768 */
  readonly bufferSizeBytes?: number;
  /** @defaultValue 268435456 (256 MiB) */
  readonly maxRecordBytes?: number;
  /** LZ4 per block where it shrinks it, or none. @defaultValue 'lz4' */
  readonly compression?: 'lz4' | 'none';
  /** A partition up to this size is pushed in one replayable request (retried); larger ones stream. @defaultValue 4194304 */
  readonly maxBufferedPushBytes?: number;
  /** Size of one read of a fetch stream by a gate; a gate holds about two per input. @defaultValue 262144 */
  readonly readBufferBytes?: number;
  /** Pooled keep-alive connections per server. @defaultValue 32 */
  readonly connectionsPerServer?: number;
  /** @defaultValue 5000 */
  readonly connectTimeoutMs?: number;
  /** Time to wait for response headers (a commit copying to S3 answers when the copy is done). @defaultValue 120000 */
  readonly headersTimeoutMs?: number;
  /** Longest pause between two chunks of a response body. @defaultValue 60000 */
  readonly bodyTimeoutMs?: number;
  /** Idle keep-alive connections close after this. @defaultValue 30000 */
  readonly keepAliveTimeoutMs?: number;
  /** Tries of a request that failed with a retryable error (replayable requests only). @defaultValue 4 */
  readonly retryAttempts?: number;
  /** First pause between tries, doubled each time with jitter. @defaultValue 50 */
  readonly retryInitialDelayMs?: number;
  /** @defaultValue 2000 */
  readonly retryMaxDelayMs?: number;
  /** How long the master reuses the list of live servers. @defaultValue 1000 */
  readonly placementRefreshMs?: number;
  /**
   * A writer holds a lease on its attempt at the server, renewed every third of this, so readers that
   * come early wait for its commit; a producer that dies lets it run out, and readers then give up.
   * @defaultValue 30000
   */
  readonly attemptLeaseMs?: number;
  /** Longest pause between a reader's checks for a commit it waits for. @defaultValue 1000 */
  readonly commitPollMaxMs?: number;
  /**
   * Servers with less free disk (their registry record's `capacityBytes`) get no new partitions: a push
   * that fills a disk fails its task. 0 turns the floor off. @defaultValue 268435456 (256 MiB)
   */
  readonly minFreeBytes?: number;
  /**
   * A server a task (or the master) could not connect to is excluded from placement at once and probed
   * (GET /healthz) after this, then after twice the pause each time, up to probeMaxDelayMs; it is taken
   * back once it answers healthy and is registered. @defaultValue 500
   */
  readonly probeInitialDelayMs?: number;
  /** @defaultValue 10000 */
  readonly probeMaxDelayMs?: number;
  /**
   * Servers each partition is pushed to (`weft run --shuffle-replicas`): the same bytes to each, on
   * different hosts (URL hostnames) where the pool has them, else on different servers of one host;
   * committed on all, read from whichever answers. More than the live servers: a warning, and as many as
   * there are. At most 8. @defaultValue 1
   */
  readonly replicas?: number;
  /** TLS: a CA bundle (PEM file) to trust, e.g. for self-signed server certificates. */
  readonly caFile?: string;
}

export interface ResolvedShuffleServerClientOptions {
  readonly redis: string | undefined;
  readonly redisKeyPrefix: string | undefined;
  readonly servers: readonly string[];
  readonly secret: string | undefined;
  readonly secretFile: string | undefined;
  readonly secretEnv: string;
  readonly tier: string | S3StoreOptions | undefined;
  readonly producerMemoryBytes: number;
  readonly bufferSizeBytes: number;
  readonly maxRecordBytes: number;
  readonly compression: 'lz4' | 'none';
  readonly maxBufferedPushBytes: number;
  readonly readBufferBytes: number;
  readonly connectionsPerServer: number;
  readonly connectTimeoutMs: number;
  readonly headersTimeoutMs: number;
  readonly bodyTimeoutMs: number;
  readonly keepAliveTimeoutMs: number;
  readonly retryAttempts: number;
  readonly retryInitialDelayMs: number;
  readonly retryMaxDelayMs: number;
  readonly placementRefreshMs: number;
  readonly attemptLeaseMs: number;
  readonly commitPollMaxMs: number;
  readonly minFreeBytes: number;
  readonly probeInitialDelayMs: number;
  readonly probeMaxDelayMs: number;
  readonly replicas: number;
  readonly caFile: string | undefined;
}

export const DEFAULT_SHUFFLE_SERVER_CLIENT_OPTIONS = Object.freeze({
  secretEnv: 'WEFT_SHUFFLE_SECRET',
  producerMemoryBytes: 32 * 1024 * 1024,
  bufferSizeBytes: DEFAULT_BUFFER_SIZE_BYTES,
  maxRecordBytes: DEFAULT_MAX_RECORD_BYTES,
  compression: 'lz4' as const,
  maxBufferedPushBytes: 4 * 1024 * 1024,
  readBufferBytes: 256 * 1024,
  connectionsPerServer: 32,
  connectTimeoutMs: 5_000,
  headersTimeoutMs: 120_000,
  bodyTimeoutMs: 60_000,
  keepAliveTimeoutMs: 30_000,
  retryAttempts: 4,
  retryInitialDelayMs: 50,
  retryMaxDelayMs: 2_000,
  placementRefreshMs: 1_000,
  attemptLeaseMs: 30_000,
  commitPollMaxMs: 1_000,
  minFreeBytes: 256 * 1024 * 1024,
  probeInitialDelayMs: 500,
  probeMaxDelayMs: 10_000,
  replicas: 1,
});

/** Most copies of a partition `replicas` may ask for. */
export const MAX_REPLICAS = 8;

function integer(setting: string, value: unknown, min: number, max = Number.MAX_SAFE_INTEGER): number {
  if (typeof value !== 'number' || !Number.isInteger(value) || value < min || value > max) {
    throw invalidConfig(setting, `expected an integer in [${min}, ${max}], got ${JSON.stringify(value)}`);
  }
  return value;
}

function asConfig<T>(setting: string, check: () => T): T {
  try {
    return check();
  } catch (error) {
    throw invalidConfig(setting, (error as Error).message, error);
  }
}

/** Checks the options once, when the factory is created; SHF_ERR_INVALID_CONFIG naming the option. */
export function resolveShuffleServerClientOptions(options: ShuffleServerClientOptions = {}): ResolvedShuffleServerClientOptions {
  if (typeof options !== 'object' || options === null) throw invalidConfig('options', 'expected an object');
  const d = DEFAULT_SHUFFLE_SERVER_CLIENT_OPTIONS;
  if (options.redis !== undefined) parseRedisUrl(options.redis, 'redis');
  const servers = options.servers ?? [];
  if (!Array.isArray(servers)) throw invalidConfig('servers', 'expected a list of http(s)://host:port URLs');
  const normalized = servers.map((url, i) => {
    let parsed: URL;
    try {
      parsed = new URL(String(url));
    } catch (cause) {
      throw invalidConfig(`servers[${i}]`, `${JSON.stringify(url)} is not a URL`, cause);
    }
    if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') throw invalidConfig(`servers[${i}]`, `${JSON.stringify(url)} must be http(s)://host:port`);
    return parsed.origin;
  });
  if (options.redis === undefined && normalized.length === 0) throw invalidConfig('redis', 'give a registry (redis) or a list of servers');
  const compression = options.compression ?? d.compression;
  if (compression !== 'lz4' && compression !== 'none') throw invalidConfig('compression', `expected "lz4" or "none", got ${JSON.stringify(compression)}`);
  const retryInitialDelayMs = integer('retryInitialDelayMs', options.retryInitialDelayMs ?? d.retryInitialDelayMs, 0);
  if (options.secret !== undefined) checkSecret(options.secret, 'secret');
  const probeInitialDelayMs = integer('probeInitialDelayMs', options.probeInitialDelayMs ?? d.probeInitialDelayMs, 1, 3_600_000);
  return {
    redis: options.redis,
    redisKeyPrefix: options.redisKeyPrefix,
    servers: normalized,
    secret: options.secret,
    secretFile: options.secretFile,
    secretEnv: options.secretEnv ?? d.secretEnv,
    tier: options.tier,
    producerMemoryBytes: integer('producerMemoryBytes', options.producerMemoryBytes ?? d.producerMemoryBytes, 64 * 1024),
    bufferSizeBytes: asConfig('bufferSizeBytes', () => validateBufferSize('bufferSizeBytes', options.bufferSizeBytes ?? d.bufferSizeBytes)),
    maxRecordBytes: asConfig('maxRecordBytes', () => validateMaxRecordBytes('maxRecordBytes', options.maxRecordBytes ?? d.maxRecordBytes)),
    compression,
    maxBufferedPushBytes: integer('maxBufferedPushBytes', options.maxBufferedPushBytes ?? d.maxBufferedPushBytes, 0, 1024 ** 3),
    readBufferBytes: integer('readBufferBytes', options.readBufferBytes ?? d.readBufferBytes, 4096, 1024 ** 3),
    connectionsPerServer: integer('connectionsPerServer', options.connectionsPerServer ?? d.connectionsPerServer, 1, 10_000),
    connectTimeoutMs: integer('connectTimeoutMs', options.connectTimeoutMs ?? d.connectTimeoutMs, 1),
    headersTimeoutMs: integer('headersTimeoutMs', options.headersTimeoutMs ?? d.headersTimeoutMs, 1),
    bodyTimeoutMs: integer('bodyTimeoutMs', options.bodyTimeoutMs ?? d.bodyTimeoutMs, 1),
    keepAliveTimeoutMs: integer('keepAliveTimeoutMs', options.keepAliveTimeoutMs ?? d.keepAliveTimeoutMs, 1),
    retryAttempts: integer('retryAttempts', options.retryAttempts ?? d.retryAttempts, 1, 100),
    retryInitialDelayMs,
    retryMaxDelayMs: integer('retryMaxDelayMs', options.retryMaxDelayMs ?? d.retryMaxDelayMs, retryInitialDelayMs),
    placementRefreshMs: integer('placementRefreshMs', options.placementRefreshMs ?? d.placementRefreshMs, 0),
    attemptLeaseMs: integer('attemptLeaseMs', options.attemptLeaseMs ?? d.attemptLeaseMs, 30, MAX_LEASE_MS),
    commitPollMaxMs: integer('commitPollMaxMs', options.commitPollMaxMs ?? d.commitPollMaxMs, 1),
    minFreeBytes: integer('minFreeBytes', options.minFreeBytes ?? d.minFreeBytes, 0),
    probeInitialDelayMs,
    probeMaxDelayMs: integer('probeMaxDelayMs', options.probeMaxDelayMs ?? d.probeMaxDelayMs, probeInitialDelayMs, 3_600_000),
    replicas: integer('replicas', options.replicas ?? d.replicas, 1, MAX_REPLICAS),
    caFile: options.caFile,
  };
}

/**
 * The shared secret, for the master: `secret`, else the file, else the environment variable.
 * SHF_ERR_INVALID_CONFIG naming where it looked when there is none (or it is too short).
 */
export function readSecret(options: ResolvedShuffleServerClientOptions, env: Readonly<Record<string, string | undefined>> = process.env): Buffer {
  if (options.secret !== undefined) return checkSecret(options.secret, 'secret');
  if (options.secretFile !== undefined) {
    let text: string;
    try {
      text = readFileSync(options.secretFile, 'utf8');
    } catch (cause) {
      throw invalidConfig('secretFile', `cannot read ${options.secretFile}: ${(cause as Error).message}`, cause);
    }
    return checkSecret(text.trim(), 'secretFile');
  }
  const value = env[options.secretEnv];
  if (value === undefined || value === '') {
    throw invalidConfig(options.secretEnv, `the shuffle master needs the shared secret: set ${options.secretEnv} (or secretFile)`);
  }
  return checkSecret(value, options.secretEnv);
}
