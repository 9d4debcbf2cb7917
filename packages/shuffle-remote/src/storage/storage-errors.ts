import { ShuffleError, invalidArgument } from '@weft/shuffle-api';

/** A missing object: SHF_ERR_PARTITION_NOT_FOUND carrying `blobKey`; callers add the partition. */
export function blobNotFound(store: string, key: string, cause?: unknown): ShuffleError {
  return new ShuffleError('SHF_ERR_PARTITION_NOT_FOUND', `object ${key} does not exist in ${store}`, {
    context: { blobKey: key },
    ...(cause === undefined ? {} : { cause }),
  });
}

/**
 * A backend that did not answer or failed server-side: SHF_ERR_STORAGE_UNAVAILABLE (retryable). An
 * SHF_ERR_STORAGE_UNAVAILABLE or SHF_ERR_NOT_REPLICATED `cause` is returned as it is.
 */
export function storageUnavailable(store: string, operation: string, cause: unknown, retryable = true): ShuffleError {
  const code = typeof cause === 'object' && cause !== null ? (cause as { code?: unknown }).code : undefined;
  if (code === 'SHF_ERR_STORAGE_UNAVAILABLE' || code === 'SHF_ERR_NOT_REPLICATED') {
    return cause as ShuffleError;
  }
  const reason = cause instanceof Error ? cause.message || cause.name : String(cause);
  return new ShuffleError('SHF_ERR_STORAGE_UNAVAILABLE', `${operation} failed on ${store}: ${reason}`, {
    cause,
    retryable,
    context: { store, operation },
  });
}

/**
 * A store used while it is not open: SHF_ERR_CLOSED once closed, SHF_ERR_INVALID_ARGUMENT (field
 * `state`) before `start()`. Neither is retryable: waiting does not open a store.
 */
export function storeNotOpen(store: string, closed: boolean): ShuffleError {
  if (closed) return new ShuffleError('SHF_ERR_CLOSED', `${store} is closed`, { context: { store } });
  return invalidArgument('state', `${store} is not started: call start() first`, { store });
}

/** An object shorter than a read needs: SHF_ERR_DATA_CORRUPTED. */
export function blobTruncated(store: string, key: string, offset: number, length: number, got: number): ShuffleError {
  return new ShuffleError(
    'SHF_ERR_DATA_CORRUPTED',
    `object ${key} in ${store} is truncated: read of ${length} bytes at ${offset} returned ${got}`,
    { context: { blobKey: key, offset } },
  );
}
