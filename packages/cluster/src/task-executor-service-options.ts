import type { Logger } from '@weft/shuffle-api';
import { invalidEngineArgument } from '@weft/engine';

/** How `weft task-executor` runs (TaskExecutorService). */
export interface TaskExecutorServiceOptions {
  /** The cluster's Redis: `redis://host:port/db`. */
  readonly cluster: string;
  /** The shared secret deployments are signed with (at least 16 bytes). */
  readonly secret: string | Uint8Array;
  /** Its directory (the job bundle cache). */
  readonly dir: string;
  /** Regions it runs at once, over all jobs. @defaultValue 1 */
  readonly slots?: number;
  /** The interface it listens on. @defaultValue '127.0.0.1' */
  readonly host?: string;
  /** @defaultValue 0 (any free port) */
  readonly port?: number;
  /** The URL job masters connect to. @defaultValue `http://<host>:<port>` */
  readonly advertiseUrl?: string;
  /** @defaultValue a fresh `te-<host>-<random>` */
  readonly id?: string;
  /** Registry key prefix. @defaultValue 'weft:cluster:' */
  readonly keyPrefix?: string;
  /** How often the registry record is renewed. @defaultValue 1000 */
  readonly heartbeatIntervalMs?: number;
  /** The registry record's TTL: missing heartbeats this long, it is lost. @defaultValue 5000 */
  readonly heartbeatTtlMs?: number;
  /** How long a job whose job master went away keeps its slots, waiting for a new master of that job. @defaultValue 30000 */
  readonly orphanTimeoutMs?: number;
  /** SIGTERM: how long running tasks may take to finish before they are cancelled. @defaultValue 30000 */
  readonly drainTimeoutMs?: number;
  /**
   * Modules (specifiers) the worker processes kept ready for the next job import at once — the shuffle
   * and file-system modules jobs name — so a job's start does not wait for them. @defaultValue []
   */
  readonly preloadModules?: readonly string[];
  readonly logger?: Logger;
}

export const DEFAULT_TASK_EXECUTOR_SERVICE_OPTIONS = {
  slots: 1,
  host: '127.0.0.1',
  port: 0,
  keyPrefix: 'weft:cluster:',
  heartbeatIntervalMs: 1000,
  heartbeatTtlMs: 5000,
  orphanTimeoutMs: 30_000,
  drainTimeoutMs: 30_000,
  preloadModules: [] as readonly string[],
};

const KEYS = new Set(['cluster', 'secret', 'dir', 'slots', 'host', 'port', 'advertiseUrl', 'id', 'keyPrefix', 'heartbeatIntervalMs', 'heartbeatTtlMs', 'orphanTimeoutMs', 'drainTimeoutMs', 'preloadModules', 'logger']);

export type ResolvedTaskExecutorServiceOptions = Required<Omit<TaskExecutorServiceOptions, 'advertiseUrl' | 'id' | 'logger'>> & Pick<TaskExecutorServiceOptions, 'advertiseUrl' | 'id' | 'logger'>;

/** Checks the options once: WEFT_ERR_INVALID_ARGUMENT naming the option (unknown keys refused). */
export function resolveTaskExecutorServiceOptions(options: TaskExecutorServiceOptions): ResolvedTaskExecutorServiceOptions {
  for (const key of Object.keys(options)) if (!KEYS.has(key)) throw invalidEngineArgument(key, 'unknown option of a task executor');
  const o = { ...DEFAULT_TASK_EXECUTOR_SERVICE_OPTIONS, ...Object.fromEntries(Object.entries(options).filter(([, v]) => v !== undefined)) } as ResolvedTaskExecutorServiceOptions;
  if (typeof o.cluster !== 'string' || o.cluster === '') throw invalidEngineArgument('cluster', 'expected a redis:// URL');
  if (typeof o.dir !== 'string' || o.dir === '') throw invalidEngineArgument('dir', 'expected a directory');
  for (const key of ['slots', 'heartbeatIntervalMs', 'heartbeatTtlMs'] as const) {
    if (!Number.isInteger(o[key]) || o[key] < 1) throw invalidEngineArgument(key, `expected an integer >= 1, got ${String(o[key])}`);
  }
  for (const key of ['port', 'orphanTimeoutMs', 'drainTimeoutMs'] as const) {
    if (!Number.isInteger(o[key]) || o[key] < 0) throw invalidEngineArgument(key, `expected an integer >= 0, got ${String(o[key])}`);
  }
  if (!Array.isArray(o.preloadModules) || !o.preloadModules.every((m) => typeof m === 'string' && m !== '')) throw invalidEngineArgument('preloadModules', 'expected an array of module specifiers');
  if (o.heartbeatTtlMs <= o.heartbeatIntervalMs) throw invalidEngineArgument('heartbeatTtlMs', `must be above heartbeatIntervalMs (${o.heartbeatIntervalMs}), got ${o.heartbeatTtlMs}`);
  return o;
}
