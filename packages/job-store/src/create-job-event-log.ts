import { isAbsolute } from 'node:path';
import type { JobEventLog } from '@weft/engine';
import { invalidConfig } from '@weft/shuffle-api';
import { isRedisUrl, parseRedisUrl } from '@weft/shuffle-remote/redis';
import type { JobEventLogOptions } from './job-event-log-options.js';
import { RedisJobEventLog } from './redis-job-event-log.js';
import { SqliteJobEventLog } from './sqlite-job-event-log.js';

/** Where a job event log lives, parsed from a `--meta` URL. */
export type JobEventLogLocation = { readonly type: 'sqlite'; readonly path: string } | { readonly type: 'redis'; readonly url: string };

/**
 * Parses docs/DESIGN.md's `--meta` URL: `sqlite:///abs/file.db`, `redis://host:port/db` (`rediss://` for
 * TLS) or `redis+sentinel://host:port[,host:port…]/name/db` (Redis URLs by @weft/shuffle-remote's
 * parseRedisUrl, the one parser of them). SHF_ERR_INVALID_CONFIG naming `setting` on anything else.
 */
export function parseJobEventLogUrl(value: string, setting = 'meta'): JobEventLogLocation {
  if (isRedisUrl(value)) {
    parseRedisUrl(value, setting);
    return { type: 'redis', url: value };
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

/**
 * The job event log at a `--meta` URL: SqliteJobEventLog for `sqlite:///abs/file.db`, RedisJobEventLog for
 * `redis://host:port/db` (connected and checked). SHF_ERR_INVALID_CONFIG naming `setting` on a bad URL or
 * a store that cannot be opened.
 */
export async function createJobEventLog(url: string, options: JobEventLogOptions & { readonly setting?: string } = {}): Promise<JobEventLog> {
  const { setting = 'meta', ...rest } = options;
  const location = parseJobEventLogUrl(url, setting);
  return location.type === 'sqlite' ? new SqliteJobEventLog({ path: location.path, setting }, rest) : RedisJobEventLog.connect({ url: location.url, setting }, rest);
}
