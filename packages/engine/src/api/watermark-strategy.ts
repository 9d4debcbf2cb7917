import { invalidJob } from './logical-graph.js';

/** Flink's `pipeline.auto-watermark-interval` default. */
export const DEFAULT_WATERMARK_INTERVAL_MS = 200;

/**
 * Event time for a data set (Flink's `WatermarkStrategy.forBoundedOutOfOrderness(…).withTimestampAssigner(…)`):
 * how to read a value's timestamp, and how late a value may come. The operator `assignTimestampsAndWatermarks`
 * adds keeps the largest timestamp seen and emits watermark `max - outOfOrdernessMs - 1`
 * (BoundedOutOfOrdernessWatermarks) every `intervalMs`, in band with the records, to every consumer.
 */
export interface WatermarkStrategy<T> {
  /** A value's event time in milliseconds (a finite number). */
  readonly timestamp: (value: T) => number;
  /** How much later than a larger timestamp a value may arrive and still count. @defaultValue 0 */
  readonly outOfOrdernessMs?: number;
  /**
   * How often the watermark is emitted, in ms (processing time); 0 emits it after every value that
   * raised it (deterministic, for tests). @defaultValue DEFAULT_WATERMARK_INTERVAL_MS (200)
   */
  readonly intervalMs?: number;
  /**
   * A subtask that saw no value for this long tells its consumers it is idle: they leave its channel out
   * of their watermark until it sends one again (Flink's `withIdleness`). @defaultValue undefined: never idle
   */
  readonly idleTimeoutMs?: number;
}

/** A strategy checked once: every option set. */
export interface ResolvedWatermarkStrategy {
  readonly timestamp: (value: unknown) => number;
  readonly outOfOrdernessMs: number;
  readonly intervalMs: number;
  readonly idleTimeoutMs: number | undefined;
}

const KEYS: ReadonlySet<string> = new Set(['timestamp', 'outOfOrdernessMs', 'intervalMs', 'idleTimeoutMs']);

/** Refuses unknown keys and bad values, naming the field (`WEFT_ERR_INVALID_JOB`). */
export function resolveWatermarkStrategy(name: string, strategy: WatermarkStrategy<unknown>): ResolvedWatermarkStrategy {
  const field = (f: string): string => `operator ${JSON.stringify(name)} (timestamps-watermarks): ${f}`;
  if (typeof strategy !== 'object' || strategy === null) throw invalidJob(field('strategy'), 'expected { timestamp, outOfOrdernessMs?, intervalMs?, idleTimeoutMs? }');
  for (const key of Object.keys(strategy)) if (!KEYS.has(key)) throw invalidJob(field(key), `unknown option; expected one of ${[...KEYS].join(', ')}`);
  if (typeof strategy.timestamp !== 'function') throw invalidJob(field('timestamp'), 'expected a function (value) => milliseconds');
  const outOfOrdernessMs = strategy.outOfOrdernessMs ?? 0;
  const intervalMs = strategy.intervalMs ?? DEFAULT_WATERMARK_INTERVAL_MS;
  const idleTimeoutMs = strategy.idleTimeoutMs;
  if (!Number.isSafeInteger(outOfOrdernessMs) || outOfOrdernessMs < 0) throw invalidJob(field('outOfOrdernessMs'), `expected an integer >= 0 (milliseconds), got ${String(outOfOrdernessMs)}`);
  if (!Number.isSafeInteger(intervalMs) || intervalMs < 0) throw invalidJob(field('intervalMs'), `expected an integer >= 0 (milliseconds), got ${String(intervalMs)}`);
  if (idleTimeoutMs !== undefined && (!Number.isSafeInteger(idleTimeoutMs) || idleTimeoutMs < 1)) throw invalidJob(field('idleTimeoutMs'), `expected an integer >= 1 (milliseconds), got ${String(idleTimeoutMs)}`);
  if (idleTimeoutMs !== undefined && intervalMs === 0) throw invalidJob(field('idleTimeoutMs'), 'idleness is checked at each periodic emission: set intervalMs > 0');
  return { timestamp: strategy.timestamp as (value: unknown) => number, outOfOrdernessMs, intervalMs, idleTimeoutMs };
}
