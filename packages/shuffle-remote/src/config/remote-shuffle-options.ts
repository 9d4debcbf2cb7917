import { resolve } from 'node:path';
import {
  DEFAULT_MAX_RECORD_BYTES,
  type JsonValue,
  invalidConfig,
  validateBufferSize,
  validateMaxRecordBytes,
} from '@weft/shuffle-api';
import {
  type BlobStoreOptions,
  DEFAULT_S3_MIN_PART_BYTES,
  type MetadataStoreOptions,
  checkKnownKeys,
  validateBlobStoreOptions,
  validateMetadataStoreOptions,
} from './store-options.js';
import { parseMetaUrl, parseStoreUrl } from './store-url.js';

/**
 * Options of the remote (persisted, blocking) shuffle. Plain JSON, so a worker process rebuilds the same
 * factory from `factory.reference`. Validated once, when the factory is created; each error is
 * SHF_ERR_INVALID_CONFIG naming the option.
 */
export interface RemoteShuffleOptions {
  /**
   * Where data objects live: `file:///abs/dir`, `s3://bucket/prefix`, or an options object.
   * @defaultValue `file://<cwd>/.weft/shuffle` (resolved when the factory is created)
   */
  readonly store?: string | BlobStoreOptions;
  /**
   * Where partition metadata lives: `sqlite:///abs/file.db`, `redis://host:port/db`, or an options object.
   * @defaultValue `sqlite://<cwd>/.weft/shuffle-meta.db` (resolved when the factory is created)
   */
  readonly meta?: string | MetadataStoreOptions;
  /**
   * The most memory one writer holds, whatever its partition's size: its sort buffer, the region being
   * encoded and written, the S3 part tail, and the index. `metrics.memoryLimitBytes` reports it. With S3
   * and `store.upload: 'multipart'` it must be at least 2 × minPartBytes + 1 MiB. A writer with very many
   * subpartitions needs at least 5 × 4 × numberOfSubpartitions × 512 bytes and reports that as its limit
   * when larger.
   *
   * One exception, since a record is copied whole before `emitRecord` returns: a record larger than
   * what is left of its region's share (a fifth of this; a quarter, less the S3 part tail, with
   * `upload: 'multipart'` or a shuffle-server push). Until its region is spilled the writer then holds
   * up to this limit plus that record framed in whole blocks — `ceil((length + 4) / blockBytes) ×
   * blockBytes`, blocks being at most `bufferSizeBytes`, so less than `length + 4 + bufferSizeBytes` —
   * once per subpartition for `broadcastRecord`. Such a region is spilled at once, one region share at a
   * time (no second copy for LZ4), `emitRecord` returns false, and `ready()` resolves once the writer is
   * back within this limit.
   * @defaultValue 67108864 (64 MiB)
   */
  readonly producerMemoryBytes?: number;
  /**
   * Largest block (one framed buffer, FRAMING.md; the unit of CRC32C and LZ4). Large blocks amortise the
   * per-block work (checksum calls, headers, LZ4 set-up) over more records; a writer with many
   * subpartitions shrinks its blocks to fit its budget. @defaultValue 262144 (256 KiB)
   */
  readonly bufferSizeBytes?: number;
  /** Largest record a writer accepts and a reader expects. @defaultValue 268435456 (256 MiB) */
  readonly maxRecordBytes?: number;
  /**
   * LZ4 per block (kept raw where it does not shrink), or none. The default depends on the store
   * (`DEFAULT_COMPRESSION_BY_STORE`): none for a local directory, whose writes and reads are page-cache
   * copies faster than LZ4 (on 1 KiB text records LZ4 costs ~3 s of CPU per GiB compressed and ~1.3 s
   * decompressed, a page-cache write + read ~0.35 s); LZ4 for S3, where halving the bytes sent pays.
   * @defaultValue 'none' for `file://`, 'lz4' for `s3://`
   */
  readonly compression?: 'lz4' | 'none';
  /** Size of one ranged read by a consumer; a gate holds about two. @defaultValue 4194304 (4 MiB) */
  readonly readBufferBytes?: number;
  /**
   * A writer that has not renewed its lease for this long is presumed dead: a sweep may collect its data.
   * Writers renew every quarter of it. @defaultValue 60000
   */
  readonly attemptLeaseMs?: number;
  /** How often a started master sweeps garbage (after the sweep at start, unless sweepOnStart is false); 0 turns it off. @defaultValue 300000 */
  readonly sweepIntervalMs?: number;
  /** Whether `start()` sweeps garbage first (a tool that only looks, such as `weft gc --dry-run`, turns it off). @defaultValue true */
  readonly sweepOnStart?: boolean;
  /** Longest pause between a gate's checks for a commit it waits for. @defaultValue 1000 */
  readonly commitPollMaxMs?: number;
  /** Tries of a metadata operation that failed because the store was unreachable. @defaultValue 8 */
  readonly metaRetryAttempts?: number;
  /** First pause between those tries; doubles up to metaRetryMaxDelayMs. @defaultValue 50 */
  readonly metaRetryInitialDelayMs?: number;
  /** @defaultValue 2000 */
  readonly metaRetryMaxDelayMs?: number;
}

