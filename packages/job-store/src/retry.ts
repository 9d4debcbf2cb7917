import type { Logger } from '@weft/shuffle-api';
import { eventLogError } from './event-log-errors.js';

export interface RetryRequest<T> {
  readonly operation: string;
  readonly jobId?: string;
  readonly description: string;
  readonly timeoutMs: number;
  readonly logger: Logger;
  /** Whether `error` may pass if tried again (a lock held, a connection coming back). */
  readonly isTransient: (error: unknown) => boolean;
  /** Checked before each try: throws (e.g. SHF_ERR_CLOSED) to stop retrying. */
  readonly checkOpen: () => void;
  readonly attempt: () => T | Promise<T>;
}

/** An error of ours (WEFT_ERR_* or SHF_ERR_*, e.g. a close that ended the retries): passed on as it is. */
function isWeftError(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === 'string' && /^(WEFT|SHF)_ERR_/.test(code);
}

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * Runs `attempt`, retrying transient failures with exponential backoff (10 ms doubling to 500 ms) until
 * `timeoutMs` has passed since the first try; then WEFT_ERR_EVENT_LOG with the last error as `cause`.
 * Any other failure of the store (not transient: a full disk, a read-only file) is WEFT_ERR_EVENT_LOG at
 * once, with it as `cause`; our own errors (WEFT_ERR_*, SHF_ERR_*) pass through as they are.
 */
export async function withRetry<T>(request: RetryRequest<T>): Promise<T> {
  const started = Date.now();
  let delayMs = 10;
  for (let tries = 1; ; tries++) {
    request.checkOpen();
    try {
      return await request.attempt();
    } catch (error) {
      if (!request.isTransient(error)) {
        if (isWeftError(error)) throw error;
        // a store that refuses for good (disk full, read-only, out of memory): fails loudly now, as the log's own error
        throw eventLogError({
          ...(request.jobId === undefined ? {} : { jobId: request.jobId }),
          description: request.description,
          problem: `${request.operation} failed: ${(error as Error).message}`,
          cause: error,
        });
      }
      const elapsedMs = Date.now() - started;
      if (elapsedMs >= request.timeoutMs) {
        throw eventLogError({
          ...(request.jobId === undefined ? {} : { jobId: request.jobId }),
          description: request.description,
          problem: `${request.operation} failed after ${tries} tries over ${elapsedMs} ms (retryTimeoutMs ${request.timeoutMs}): ${(error as Error).message}`,
          cause: error,
        });
      }
      request.logger.warn({ jobId: request.jobId, operation: request.operation, tries, error: (error as Error).message }, 'job event log: transient failure, retrying');
      await sleep(Math.min(delayMs, Math.max(1, request.timeoutMs - elapsedMs)));
      delayMs = Math.min(delayMs * 2, 500);
    }
  }
}

/** `withRetry` bound to one store: its description, options and which failures are transient. */
export type StoreRetry = <T>(operation: string, jobId: string | undefined, attempt: () => T | Promise<T>, checkOpen?: () => void) => Promise<T>;

/** A StoreRetry for a job event log; `checkOpen` is used unless a call passes its own (an append checks its log too). */
export function storeRetry(store: {
  readonly description: string;
  readonly options: { readonly retryTimeoutMs: number; readonly logger: Logger };
  readonly isTransient: (error: unknown) => boolean;
  readonly checkOpen: () => void;
}): StoreRetry {
  return (operation, jobId, attempt, checkOpen = store.checkOpen) =>
    withRetry({
      operation,
      ...(jobId === undefined ? {} : { jobId }),
      description: store.description,
      timeoutMs: store.options.retryTimeoutMs,
      logger: store.options.logger,
      isTransient: store.isTransient,
      checkOpen,
      attempt,
    });
}
