import { invalidConfig } from '@weft/shuffle-api';

/** One `host:port` of a Sentinel. */
export interface SentinelAddress {
  readonly host: string;
  readonly port: number;
}

/**
 * How many replicas must acknowledge a write before it counts (Redis `WAIT minReplicas timeoutMs`), taken
 * from the URL's query: `?minReplicas=1&replicaTimeoutMs=1000&replicaTries=10`.
 */
export interface ReplicaAckPolicy {
  /** Replicas that must hold a write before it counts; 0 = the primary's reply is enough. @defaultValue 1 for `redis+sentinel://`, 0 for `redis://` */
  readonly minReplicas: number;
  /** How long one WAIT waits for them. @defaultValue 1000 */
  readonly replicaTimeoutMs: number;
  /** WAITs that fall short before the write fails with SHF_ERR_NOT_REPLICATED (with the default timeout, about 30 s: a killed node takes Sentinel 15-20 s to turn into a replica again). @defaultValue 30 */
  readonly replicaTries: number;
}

interface EndpointBase {
  readonly db: number;
  readonly username?: string;
  readonly password?: string;
  readonly ack: ReplicaAckPolicy;
  /** The URL with its password replaced by `***`, for messages and logs. */
  readonly description: string;
}

/** A parsed Redis URL: one server (`redis://`, `rediss://`) or a Sentinel-managed primary (`redis+sentinel://`). */
export type RedisEndpoint =
  | (EndpointBase & { readonly kind: 'direct'; readonly host: string; readonly port: number; readonly tls: boolean })
  | (EndpointBase & { readonly kind: 'sentinel'; readonly sentinels: readonly SentinelAddress[]; readonly name: string });

export const DEFAULT_REPLICA_TIMEOUT_MS = 1_000;
export const DEFAULT_REPLICA_TRIES = 30;
const DEFAULT_SENTINEL_PORT = 26379;
const DEFAULT_REDIS_PORT = 6379;
const SCHEMES = ['redis:', 'rediss:', 'redis+sentinel:'];
const ACK_KEYS = ['minReplicas', 'replicaTimeoutMs', 'replicaTries'] as const;
const FORMS = 'redis://[user:password@]host:port/db, rediss://… (TLS) or redis+sentinel://[user:password@]host:port[,host:port…]/name/db';

/** Whether `value` starts with one of the Redis schemes (`redis://`, `rediss://`, `redis+sentinel://`). */
export function isRedisUrl(value: unknown): value is string {
  return typeof value === 'string' && SCHEMES.some((scheme) => value.startsWith(`${scheme}//`));
}

/** The URL without its password, for messages and logs; never throws. */
export function redactRedisUrl(value: string): string {
  return value.replace(/^([a-z+]+:\/\/)([^@/]*):([^@/]*)@/i, (_, scheme: string, user: string) => `${scheme}${user}:***@`);
}

function portOf(setting: string, text: string | undefined, fallback: number, url: string): number {
  if (text === undefined || text === '') return fallback;
  const port = Number(text);
  if (!/^\d+$/.test(text) || port < 1 || port > 65535) throw invalidConfig(setting, `port ${JSON.stringify(text)} in ${redactRedisUrl(url)} is not a port (1-65535)`);
  return port;
}

function hostPort(setting: string, text: string, fallbackPort: number, url: string): SentinelAddress {
  const m = /^\[([^\]]+)\](?::([^:]*))?$/.exec(text) ?? /^([^:[\]]+)(?::([^:]*))?$/.exec(text);
  if (m === null || m[1] === undefined || m[1] === '') throw invalidConfig(setting, `${JSON.stringify(text)} in ${redactRedisUrl(url)} is not host:port`);
  return { host: m[1], port: portOf(setting, m[2], fallbackPort, url) };
}

function dbOf(setting: string, text: string | undefined, url: string): number {
  if (text === undefined || text === '') return 0;
  if (!/^\d+$/.test(text) || Number(text) > 65535) throw invalidConfig(setting, `the database must be a number (…/0), got ${JSON.stringify(text)} in ${redactRedisUrl(url)}`);
  return Number(text);
}

function decode(setting: string, text: string, url: string): string {
  try {
    return decodeURIComponent(text);
  } catch (cause) {
    throw invalidConfig(setting, `the user or password in ${redactRedisUrl(url)} is not percent-encoded correctly`, cause);
  }
}

function credentials(setting: string, userinfo: string | undefined, url: string): { username?: string; password?: string } {
  if (userinfo === undefined || userinfo === '') return {};
  const colon = userinfo.indexOf(':');
  const user = decode(setting, colon < 0 ? userinfo : userinfo.slice(0, colon), url);
  const password = colon < 0 ? undefined : decode(setting, userinfo.slice(colon + 1), url);
  // redis://:secret@host (no user) is the classic AUTH <password>
  if (password === undefined) return { password: user };
  return { ...(user === '' ? {} : { username: user }), password };
}

