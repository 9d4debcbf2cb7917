/**
 * The stable error codes of every shuffle implementation. Callers branch on `error.code`, never on
 * `instanceof` (two copies of this package may be loaded in one process).
 *
 * Each code is documented in `ERRORS.md` at the package root; a test fails when one is not.
 * Codes are never renamed or reused for another meaning.
 */
export const ShuffleErrorCode = {
  /** An argument, descriptor or id is malformed or out of range (a record over maxRecordBytes too). The message names the field. */
  INVALID_ARGUMENT: 'SHF_ERR_INVALID_ARGUMENT',
  /** A configuration setting is missing or malformed; raised at start-up. The message names the setting. */
  INVALID_CONFIG: 'SHF_ERR_INVALID_CONFIG',
  /** The partition was never registered, was released, or its data is gone. Carries `partitionId`. */
  PARTITION_NOT_FOUND: 'SHF_ERR_PARTITION_NOT_FOUND',
  /** The producer of a partition failed before finishing it. Carries `partitionId`; `cause` is the producer's error. */
  PRODUCER_FAILED: 'SHF_ERR_PRODUCER_FAILED',
  /** Stored or transferred bytes failed their checksum or could not be decoded. Carries `partitionId`. */
  DATA_CORRUPTED: 'SHF_ERR_DATA_CORRUPTED',
  /** The object (writer, gate, environment, master, client) was closed or aborted. */
  CLOSED: 'SHF_ERR_CLOSED',
  /** Another attempt of the same partition committed first, or a newer attempt was registered; this attempt's data is discarded. */
  COMMIT_CONFLICT: 'SHF_ERR_COMMIT_CONFLICT',
  /** A registration, or the commit of a partition registered, carried a job master epoch older than the newest the shuffle has seen for the job. */
  FENCED: 'SHF_ERR_FENCED',
  /** A storage or metadata backend (S3, Redis, disk, shuffle server) is unreachable. Retryable. */
  STORAGE_UNAVAILABLE: 'SHF_ERR_STORAGE_UNAVAILABLE',
  /** An operation did not complete within its configured timeout. Retryable. */
  TIMEOUT: 'SHF_ERR_TIMEOUT',
  /** A request carried no job token, or a malformed or forged one. */
  UNAUTHORIZED: 'SHF_ERR_UNAUTHORIZED',
  /** A request carried a valid token for another job. */
  FORBIDDEN: 'SHF_ERR_FORBIDDEN',
  /** A shuffle server's configured limit was exceeded: body size, concurrent streams. (An oversized record is INVALID_ARGUMENT.) */
  LIMIT_EXCEEDED: 'SHF_ERR_LIMIT_EXCEEDED',
  /** Redis applied a write but fewer replicas than the URL's `minReplicas` acknowledged it (WAIT), after every try: the write does not count. */
  NOT_REPLICATED: 'SHF_ERR_NOT_REPLICATED',
  /** The TCP connection to a network shuffle peer could not be opened, or broke before the channel ended (a dead or unreachable producer). Carries `partitionId`. Retryable. */
  CONNECTION_LOST: 'SHF_ERR_CONNECTION_LOST',
  /** A shuffle server's data directory is locked by another server (a live process, or one on another host). Carries `dir` and the holder's `holderPid` / `holderHostname`. */
  DIR_LOCKED: 'SHF_ERR_DIR_LOCKED',
} as const;

export type ShuffleErrorCode = (typeof ShuffleErrorCode)[keyof typeof ShuffleErrorCode];

const ALL_CODES: ReadonlySet<string> = new Set(Object.values(ShuffleErrorCode));

/** True when `value` is one of the documented shuffle error codes. */
export function isShuffleErrorCode(value: unknown): value is ShuffleErrorCode {
  return typeof value === 'string' && ALL_CODES.has(value);
}

/** Codes whose operations may succeed when retried unchanged. */
export const RETRYABLE_CODES: ReadonlySet<ShuffleErrorCode> = new Set([
  ShuffleErrorCode.STORAGE_UNAVAILABLE,
  ShuffleErrorCode.TIMEOUT,
  ShuffleErrorCode.CONNECTION_LOST,
]);
