import { isAbsolute } from 'node:path';
import { invalidConfig } from '@weft/shuffle-api';
import { parseRedisUrl } from '../redis/redis-url.js';

/** A local directory holding the data objects (the embedded default). Plain JSON. */
export interface FileStoreOptions {
  readonly type: 'file';
  /** Absolute directory; created when missing. */
  readonly dir: string;
  /** fsync each object on completion (survive machine crashes, not only process crashes). @defaultValue false */
  readonly syncOnComplete?: boolean;
}

/**
 * An S3 bucket (AWS or S3-compatible). Plain JSON. Settings left out come from the standard AWS
 * variables when the store is created: `AWS_ENDPOINT_URL_S3` or `AWS_ENDPOINT_URL`, `AWS_REGION` (or
 * `AWS_DEFAULT_REGION`), `AWS_ACCESS_KEY_ID`, `AWS_SECRET_ACCESS_KEY`, `AWS_SESSION_TOKEN`.
 */
export interface S3StoreOptions {
  readonly type: 's3';
  readonly bucket: string;
  /** Key prefix for every object, e.g. `shuffle/`. @defaultValue '' */
  readonly prefix?: string;
  /** `http(s)://host:port` of an S3-compatible server. @defaultValue AWS S3 (or the environment's) */
  readonly endpoint?: string;
  /** @defaultValue the environment's, else 'us-east-1' */
  readonly region?: string;
  readonly accessKeyId?: string;
  readonly secretAccessKey?: string;
  readonly sessionToken?: string;
  /** Path-style URLs (`endpoint/bucket/key`). @defaultValue true with an endpoint, false for AWS */
  readonly forcePathStyle?: boolean;
  /** Smallest multipart part; a smaller tail is held until more comes. At least 5 MiB. @defaultValue 8 MiB */
  readonly minPartBytes?: number;
  /** @defaultValue 5000 */
  readonly connectTimeoutMs?: number;
  /** @defaultValue 120000 */
  readonly requestTimeoutMs?: number;
  /** Attempts per request, the SDK's own retries included. @defaultValue 3 */
  readonly maxAttempts?: number;
  /**
   * How a shuffle writer uploads a partition. `'spill'`: regions are spilled to a local temporary file
   * (the producer's memory stays bounded, the disk holds the partition), and at `finish()` the partition
   * is uploaded as one object, subpartition after subpartition, with one streamed PutObject of known
   * length — a consumer then reads its subpartitions with one ranged GET. Objects larger than
   * `maxPutBytes` go up as a multipart upload from the same file. `'multipart'`: no local disk; regions
   * stream out as multipart-upload parts while the producer runs (the data object then has one index
   * entry per region and subpartition). @defaultValue 'spill'
   */
  readonly upload?: 'spill' | 'multipart';
  /**
   * Directory of the spill files (`upload: 'spill'`); a file is unlinked as soon as it is opened. Where
   * the temporary directory is a tmpfs the spills take RAM: give a directory on disk.
   * @defaultValue the system's temporary directory
   */
  readonly spillDir?: string;
  /** Largest object uploaded with one PutObject (`upload: 'spill'`). @defaultValue 5 GiB (S3's limit) */
  readonly maxPutBytes?: number;
}

export type BlobStoreOptions = FileStoreOptions | S3StoreOptions;

/** S3StoreOptions with the environment applied and defaults filled in. */
export interface ResolvedS3StoreOptions {
  readonly bucket: string;
  readonly prefix: string;
  readonly endpoint: string | undefined;
  readonly region: string;
  /** The setting the endpoint came from, for errors: `store.endpoint`, `AWS_ENDPOINT_URL_S3`, `AWS_ENDPOINT_URL`. @defaultValue 'store.endpoint' */
  readonly endpointSetting?: string;
  /** The setting the region came from, for errors: `store.region`, `AWS_REGION`, `AWS_DEFAULT_REGION` (`AWS_REGION` when defaulted). @defaultValue 'store.region' */
  readonly regionSetting?: string;
  readonly credentials: { readonly accessKeyId: string; readonly secretAccessKey: string; readonly sessionToken?: string } | undefined;
  readonly forcePathStyle: boolean;
  readonly minPartBytes: number;
  readonly connectTimeoutMs: number;
  readonly requestTimeoutMs: number;
  readonly maxAttempts: number;
  readonly upload: 'spill' | 'multipart';
  /** undefined: the system's temporary directory, at the time of use. */
  readonly spillDir: string | undefined;
  readonly maxPutBytes: number;
}

