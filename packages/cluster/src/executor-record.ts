/**
 * What a task executor writes to the registry at every heartbeat (JSON), under `executor:<id>` with a TTL.
 * `incarnation` is fresh per process start, so a job master tells an executor that registered again
 * (after it was lost) from the one it lost.
 */
export interface ExecutorRecord {
  readonly id: string;
  /** `http://host:port`: its health endpoint (`GET /healthz`) and control connections (HTTP upgrade). */
  readonly advertisedUrl: string;
  readonly host: string;
  readonly slots: number;
  /** Slots no job holds now. */
  readonly freeSlots: number;
  /** The weft version it runs (WEFT_VERSION). */
  readonly version: string;
  readonly pid: number;
  readonly incarnation: string;
  readonly startedAtMs: number;
  /** Stopping (SIGTERM): it takes no new job. */
  readonly draining: boolean;
  /**
   * Jobs whose job master went away and that it keeps (their slots held) for `--orphan-timeout-ms`: a new
   * master of one of them (a standby, a resume) connects even when no slot is free, and takes its slots over.
   * Absent: none (records of executors before this field).
   */
  readonly orphanedJobs?: readonly string[];
}

function isCount(value: unknown): value is number {
  return typeof value === 'number' && Number.isInteger(value) && value >= 0;
}

/** The record if `value` (parsed JSON) is one, else undefined. */
export function parseExecutorRecord(value: unknown): ExecutorRecord | undefined {
  if (typeof value !== 'object' || value === null) return undefined;
  const r = value as Record<string, unknown>;
  const strings = ['id', 'advertisedUrl', 'host', 'version', 'incarnation'] as const;
  if (!strings.every((k) => typeof r[k] === 'string' && (r[k] as string).length > 0)) return undefined;
  if (!isCount(r['slots']) || !isCount(r['freeSlots']) || !isCount(r['pid']) || !isCount(r['startedAtMs']) || typeof r['draining'] !== 'boolean') return undefined;
  const orphaned = r['orphanedJobs'];
  if (orphaned !== undefined && !(Array.isArray(orphaned) && orphaned.every((j) => typeof j === 'string'))) return undefined;
  return r as unknown as ExecutorRecord;
}
