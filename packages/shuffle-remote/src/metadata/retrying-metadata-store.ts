import { type Logger, isShuffleError, noopLogger } from '@weft/shuffle-api';
import type { MetadataStore } from './metadata-store.js';

export interface RetryPolicy {
  readonly attempts: number;
  readonly initialDelayMs: number;
  readonly maxDelayMs: number;
}

const RETRIED = [
  'registerJob',
  'registerPartition',
  'beginAttempt',
  'heartbeat',
  'failAttempt',
  'closeAttempt',
  'commit',
  'lookupPartition',
  'listCommitted',
  'releasePartition',
  'releaseJob',
  'collectGarbage',
  'forgetAttempt',
] as const satisfies readonly (keyof MetadataStore)[];

/** Runs `operation`, retrying retryable SHF_ERR_STORAGE_UNAVAILABLE with exponential backoff (bounded). */
export async function withRetry<T>(operation: () => Promise<T>, policy: RetryPolicy, onRetry?: (error: unknown, attempt: number) => void): Promise<T> {
  let delay = policy.initialDelayMs;
  for (let attempt = 1; ; attempt++) {
    try {
      return await operation();
    } catch (error) {
      const retryable = isShuffleError(error, 'SHF_ERR_STORAGE_UNAVAILABLE') && error.retryable;
      if (!retryable || attempt >= policy.attempts) throw error;
      onRetry?.(error, attempt);
      await new Promise((resolve) => setTimeout(resolve, delay));
      delay = Math.min(delay * 2, policy.maxDelayMs);
    }
  }
}

/**
 * Wraps a MetadataStore so each operation (all are idempotent) is retried while the store is unreachable,
 * then fails with the last SHF_ERR_STORAGE_UNAVAILABLE (retryable). `start` and `close` are not retried:
 * start-up fails fast.
 */
export function retryingMetadataStore(store: MetadataStore, policy: RetryPolicy, logger: Logger = noopLogger): MetadataStore {
  const wrapped: Record<string, unknown> = {
    description: store.description,
    start: () => store.start(),
    close: () => store.close(),
  };
  for (const name of RETRIED) {
    const method = store[name] as (...args: unknown[]) => Promise<unknown>;
    wrapped[name] = (...args: unknown[]) =>
      withRetry(() => method.apply(store, args), policy, (error, attempt) =>
        logger.warn({ store: store.description, operation: name, attempt, error: (error as Error).message }, 'metadata store unavailable, retrying'),
      );
  }
  return wrapped as unknown as MetadataStore;
}