export interface ResolvedRemoteShuffleOptions {
  readonly store: BlobStoreOptions;
  readonly meta: MetadataStoreOptions;
  readonly producerMemoryBytes: number;
  readonly bufferSizeBytes: number;
  readonly maxRecordBytes: number;
  readonly compression: 'lz4' | 'none';
  readonly readBufferBytes: number;
  readonly attemptLeaseMs: number;
  readonly sweepIntervalMs: number;
  readonly sweepOnStart: boolean;
  readonly commitPollMaxMs: number;
  readonly metaRetryAttempts: number;
  readonly metaRetryInitialDelayMs: number;
  readonly metaRetryMaxDelayMs: number;
}

export const DEFAULT_REMOTE_SHUFFLE_OPTIONS = Object.freeze({
  producerMemoryBytes: 64 * 1024 * 1024,
  bufferSizeBytes: 256 * 1024,
  maxRecordBytes: DEFAULT_MAX_RECORD_BYTES,
  readBufferBytes: 4 * 1024 * 1024,
  attemptLeaseMs: 60_000,
  sweepIntervalMs: 300_000,
  sweepOnStart: true,
  commitPollMaxMs: 1_000,
  metaRetryAttempts: 8,
  metaRetryInitialDelayMs: 50,
  metaRetryMaxDelayMs: 2_000,
} as const);

/**
 * The compression a store gets when `compression` is not given: LZ4 only where it pays — storage slower
 * than LZ4 itself (S3, over a network). A local directory is written and read through the page cache at
 * several GB/s, faster than LZ4 compresses (~0.4 GB/s on text here): there LZ4 only costs CPU.
 */
export const DEFAULT_COMPRESSION_BY_STORE = Object.freeze({ file: 'none', s3: 'lz4' } as const);

function integer(name: string, value: unknown, min: number, max = Number.MAX_SAFE_INTEGER): number {
  if (typeof value !== 'number' || !Number.isInteger(value) || value < min || value > max) {
    throw invalidConfig(name, `expected an integer in [${min}, ${max}], got ${JSON.stringify(value)}`);
  }
  return value;
}

function boolean(name: string, value: unknown): boolean {
  if (typeof value !== 'boolean') throw invalidConfig(name, `expected true or false, got ${JSON.stringify(value)}`);
  return value;
}

function asConfig<T>(name: string, check: () => T): T {
  try {
    return check();
  } catch (error) {
    const e = error as { code?: string; message?: string };
    if (e.code === 'SHF_ERR_INVALID_ARGUMENT') throw invalidConfig(name, e.message ?? String(error), error);
    throw error;
  }
}

/** Validates options and fills in defaults; SHF_ERR_INVALID_CONFIG naming the first bad option. */
const REMOTE_SHUFFLE_OPTION_KEYS = [
  'store', 'meta', 'producerMemoryBytes', 'bufferSizeBytes', 'maxRecordBytes', 'compression', 'readBufferBytes',
  'attemptLeaseMs', 'sweepIntervalMs', 'sweepOnStart', 'commitPollMaxMs', 'metaRetryAttempts', 'metaRetryInitialDelayMs', 'metaRetryMaxDelayMs',
] as const;

