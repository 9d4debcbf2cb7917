import { EngineError, invalidEngineArgument } from '../errors/engine-error.js';
import {
  DEFAULT_RESTART_STRATEGY_OPTIONS,
  type ExponentialDelayRestartOptions,
  type RestartBackoffTimeStrategy,
} from './restart-backoff-time-strategy.js';
import { checkFunctionOption, checkIntegerOption, checkNumberOption } from './options-check.js';

/**
 * Exponential backoff with jitter, reset and merging (Flink ≥ 1.19's ExponentialDelayRestartBackoffTimeStrategy):
 *
 * - a failure at or before the time the pending restart is due merges into it: `notifyFailure` returns
 *   false and nothing changes;
 * - otherwise, if at least `resetBackoffThresholdMs` passed since that restart was due, the attempt count
 *   resets to 0; the restart is due at `now + max(initial, min(trunc(initial * multiplier^attempt) + jitter, max))`,
 *   and the attempt count grows by one;
 * - `canRestart()` holds while attempts <= `attemptsBeforeResetBackoff`;
 * - `getBackoffTimeMs()` is the time left until the restart is due (never negative).
 *
 * Jitter is a uniform integer in [-o, o] with `o = trunc(backoff * jitterFactor)`, the backoff taken before
 * the cap, as Flink.
 */
export class ExponentialDelayRestartBackoffTimeStrategy implements RestartBackoffTimeStrategy {
  readonly name = 'exponential-delay';
  readonly initialBackoffMs: number;
  readonly maxBackoffMs: number;
  readonly backoffMultiplier: number;
  readonly resetBackoffThresholdMs: number;
  readonly jitterFactor: number;
  readonly attemptsBeforeResetBackoff: number;
  readonly #clock: () => number;
  readonly #random: () => number;
  #attempt = 0;
  /** When the pending (or last) restart is due; -Infinity before the first failure. */
  #nextRestartAt = Number.NEGATIVE_INFINITY;

  constructor(options: ExponentialDelayRestartOptions) {
    const d = DEFAULT_RESTART_STRATEGY_OPTIONS['exponential-delay'];
    this.initialBackoffMs = checkIntegerOption('initialBackoffMs', options.initialBackoffMs ?? d.initialBackoffMs, 1);
    this.maxBackoffMs = checkIntegerOption('maxBackoffMs', options.maxBackoffMs ?? d.maxBackoffMs, 1);
    if (this.initialBackoffMs > this.maxBackoffMs) {
      throw invalidEngineArgument('options.initialBackoffMs', `${this.initialBackoffMs} is higher than options.maxBackoffMs (${this.maxBackoffMs})`);
    }
    this.backoffMultiplier = checkNumberOption('backoffMultiplier', options.backoffMultiplier ?? d.backoffMultiplier, 'a number > 1', (v) => v > 1);
    this.resetBackoffThresholdMs = checkIntegerOption('resetBackoffThresholdMs', options.resetBackoffThresholdMs ?? d.resetBackoffThresholdMs, 1);
    this.jitterFactor = checkNumberOption('jitterFactor', options.jitterFactor ?? d.jitterFactor, 'a number in [0, 1]', (v) => v >= 0 && v <= 1);
    this.attemptsBeforeResetBackoff = checkIntegerOption('attemptsBeforeResetBackoff', options.attemptsBeforeResetBackoff ?? d.attemptsBeforeResetBackoff, 1);
    this.#clock = checkFunctionOption('clock', options.clock, Date.now);
    this.#random = checkFunctionOption('random', options.random, Math.random);
  }

  canRestart(): boolean {
    return this.#attempt <= this.attemptsBeforeResetBackoff;
  }

  getBackoffTimeMs(): number {
    if (this.#nextRestartAt === Number.NEGATIVE_INFINITY) {
      throw new EngineError('WEFT_ERR_ILLEGAL_STATE', 'exponential-delay restart strategy: getBackoffTimeMs() called before notifyFailure()');
    }
    return Math.max(0, this.#nextRestartAt - this.#clock());
  }

  notifyFailure(_cause?: unknown): boolean {
    const now = this.#clock();
    if (now <= this.#nextRestartAt) return false;
    if (now - this.#nextRestartAt >= this.resetBackoffThresholdMs) this.#attempt = 0;
    this.#nextRestartAt = now + this.#backoffMs();
    this.#attempt++;
    return true;
  }

  toString(): string {
    return (
      `ExponentialDelayRestartBackoffTimeStrategy(initialBackoffMs=${this.initialBackoffMs}, maxBackoffMs=${this.maxBackoffMs}, ` +
      `backoffMultiplier=${this.backoffMultiplier}, resetBackoffThresholdMs=${this.resetBackoffThresholdMs}, ` +
      `jitterFactor=${this.jitterFactor}, attemptsBeforeResetBackoff=${this.attemptsBeforeResetBackoff})`
    );
  }

  #backoffMs(): number {
    // Java's (long) cast saturates; keep the uncapped value finite so the jitter range stays finite.
    const backoff = Math.min(Math.trunc(this.initialBackoffMs * this.backoffMultiplier ** this.#attempt), Number.MAX_SAFE_INTEGER);
    return Math.max(this.initialBackoffMs, Math.min(backoff + this.#jitterMs(backoff), this.maxBackoffMs));
  }

  #jitterMs(backoff: number): number {
    if (this.jitterFactor === 0) return 0;
    const offset = Math.trunc(backoff * this.jitterFactor);
    return Math.floor(this.#random() * (2 * offset + 1)) - offset;
  }
}
