import { type Logger, invalidConfig, noopLogger } from '@weft/shuffle-api';

/** Options of every JobEventLog in this package. Unknown keys are refused. */
export interface JobEventLogOptions {
  /** Where warnings (a torn tail dropped) and retries are logged. @defaultValue noopLogger */
  readonly logger?: Logger;
  /**
   * How long an operation keeps retrying a transient failure (SQLITE_BUSY, Redis reconnecting) before it
   * fails with WEFT_ERR_EVENT_LOG. @defaultValue 30000
   */
  readonly retryTimeoutMs?: number;
  /**
   * SQLite: how long one statement waits for another connection's lock before it is retried (the wait blocks the
   * event loop, so keep it short; the retries wait asynchronously). @defaultValue 100
   */
  readonly busyTimeoutMs?: number;
  /** Redis: connect timeout, and the time one command may take. @defaultValue 5000 */
  readonly commandTimeoutMs?: number;
  /** Redis: prefix of every key (one per test file, or per deployment sharing a database). @defaultValue 'weft:joblog:' */
  readonly keyPrefix?: string;
  /** The clock stamped on events (`atMs`) and leases. @defaultValue Date.now */
  readonly clock?: () => number;
  /**
   * Redis: how long a published progress snapshot (`JobLog.publishProgress`) lives unless overwritten, so a
   * dead job master's counters vanish by themselves (SQLite keeps the last one until `deleteRun`). @defaultValue 60000
   */
  readonly progressTtlMs?: number;
}

export interface ResolvedJobEventLogOptions {
  readonly logger: Logger;
  readonly retryTimeoutMs: number;
  readonly busyTimeoutMs: number;
  readonly commandTimeoutMs: number;
  readonly keyPrefix: string;
  readonly clock: () => number;
  readonly progressTtlMs: number;
}

export const DEFAULT_JOB_EVENT_LOG_OPTIONS: Omit<ResolvedJobEventLogOptions, 'logger' | 'clock'> = Object.freeze({
  retryTimeoutMs: 30_000,
  busyTimeoutMs: 100,
  commandTimeoutMs: 5_000,
  keyPrefix: 'weft:joblog:',
  progressTtlMs: 60_000,
});

const KNOWN = ['logger', 'retryTimeoutMs', 'busyTimeoutMs', 'commandTimeoutMs', 'keyPrefix', 'clock', 'progressTtlMs'];

function milliseconds(name: string, value: unknown, fallback: number): number {
  if (value === undefined) return fallback;
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 0) throw invalidConfig(`jobEventLog.${name}`, `expected an integer >= 0, got ${String(value)}`);
  return value;
}

/** Checks `options` once: SHF_ERR_INVALID_CONFIG naming the option. */
export function resolveJobEventLogOptions(options: JobEventLogOptions = {}): ResolvedJobEventLogOptions {
  if (typeof options !== 'object' || options === null) throw invalidConfig('jobEventLog', 'options must be an object');
  for (const key of Object.keys(options)) {
    if (!KNOWN.includes(key)) throw invalidConfig(`jobEventLog.${key}`, `unknown option; expected one of ${KNOWN.join(', ')}`);
  }
  const keyPrefix = options.keyPrefix ?? DEFAULT_JOB_EVENT_LOG_OPTIONS.keyPrefix;
  if (typeof keyPrefix !== 'string') throw invalidConfig('jobEventLog.keyPrefix', 'expected a string');
  if (options.clock !== undefined && typeof options.clock !== 'function') throw invalidConfig('jobEventLog.clock', 'expected a function');
  return {
    logger: options.logger ?? noopLogger,
    retryTimeoutMs: milliseconds('retryTimeoutMs', options.retryTimeoutMs, DEFAULT_JOB_EVENT_LOG_OPTIONS.retryTimeoutMs),
    busyTimeoutMs: milliseconds('busyTimeoutMs', options.busyTimeoutMs, DEFAULT_JOB_EVENT_LOG_OPTIONS.busyTimeoutMs),
    commandTimeoutMs: milliseconds('commandTimeoutMs', options.commandTimeoutMs, DEFAULT_JOB_EVENT_LOG_OPTIONS.commandTimeoutMs),
    keyPrefix,
    clock: options.clock ?? Date.now,
    progressTtlMs: Math.max(1, milliseconds('progressTtlMs', options.progressTtlMs, DEFAULT_JOB_EVENT_LOG_OPTIONS.progressTtlMs)),
  };
}