export function resolveRemoteShuffleOptions(input: unknown, cwd: string = process.cwd()): ResolvedRemoteShuffleOptions {
  if (input !== undefined && (typeof input !== 'object' || input === null || Array.isArray(input))) {
    throw invalidConfig('options', 'expected an object');
  }
  const o = (input ?? {}) as RemoteShuffleOptions;
  checkKnownKeys('options', o, REMOTE_SHUFFLE_OPTION_KEYS);
  const store =
    o.store === undefined
      ? ({ type: 'file', dir: resolve(cwd, '.weft', 'shuffle') } as const)
      : typeof o.store === 'string'
        ? parseStoreUrl(o.store)
        : validateBlobStoreOptions(o.store);
  const meta =
    o.meta === undefined
      ? ({ type: 'sqlite', path: resolve(cwd, '.weft', 'shuffle-meta.db') } as const)
      : typeof o.meta === 'string'
        ? parseMetaUrl(o.meta)
        : validateMetadataStoreOptions(o.meta);
  const d = DEFAULT_REMOTE_SHUFFLE_OPTIONS;
  const producerMemoryBytes = integer('producerMemoryBytes', o.producerMemoryBytes ?? d.producerMemoryBytes, 64 * 1024);
  if (store.type === 's3' && store.upload === 'multipart') {
    const minPart = store.minPartBytes ?? DEFAULT_S3_MIN_PART_BYTES;
    if (producerMemoryBytes < 2 * minPart + 1024 * 1024) {
      throw invalidConfig('producerMemoryBytes', `${producerMemoryBytes} is too small for S3 parts of ${minPart} bytes (store.upload "multipart"); use at least ${2 * minPart + 1024 * 1024}`);
    }
  }
  const compression = o.compression ?? DEFAULT_COMPRESSION_BY_STORE[store.type];
  if (compression !== 'lz4' && compression !== 'none') throw invalidConfig('compression', `expected "lz4" or "none", got ${JSON.stringify(compression)}`);
  const metaRetryInitialDelayMs = integer('metaRetryInitialDelayMs', o.metaRetryInitialDelayMs ?? d.metaRetryInitialDelayMs, 0);
  return {
    store,
    meta,
    producerMemoryBytes,
    bufferSizeBytes: asConfig('bufferSizeBytes', () => validateBufferSize('bufferSizeBytes', o.bufferSizeBytes ?? d.bufferSizeBytes)),
    maxRecordBytes: asConfig('maxRecordBytes', () => validateMaxRecordBytes('maxRecordBytes', o.maxRecordBytes ?? d.maxRecordBytes)),
    compression,
    readBufferBytes: integer('readBufferBytes', o.readBufferBytes ?? d.readBufferBytes, 4096, 1024 ** 3),
    attemptLeaseMs: integer('attemptLeaseMs', o.attemptLeaseMs ?? d.attemptLeaseMs, 100),
    sweepIntervalMs: integer('sweepIntervalMs', o.sweepIntervalMs ?? d.sweepIntervalMs, 0),
    sweepOnStart: boolean('sweepOnStart', o.sweepOnStart ?? d.sweepOnStart),
    commitPollMaxMs: integer('commitPollMaxMs', o.commitPollMaxMs ?? d.commitPollMaxMs, 1),
    metaRetryAttempts: integer('metaRetryAttempts', o.metaRetryAttempts ?? d.metaRetryAttempts, 1, 100),
    metaRetryInitialDelayMs,
    metaRetryMaxDelayMs: integer('metaRetryMaxDelayMs', o.metaRetryMaxDelayMs ?? d.metaRetryMaxDelayMs, metaRetryInitialDelayMs),
  };
}

/** The resolved options as JSON, for `factory.reference`. */
export function optionsAsJson(options: ResolvedRemoteShuffleOptions): JsonValue {
  return JSON.parse(JSON.stringify(options)) as JsonValue;
}
