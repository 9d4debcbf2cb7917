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
  return value as ServerRecord;
}
