import { DEFAULT_RESTART_STRATEGY_OPTIONS, type FailureRateRestartOptions, type RestartBackoffTimeStrategy } from './restart-backoff-time-strategy.js';
import { checkFunctionOption, checkIntegerOption } from './options-check.js';

/**
 * Restarts while the failure rate stays within `maxFailuresPerInterval` per `failureRateIntervalMs`
 * (Flink's FailureRateRestartBackoffTimeStrategy): it keeps the last `maxFailuresPerInterval + 1` failure
 * times, and once it has that many, `canRestart()` holds only if the oldest is more than an interval ago.
 */
export class FailureRateRestartBackoffTimeStrategy implements RestartBackoffTimeStrategy {
  readonly name = 'failure-rate';
  readonly maxFailuresPerInterval: number;
  readonly failureRateIntervalMs: number;
  readonly delayMs: number;
  readonly #clock: () => number;
  /** Ring buffer of the last maxFailuresPerInterval + 1 failure times. */
  readonly #times: number[] = [];
  #oldest = 0;

  constructor(options: FailureRateRestartOptions) {
    const defaults = DEFAULT_RESTART_STRATEGY_OPTIONS['failure-rate'];
    this.maxFailuresPerInterval = checkIntegerOption('maxFailuresPerInterval', options.maxFailuresPerInterval ?? defaults.maxFailuresPerInterval, 1, 2 ** 24);
    this.failureRateIntervalMs = checkIntegerOption('failureRateIntervalMs', options.failureRateIntervalMs ?? defaults.failureRateIntervalMs, 1);
    this.delayMs = checkIntegerOption('delayMs', options.delayMs ?? defaults.delayMs, 0);
    this.#clock = checkFunctionOption('clock', options.clock, Date.now);
  }

  canRestart(): boolean {
    if (!this.#isFull()) return true;
    return this.#clock() - (this.#times[this.#oldest] as number) > this.failureRateIntervalMs;
  }

  getBackoffTimeMs(): number {
    return this.delayMs;
  }

  notifyFailure(_cause?: unknown): boolean {
    const now = this.#clock();
    if (this.#isFull()) {
      this.#times[this.#oldest] = now;
      this.#oldest = (this.#oldest + 1) % this.#times.length;
    } else {
      this.#times.push(now);
    }
    return true;
  }

  toString(): string {
    return `FailureRateRestartBackoffTimeStrategy(maxFailuresPerInterval=${this.maxFailuresPerInterval}, failureRateIntervalMs=${this.failureRateIntervalMs}, delayMs=${this.delayMs})`;
  }

  #isFull(): boolean {
    return this.#times.length > this.maxFailuresPerInterval;
  }
}
