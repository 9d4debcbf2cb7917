import type { RestartBackoffTimeStrategy } from './restart-backoff-time-strategy.js';

/** Never restarts (Flink's NoRestartBackoffTimeStrategy): the first failure fails the job. */
export class NoRestartBackoffTimeStrategy implements RestartBackoffTimeStrategy {
  readonly name = 'none';

  canRestart(): boolean {
    return false;
  }

  getBackoffTimeMs(): number {
    return 0;
  }

  notifyFailure(_cause?: unknown): boolean {
    return true;
  }

  toString(): string {
    return 'NoRestartBackoffTimeStrategy';
  }
}
