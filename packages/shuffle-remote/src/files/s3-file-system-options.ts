import { invalidArgument, invalidConfig, type JsonValue } from '@weft/shuffle-api';
import { checkKnownKeys, type ResolvedS3StoreOptions, resolveS3StoreOptions } from '../config/store-options.js';

/**
 * How an S3FileSystem reaches S3. Plain JSON, without secrets: it travels to worker processes, which
 * resolve it against their own environment. Settings left out come from the same AWS variables as the
 * `--store s3://…` shuffle store (`AWS_ENDPOINT_URL_S3` or `AWS_ENDPOINT_URL`, `AWS_REGION`,
 * `AWS_ACCESS_KEY_ID`, `AWS_SECRET_ACCESS_KEY`, `AWS_SESSION_TOKEN`).
 */
export interface S3FileSystemOptions {
  /** `http(s)://host:port` of an S3-compatible server. @defaultValue the environment's, else AWS S3 */
  readonly endpoint?: string;
  /** @defaultValue the environment's, else 'us-east-1' */
  readonly region?: string;
  /** @defaultValue true with an endpoint, false for AWS */
  readonly forcePathStyle?: boolean;
  /** Parts of sink uploads (all but the last); at least 5 MiB. @defaultValue 8 MiB */
  readonly minPartBytes?: number;
  /** @defaultValue 5000 */
  readonly connectTimeoutMs?: number;
  /** @defaultValue 120000 */
  readonly requestTimeoutMs?: number;
  /** Attempts per request, the SDK's own retries included. @defaultValue 3 */
  readonly maxAttempts?: number;
}

const KEYS = ['endpoint', 'region', 'forcePathStyle', 'minPartBytes', 'connectTimeoutMs', 'requestTimeoutMs', 'maxAttempts'] as const;

/** Checks S3FileSystemOptions (unknown keys refused); SHF_ERR_INVALID_CONFIG naming `files.<key>`. */
export function validateS3FileSystemOptions(value: JsonValue | S3FileSystemOptions | undefined): S3FileSystemOptions {
  const options = (value ?? {}) as Record<string, unknown>;
  if (typeof options !== 'object' || Array.isArray(options)) throw invalidConfig('files', 'expected an object of S3 file system options');
  checkKnownKeys('files', options, KEYS);
  resolveS3Connection(options as S3FileSystemOptions, {});
  return options as S3FileSystemOptions;
}

/** The options with the environment applied (the bucket and prefix of the result are not used: each URL names its own). */
export function resolveS3Connection(options: S3FileSystemOptions, env: Readonly<Record<string, string | undefined>>): ResolvedS3StoreOptions {
  try {
    return resolveS3StoreOptions({ type: 's3', bucket: 'weft-files', ...options }, env);
  } catch (error) {
    const setting = String((error as { context?: { setting?: unknown } }).context?.setting ?? '');
    throw setting.startsWith('store.') ? invalidConfig(`files.${setting.slice('store.'.length)}`, (error as Error).message.replace(/^[^:]*: /, ''), error) : error;
  }
}

const BUCKET = /^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$/;

/** `s3://bucket/key` → its bucket and key (the key taken as written, not URL-decoded; may be empty). SHF_ERR_INVALID_ARGUMENT (field `url`) otherwise. */
export function parseS3Url(url: string): { readonly bucket: string; readonly key: string } {
  if (typeof url !== 'string' || !/^s3:\/\//i.test(url)) throw invalidArgument('url', `${JSON.stringify(url)} is not an s3://bucket/key URL`);
  const rest = url.slice('s3://'.length);
  const slash = rest.indexOf('/');
  const bucket = slash === -1 ? rest : rest.slice(0, slash);
  if (!BUCKET.test(bucket)) throw invalidArgument('url', `${JSON.stringify(url)} names no valid bucket (s3://bucket/key)`);
  return { bucket, key: slash === -1 ? '' : rest.slice(slash + 1) };
}
