/**
 * Decides whether a failed job (or region) may restart, and after how long (Flink ≥ 1.19's
 * RestartBackoffTimeStrategy). The scheduler calls, for every failure: `notifyFailure(cause)` (false: the
 * failure was merged into a restart already pending, so schedule nothing new), then `canRestart()` (false:
 * give up, "recovery is suppressed by <toString()>"), then waits `getBackoffTimeMs()`.
 *
 * Time comes from the injected clock (milliseconds). Not thread-safe (not needed on one event loop);
 * holds no timers — waiting is the caller's.
 */
export interface RestartBackoffTimeStrategy {
  /** The strategy's option `type`: 'fixed-delay', 'failure-rate', 'exponential-delay' or 'none'. */
  readonly name: RestartStrategyType;
  /** Whether a restart may still be attempted. */
  canRestart(): boolean;
  /** How long to wait before restarting, in milliseconds. */
  getBackoffTimeMs(): number;
  /** Records a failure; returns false when it was merged into an attempt already pending. */
  notifyFailure(cause?: unknown): boolean;
  /** The strategy and its settings, e.g. `FixedDelayRestartBackoffTimeStrategy(attempts=3, delayMs=1000)`. */
  toString(): string;
}

export type RestartStrategyType = 'fixed-delay' | 'failure-rate' | 'exponential-delay' | 'none';

/** Options every strategy accepts. */
export interface RestartStrategyCommonOptions {
  /** Milliseconds; @defaultValue `Date.now` */
  readonly clock?: () => number;
}

/** Restart at most `attempts` times, waiting `delayMs` each time. */
export interface FixedDelayRestartOptions extends RestartStrategyCommonOptions {
  readonly type: 'fixed-delay';
  /** Restarts allowed, an integer >= 0. @defaultValue 1 */
  readonly attempts?: number;
  /** @defaultValue 1000 */
  readonly delayMs?: number;
}

/** Restart while at most `maxFailuresPerInterval` failures happened within `failureRateIntervalMs`. */
export interface FailureRateRestartOptions extends RestartStrategyCommonOptions {
  readonly type: 'failure-rate';
  /** An integer >= 1. @defaultValue 1 */
  readonly maxFailuresPerInterval?: number;
  /** @defaultValue 60000 */
  readonly failureRateIntervalMs?: number;
  /** @defaultValue 1000 */
  readonly delayMs?: number;
}

/**
 * Restart with a delay of `initialBackoffMs * backoffMultiplier^attempt` (± jitter, capped at
 * `maxBackoffMs`); failures during a pending backoff merge into it; after `resetBackoffThresholdMs`
 * without failure the attempt count resets; at most `attemptsBeforeResetBackoff` attempts between resets.
 */
export interface ExponentialDelayRestartOptions extends RestartStrategyCommonOptions {
  readonly type: 'exponential-delay';
  /** @defaultValue 1000 */
  readonly initialBackoffMs?: number;
  /** @defaultValue 60000 */
  readonly maxBackoffMs?: number;
  /** > 1. @defaultValue 1.5 */
  readonly backoffMultiplier?: number;
  /** @defaultValue 3600000 (one hour) */
  readonly resetBackoffThresholdMs?: number;
  /** In [0, 1]: the backoff varies by up to ± this fraction. @defaultValue 0.1 */
  readonly jitterFactor?: number;
  /** @defaultValue 2147483647 (Java's Integer.MAX_VALUE: unlimited) */
  readonly attemptsBeforeResetBackoff?: number;
  /** Random numbers in [0, 1) for the jitter. @defaultValue `Math.random` */
  readonly random?: () => number;
}

/** Never restart. */
export interface NoRestartOptions extends RestartStrategyCommonOptions {
  readonly type: 'none';
}

export type RestartStrategyOptions = FixedDelayRestartOptions | FailureRateRestartOptions | ExponentialDelayRestartOptions | NoRestartOptions;

/** Flink 1.19's defaults for each strategy's options. */
export const DEFAULT_RESTART_STRATEGY_OPTIONS = Object.freeze({
  'fixed-delay': Object.freeze({ attempts: 1, delayMs: 1000 }),
  'failure-rate': Object.freeze({ maxFailuresPerInterval: 1, failureRateIntervalMs: 60_000, delayMs: 1000 }),
  'exponential-delay': Object.freeze({
    initialBackoffMs: 1000,
    maxBackoffMs: 60_000,
    backoffMultiplier: 1.5,
    resetBackoffThresholdMs: 3_600_000,
    jitterFactor: 0.1,
    attemptsBeforeResetBackoff: 2_147_483_647,
  }),
});