/** An embedded SQLite database file (the embedded default). Plain JSON. */
export interface SqliteMetaOptions {
  readonly type: 'sqlite';
  /** Absolute path of the database file; its directory is created when missing. */
  readonly path: string;
  /** How long a writer waits for another process's lock. @defaultValue 10000 */
  readonly busyTimeoutMs?: number;
}

/** Redis (a single server, a managed endpoint, or a Sentinel-managed primary). Plain JSON. */
export interface RedisMetaOptions {
  readonly type: 'redis';
  /**
   * `redis://[user:password@]host:port/db` (or `rediss://` for TLS), or
   * `redis+sentinel://host:port[,host:port…]/name/db`; `?minReplicas=N` (parseRedisUrl).
   */
  readonly url: string;
  /** Prefix of every key. @defaultValue 'weft:' */
  readonly keyPrefix?: string;
  /** @defaultValue 3000 */
  readonly connectTimeoutMs?: number;
  /** A command without an answer within this time fails (and is retried). @defaultValue 10000 */
  readonly commandTimeoutMs?: number;
}

export type MetadataStoreOptions = SqliteMetaOptions | RedisMetaOptions;

export const DEFAULT_S3_MIN_PART_BYTES = 8 * 1024 * 1024;
/** S3's largest single PutObject. */
export const S3_MAX_PUT_BYTES = 5 * 1024 ** 3;
const MIN_PART_FLOOR = 5 * 1024 * 1024;

type Env = Readonly<Record<string, string | undefined>>;

function nonEmpty(value: string | undefined): string | undefined {
  return value === undefined || value.trim() === '' ? undefined : value.trim();
}

/** Checks an endpoint URL; SHF_ERR_INVALID_CONFIG naming `setting` unless it is http(s)://host[:port][/]. */
export function checkEndpoint(setting: string, value: string): string {
  let url: URL;
  try {
    url = new URL(value);
  } catch (cause) {
    throw invalidConfig(setting, `${JSON.stringify(value)} is not a URL`, cause);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    throw invalidConfig(setting, `${JSON.stringify(value)} must start with http:// or https://`);
  }
  if (url.hostname === '') throw invalidConfig(setting, `${JSON.stringify(value)} has no host`);
  return value.replace(/\/+$/, '');
}

function checkInteger(setting: string, value: unknown, min: number, max = Number.MAX_SAFE_INTEGER): number {
  if (typeof value !== 'number' || !Number.isInteger(value) || value < min || value > max) {
    throw invalidConfig(setting, `expected an integer in [${min}, ${max}], got ${JSON.stringify(value)}`);
  }
  return value;
}

function checkUpload(value: unknown): 'spill' | 'multipart' {
  if (value === undefined) return 'spill';
  if (value !== 'spill' && value !== 'multipart') throw invalidConfig('store.upload', `expected "spill" or "multipart", got ${JSON.stringify(value)}`);
  return value;
}

function checkSpillDir(value: unknown): string | undefined {
  if (value === undefined) return undefined;
  if (typeof value !== 'string' || !isAbsolute(value)) throw invalidConfig('store.spillDir', `expected an absolute directory, got ${JSON.stringify(value)}`);
  return value;
}