function ackOf(setting: string, query: string, sentinel: boolean, url: string): ReplicaAckPolicy {
  const params = new URLSearchParams(query);
  const values: Record<string, number> = {};
  for (const [key, text] of params) {
    if (!(ACK_KEYS as readonly string[]).includes(key)) throw invalidConfig(`${setting}.${key}`, `unknown parameter in ${redactRedisUrl(url)}; expected one of ${ACK_KEYS.join(', ')}`);
    const min = key === 'minReplicas' ? 0 : 1;
    if (!/^\d+$/.test(text) || Number(text) < min || Number(text) > 1_000_000) throw invalidConfig(`${setting}.${key}`, `expected an integer ≥ ${min}, got ${JSON.stringify(text)}`);
    values[key] = Number(text);
  }
  return {
    minReplicas: values['minReplicas'] ?? (sentinel ? 1 : 0),
    replicaTimeoutMs: values['replicaTimeoutMs'] ?? DEFAULT_REPLICA_TIMEOUT_MS,
    replicaTries: values['replicaTries'] ?? DEFAULT_REPLICA_TRIES,
  };
}

/**
 * Parses a Redis URL, the one place that does (every `--meta`, `--redis`, `--shuffle-servers` and registry
 * URL comes through here):
 * - `redis://[user:password@]host[:port][/db]` (`rediss://` for TLS): one server;
 * - `redis+sentinel://[user:password@]host[:port][,host[:port]…]/name[/db]`: the primary the Sentinels at
 *   those addresses (port 26379 when omitted) know as `name`; user and password are the primary's.
 * Either may end in `?minReplicas=N&replicaTimeoutMs=T&replicaTries=K` (ReplicaAckPolicy). SHF_ERR_INVALID_CONFIG
 * naming `setting` (or `setting.<parameter>`) and the bad part otherwise.
 */
export function parseRedisUrl(value: unknown, setting = 'redis'): RedisEndpoint {
  if (typeof value !== 'string') throw invalidConfig(setting, `expected a Redis URL (${FORMS}), got ${JSON.stringify(value)}`);
  const m = /^([a-z][a-z0-9+.-]*):\/\/(?:([^@/?#]*)@)?([^/?#]*)(\/[^?#]*)?(?:\?([^#]*))?$/i.exec(value);
  if (m === null) throw invalidConfig(setting, `${JSON.stringify(redactRedisUrl(value))} is not a URL; expected ${FORMS}`);
  const [, scheme = '', userinfo, hosts = '', path = '', query = ''] = m;
  const protocol = `${scheme.toLowerCase()}:`;
  if (!SCHEMES.includes(protocol)) throw invalidConfig(setting, `unsupported scheme ${protocol} in ${redactRedisUrl(value)}; expected ${FORMS}`);
  const description = redactRedisUrl(value);
  const auth = credentials(setting, userinfo, value);
  const segments = path.split('/').slice(1);
  if (protocol === 'redis+sentinel:') {
    if (hosts === '') throw invalidConfig(setting, `${description} names no Sentinel (redis+sentinel://host:port[,host:port…]/name/db)`);
    const sentinels = hosts.split(',').map((part) => hostPort(setting, part, DEFAULT_SENTINEL_PORT, value));
    const [name, db, ...rest] = segments;
    if (name === undefined || name === '') throw invalidConfig(setting, `${description} names no primary: give the name the Sentinels know it by (redis+sentinel://host:port/name/db)`);
    if (rest.length > 0) throw invalidConfig(setting, `${description}: expected /name/db after the Sentinels, got ${JSON.stringify(path)}`);
    return { kind: 'sentinel', sentinels, name: decode(setting, name, value), db: dbOf(setting, db, value), ...auth, ack: ackOf(setting, query, true, value), description };
  }
  if (hosts === '') throw invalidConfig(setting, `${description} names no host (redis://host:port/db)`);
  if (hosts.includes(',')) throw invalidConfig(setting, `${description} names several hosts; use redis+sentinel://host:port,host:port/name/db for a Sentinel-managed primary`);
  const { host, port } = hostPort(setting, hosts, DEFAULT_REDIS_PORT, value);
  if (segments.length > 1) throw invalidConfig(setting, `${description}: expected /db after the host, got ${JSON.stringify(path)}`);
  return { kind: 'direct', host, port, tls: protocol === 'rediss:', db: dbOf(setting, segments[0], value), ...auth, ack: ackOf(setting, query, false, value), description };
}
