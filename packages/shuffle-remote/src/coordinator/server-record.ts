import { invalidArgument, validateId, validateInteger } from '@weft/shuffle-api';

/** What a shuffle server publishes in the registry at every heartbeat. Plain JSON. */
export interface ServerRecord {
  /** Stable across restarts on the same directory. */
  readonly serverId: string;
  /** Where clients reach it: `http(s)://host:port`. */
  readonly url: string;
  /** Free bytes on its data disk. */
  readonly capacityBytes: number;
  /** Bytes its partitions (and uploads in progress) take. */
  readonly diskUsedBytes: number;
  /** Pushes and fetches in progress: its load. */
  readonly activeStreams: number;
  readonly maxConcurrentStreams: number;
  /** Committed partitions it holds. */
  readonly partitions: number;
  /** It copies partitions to an S3 tier. */
  readonly tiered: boolean;
  readonly startedAtMs: number;
  readonly heartbeatAtMs: number;
  /** It is shutting down: it finishes what it serves but takes no new partitions. */
  readonly draining?: boolean;
  /**
   * For operators and tests, never for placement: the server's process id, the host it runs on and its
   * data directory (`--dir`). They mean something only on that host (`weft run --inject-faults
   * kill-shuffle-server` signals the pid, and damages partitions in the directory, on the same machine).
   * The pid and `startedAtMs` also name this incarnation of the server: the commit index uses them to
   * tell a pending commit of a server that has since died or restarted.
   */
  readonly pid?: number;
  readonly hostname?: string;
  readonly dir?: string;
}

/** Checks a record read from the registry; SHF_ERR_INVALID_ARGUMENT naming the field. */
export function validateServerRecord(value: unknown): ServerRecord {
  if (typeof value !== 'object' || value === null) throw invalidArgument('server', 'expected an object');
  const v = value as Record<string, unknown>;
  validateId('server.serverId', v['serverId']);
  if (typeof v['url'] !== 'string' || !/^https?:\/\/[^/]+$/.test(v['url'])) throw invalidArgument('server.url', 'expected http(s)://host:port');
  for (const key of ['capacityBytes', 'diskUsedBytes', 'activeStreams', 'maxConcurrentStreams', 'partitions', 'startedAtMs', 'heartbeatAtMs']) {
    validateInteger(`server.${key}`, v[key], 0, Number.MAX_SAFE_INTEGER);
  }
  if (typeof v['tiered'] !== 'boolean') throw invalidArgument('server.tiered', 'expected a boolean');
  if (v['draining'] !== undefined && typeof v['draining'] !== 'boolean') throw invalidArgument('server.draining', 'expected a boolean');
  if (v['pid'] !== undefined) validateInteger('server.pid', v['pid'], 1, 2 ** 31 - 1);
  for (const key of ['hostname', 'dir']) {
    if (v[key] !== undefined && (typeof v[key] !== 'string' || v[key] === '')) throw invalidArgument(`server.${key}`, 'expected a non-empty string');
  }
  return value as ServerRecord;
}