/** Applies the AWS environment and defaults to S3 options; SHF_ERR_INVALID_CONFIG naming the setting. */
export function resolveS3StoreOptions(options: S3StoreOptions, env: Env = process.env): ResolvedS3StoreOptions {
  if (typeof options.bucket !== 'string' || options.bucket.trim() === '') {
    throw invalidConfig('store.bucket', 'an S3 store needs a bucket (s3://<bucket>/<prefix>)');
  }
  if (!/^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$/.test(options.bucket)) {
    throw invalidConfig('store.bucket', `${JSON.stringify(options.bucket)} is not a valid bucket name`);
  }
  let prefix = options.prefix ?? '';
  if (typeof prefix !== 'string') throw invalidConfig('store.prefix', 'expected a string');
  prefix = prefix.replace(/^\/+/, '');
  if (prefix !== '' && !prefix.endsWith('/')) prefix += '/';
  if (prefix.split('/').some((segment) => segment === '.' || segment === '..')) {
    throw invalidConfig('store.prefix', `${JSON.stringify(options.prefix)} must not contain . or .. segments`);
  }
  const endpointSetting = options.endpoint !== undefined ? 'store.endpoint' : nonEmpty(env['AWS_ENDPOINT_URL_S3']) ? 'AWS_ENDPOINT_URL_S3' : 'AWS_ENDPOINT_URL';
  const rawEndpoint = options.endpoint ?? nonEmpty(env['AWS_ENDPOINT_URL_S3']) ?? nonEmpty(env['AWS_ENDPOINT_URL']);
  const endpoint = rawEndpoint === undefined ? undefined : checkEndpoint(endpointSetting, rawEndpoint);
  const region = options.region ?? nonEmpty(env['AWS_REGION']) ?? nonEmpty(env['AWS_DEFAULT_REGION']) ?? 'us-east-1';
  const regionSetting =
    options.region !== undefined ? 'store.region' : nonEmpty(env['AWS_REGION']) === undefined && nonEmpty(env['AWS_DEFAULT_REGION']) !== undefined ? 'AWS_DEFAULT_REGION' : 'AWS_REGION';
  const accessKeyId = options.accessKeyId ?? nonEmpty(env['AWS_ACCESS_KEY_ID']);
  const secretAccessKey = options.secretAccessKey ?? nonEmpty(env['AWS_SECRET_ACCESS_KEY']);
  if ((accessKeyId === undefined) !== (secretAccessKey === undefined)) {
    throw invalidConfig(
      accessKeyId === undefined ? 'store.accessKeyId' : 'store.secretAccessKey',
      'give both an access key id and a secret access key (or AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY), or neither',
    );
  }
  const sessionToken = options.sessionToken ?? nonEmpty(env['AWS_SESSION_TOKEN']);
  const credentials =
    accessKeyId !== undefined && secretAccessKey !== undefined
      ? { accessKeyId, secretAccessKey, ...(sessionToken === undefined ? {} : { sessionToken }) }
      : undefined;
  return {
    bucket: options.bucket,
    prefix,
    endpoint,
    region,
    endpointSetting: rawEndpoint === undefined ? 'store.endpoint' : endpointSetting,
    regionSetting,
    credentials,
    forcePathStyle: options.forcePathStyle ?? endpoint !== undefined,
    minPartBytes: checkInteger('store.minPartBytes', options.minPartBytes ?? DEFAULT_S3_MIN_PART_BYTES, MIN_PART_FLOOR, 5 * 1024 ** 3),
    connectTimeoutMs: checkInteger('store.connectTimeoutMs', options.connectTimeoutMs ?? 5_000, 1),
    requestTimeoutMs: checkInteger('store.requestTimeoutMs', options.requestTimeoutMs ?? 120_000, 1),
    maxAttempts: checkInteger('store.maxAttempts', options.maxAttempts ?? 3, 1, 20),
    upload: checkUpload(options.upload),
    spillDir: checkSpillDir(options.spillDir),
    maxPutBytes: checkInteger('store.maxPutBytes', options.maxPutBytes ?? S3_MAX_PUT_BYTES, 1, S3_MAX_PUT_BYTES),
  };
}

