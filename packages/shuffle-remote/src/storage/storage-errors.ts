import { ShuffleError } from '@weft/shuffle-api';

/** A missing object: SHF_ERR_PARTITION_NOT_FOUND carrying `blobKey`; callers add the partition. */
export function blobNotFound(store: string, key: string, cause?: unknown): ShuffleError {
  return new ShuffleError('SHF_ERR_PARTITION_NOT_FOUND', `object ${key} does not exist in ${store}`, {
    context: { blobKey: key },
    ...(cause === undefined ? {} : { cause }),
  });
}

/** A backend that did not answer or failed server-side: SHF_ERR_STORAGE_UNAVAILABLE (retryable). */
export function storageUnavailable(store: string, operation: string, cause: unknown, retryable = true): ShuffleError {
  if (typeof cause === 'object' && cause !== null && (cause as { code?: unknown }).code === 'SHF_ERR_STORAGE_UNAVAILABLE') {
    return cause as ShuffleError;
  }
  const reason = cause instanceof Error ? cause.message || cause.name : String(cause);
  return new ShuffleError('SHF_ERR_STORAGE_UNAVAILABLE', `${operation} failed on ${store}: ${reason}`, {
    cause,
    retryable,
    context: { store, operation },
  });
}

/** An object shorter than a read needs: SHF_ERR_DATA_CORRUPTED. */
export function blobTruncated(store: string, key: string, offset: number, length: number, got: number): ShuffleError {
  return new ShuffleError(
    'SHF_ERR_DATA_CORRUPTED',
    `object ${key} in ${store} is truncated: read of ${length} bytes at ${offset} returned ${got}`,
    { context: { blobKey: key, offset } },
  );
}
