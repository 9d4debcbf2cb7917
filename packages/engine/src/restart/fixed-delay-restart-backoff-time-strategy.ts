import { DEFAULT_RESTART_STRATEGY_OPTIONS, type FixedDelayRestartOptions, type RestartBackoffTimeStrategy } from './restart-backoff-time-strategy.js';
import { checkIntegerOption } from './options-check.js';

/**
 * Restarts at most `attempts` times with a fixed delay (Flink's FixedDelayRestartBackoffTimeStrategy):
 * every failure counts as a new attempt, and `canRestart()` holds while failures <= attempts.
 */
export class FixedDelayRestartBackoffTimeStrategy implements RestartBackoffTimeStrategy {
  readonly name = 'fixed-delay';
  readonly attempts: number;
  readonly delayMs: number;
  #failures = 0;

  constructor(options: FixedDelayRestartOptions) {
    const defaults = DEFAULT_RESTART_STRATEGY_OPTIONS['fixed-delay'];
    this.attempts = checkIntegerOption('attempts', options.attempts ?? defaults.attempts, 0);
    this.delayMs = checkIntegerOption('delayMs', options.delayMs ?? defaults.delayMs, 0);
  }

  canRestart(): boolean {
    return this.#failures <= this.attempts;
  }

  getBackoffTimeMs(): number {
    return this.delayMs;
  }

  notifyFailure(_cause?: unknown): boolean {
    this.#failures++;
    return true;
  }

  toString(): string {
    return `FixedDelayRestartBackoffTimeStrategy(attempts=${this.attempts}, delayMs=${this.delayMs})`;
  }
}