/** Refuses keys an options object does not know (a misspelt `endpiont` would otherwise fall back silently). */
export function checkKnownKeys(setting: string, options: object, known: readonly string[]): void {
  for (const key of Object.keys(options)) {
    if (!known.includes(key)) throw invalidConfig(`${setting}.${key}`, `unknown option; expected one of ${known.join(', ')}`);
  }
}

const FILE_STORE_KEYS = ['type', 'dir', 'syncOnComplete'] as const;
const S3_STORE_KEYS = [
  'type', 'bucket', 'prefix', 'endpoint', 'region', 'accessKeyId', 'secretAccessKey', 'sessionToken', 'forcePathStyle',
  'minPartBytes', 'connectTimeoutMs', 'requestTimeoutMs', 'maxAttempts', 'upload', 'spillDir', 'maxPutBytes',
] as const;
const SQLITE_META_KEYS = ['type', 'path', 'busyTimeoutMs'] as const;
const REDIS_META_KEYS = ['type', 'url', 'keyPrefix', 'connectTimeoutMs', 'commandTimeoutMs'] as const;

/** Checks blob store options; SHF_ERR_INVALID_CONFIG naming the setting. */
export function validateBlobStoreOptions(value: unknown): BlobStoreOptions {
  if (typeof value !== 'object' || value === null) throw invalidConfig('store', 'expected a URL or {type: "file" | "s3", ...}');
  const options = value as Record<string, unknown>;
  if (options['type'] === 'file') {
    checkKnownKeys('store', options, FILE_STORE_KEYS);
    if (typeof options['dir'] !== 'string' || !isAbsolute(options['dir'])) {
      throw invalidConfig('store.dir', `expected an absolute directory, got ${JSON.stringify(options['dir'])}`);
    }
    return value as FileStoreOptions;
  }
  if (options['type'] === 's3') {
    checkKnownKeys('store', options, S3_STORE_KEYS);
    resolveS3StoreOptions(value as S3StoreOptions, {});
    return value as S3StoreOptions;
  }
  throw invalidConfig('store.type', `expected "file" or "s3", got ${JSON.stringify(options['type'])}`);
}

/** Checks metadata store options; SHF_ERR_INVALID_CONFIG naming the setting. */
export function validateMetadataStoreOptions(value: unknown): MetadataStoreOptions {
  if (typeof value !== 'object' || value === null) throw invalidConfig('meta', 'expected a URL or {type: "sqlite" | "redis", ...}');
  const options = value as Record<string, unknown>;
  if (options['type'] === 'sqlite') {
    checkKnownKeys('meta', options, SQLITE_META_KEYS);
    if (typeof options['path'] !== 'string' || !isAbsolute(options['path'])) {
      throw invalidConfig('meta.path', `expected an absolute file path, got ${JSON.stringify(options['path'])}`);
    }
    if (options['busyTimeoutMs'] !== undefined) checkInteger('meta.busyTimeoutMs', options['busyTimeoutMs'], 0);
    return value as SqliteMetaOptions;
  }
  if (options['type'] === 'redis') {
    checkKnownKeys('meta', options, REDIS_META_KEYS);
    parseRedisUrl(options['url'], 'meta.url');
    if (options['keyPrefix'] !== undefined && typeof options['keyPrefix'] !== 'string') throw invalidConfig('meta.keyPrefix', 'expected a string');
    if (options['connectTimeoutMs'] !== undefined) checkInteger('meta.connectTimeoutMs', options['connectTimeoutMs'], 1);
    if (options['commandTimeoutMs'] !== undefined) checkInteger('meta.commandTimeoutMs', options['commandTimeoutMs'], 1);
    return value as RedisMetaOptions;
  }
  throw invalidConfig('meta.type', `expected "sqlite" or "redis", got ${JSON.stringify(options['type'])}`);
}
