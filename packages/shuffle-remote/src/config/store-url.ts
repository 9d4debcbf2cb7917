import { isAbsolute } from 'node:path';
import { fileURLToPath } from 'node:url';
import { invalidConfig } from '@weft/shuffle-api';
import type { BlobStoreOptions, MetadataStoreOptions } from './store-options.js';
import { validateMetadataStoreOptions } from './store-options.js';
import { isRedisUrl, parseRedisUrl } from '../redis/redis-url.js';

/**
 * Parses docs/DESIGN.md's `--store` URL: `file:///abs/dir` or `s3://bucket/prefix`. Endpoint, region and
 * credentials of an S3 store are not part of the URL: they come from the standard AWS variables when
 * the store is created (so the options stay free of secrets and travel to worker processes as JSON).
 * SHF_ERR_INVALID_CONFIG naming `setting` on anything else.
 */
export function parseStoreUrl(value: string, setting = 'store'): BlobStoreOptions {
  let url: URL;
  try {
    url = new URL(value);
  } catch (cause) {
    throw invalidConfig(setting, `${JSON.stringify(value)} is not a URL; expected file:///abs/dir or s3://bucket/prefix`, cause);
  }
  if (url.protocol === 'file:') {
    if (url.host !== '' && url.host !== 'localhost') {
      throw invalidConfig(setting, `${JSON.stringify(value)}: a file URL needs an absolute path (file:///abs/dir)`);
    }
    const dir = fileURLToPath(url);
    if (!isAbsolute(dir)) throw invalidConfig(setting, `${JSON.stringify(value)} is not an absolute directory`);
    return { type: 'file', dir };
  }
  if (url.protocol === 's3:') {
    if (url.hostname === '') throw invalidConfig(`${setting}.bucket`, `${JSON.stringify(value)} names no bucket (s3://bucket/prefix)`);
    const prefix = decodeURIComponent(url.pathname.replace(/^\/+/, ''));
    return { type: 's3', bucket: url.hostname, ...(prefix === '' ? {} : { prefix }) };
  }
  throw invalidConfig(setting, `unsupported scheme ${url.protocol} in ${JSON.stringify(value)}; expected file:// or s3://`);
}

/**
 * Parses docs/DESIGN.md's `--meta` URL: `sqlite:///abs/file.db`, `redis://host:port/db` (`rediss://` for
 * TLS) or `redis+sentinel://host:port[,host:port…]/name/db` (parseRedisUrl). SHF_ERR_INVALID_CONFIG naming
 * `setting` on anything else.
 */
export function parseMetaUrl(value: string, setting = 'meta'): MetadataStoreOptions {
  if (isRedisUrl(value)) {
    parseRedisUrl(value, setting);
    return validateMetadataStoreOptions({ type: 'redis', url: value });
  }
  let url: URL;
  try {
    url = new URL(value);
  } catch (cause) {
    throw invalidConfig(setting, `${JSON.stringify(value)} is not a URL; expected sqlite:///abs/file.db or redis://host:port/db`, cause);
  }
  if (url.protocol === 'sqlite:') {
    if (url.host !== '') throw invalidConfig(setting, `${JSON.stringify(value)}: use sqlite:///abs/file.db (three slashes, an absolute path)`);
    const path = decodeURIComponent(url.pathname);
    if (!isAbsolute(path) || path.endsWith('/')) throw invalidConfig(setting, `${JSON.stringify(value)} is not an absolute file path`);
    return { type: 'sqlite', path };
  }
  throw invalidConfig(setting, `unsupported scheme ${url.protocol} in ${JSON.stringify(value)}; expected sqlite://, redis:// or redis+sentinel://`);
}
