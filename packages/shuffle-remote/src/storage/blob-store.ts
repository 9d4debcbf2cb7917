/**
 * Where partition data objects live: a flat namespace of keys (`a/b/c.wsm`), each written once by one
 * BlobWriter and then read with ranged reads. Implementations: LocalBlobStore (a directory, the
 * embedded default) and S3BlobStore (AWS S3 or any S3-compatible server).
 *
 * Keys are produced by `objectKey()` from validated, encoded ids; stores check them again and refuse
 * anything that could escape their root. Errors are ShuffleErrors: SHF_ERR_PARTITION_NOT_FOUND (with
 * `context.blobKey`) for a missing object, SHF_ERR_STORAGE_UNAVAILABLE for a backend that does not
 * answer, SHF_ERR_DATA_CORRUPTED for an object shorter than a read needs.
 *
 * Not in the contract: atomic creation or conditional writes (visibility comes from the metadata store's
 * commit, never from the blob store), listing consistency, object metadata.
 */
export interface BlobStore {
  /** The store, for logs and errors, without secrets: `file:///dir`, `s3://bucket/prefix`. */
  readonly description: string;
  /** Checks the store is usable (directory writable, bucket reachable); SHF_ERR_INVALID_CONFIG naming the setting otherwise. */
  start(): Promise<void>;
  /**
   * Starts a new object at `key`, which must not exist (keys are unique per writer). A store that can
   * tell (a local directory) refuses an existing key with SHF_ERR_INVALID_ARGUMENT (field `key`), not
   * retryable; S3 cannot without conditional writes, and would overwrite it.
   */
  createWriter(key: string): Promise<BlobWriter>;
  /** Opens an object for ranged reads. SHF_ERR_PARTITION_NOT_FOUND if it does not exist. */
  openReader(key: string): Promise<BlobReader>;
  /** Deletes the object and, when given, aborts its unfinished multipart upload. Deleting nothing is fine. */
  delete(key: string, options?: { readonly uploadId?: string }): Promise<void>;
  /**
   * `delete`, telling what it found: resolves true when there was an object to delete, false when there
   * was none (an upload that never completed is no object). A sweep counts only what it really deleted.
   */
  deleteExisting(key: string, options?: { readonly uploadId?: string }): Promise<boolean>;
  /** Keys of the objects under `prefix` (a key prefix such as `job/`), for maintenance and tests. */
  listKeys(prefix?: string): Promise<string[]>;
  /** Releases connections and handles. Idempotent. */
  close(): Promise<void>;
}

/** Writes one object, appending. One `append` at a time, unless `concurrentAppends`. */
export interface BlobWriter {
  readonly key: string;
  /** Bytes appended so far (with `concurrentAppends`: handed to `append`, landed or not): the offset the next append starts at. */
  readonly bytesWritten: number;
  /**
   * True when `append` may be called again before the one before it resolved: each call takes the next
   * bytes of the object the moment it is made (positional writes to a local file, which the kernel
   * copies on the thread pool in any order), so a producer hands over region after region without
   * waiting for a completion it only sees when it yields. `complete()` waits for every append; a failed
   * append fails the object. Writers that send bytes in order (S3 parts, a push) leave it unset.
   */
  readonly concurrentAppends?: boolean;
  /** Bytes the writer holds itself: a tail smaller than the minimum S3 part, and the part being sent. */
  readonly bufferedBytes: number;
  /** The most the writer holds between appends (the S3 tail); a part being sent adds at most one append's bytes. */
  readonly maxRetainedBytes: number;
  /** The S3 multipart upload id once one is open, so a sweep can abort it if the writer dies. */
  readonly uploadId: string | undefined;
  /** Appends `chunks` in order; the caller may reuse them once the promise resolves. */
  append(chunks: readonly Uint8Array[]): Promise<void>;
  /** Makes the object whole and readable; resolves with its size. */
  complete(): Promise<number>;
  /**
   * Optional, instead of appends and `complete()`: writes the whole object, `length` bytes, from
   * `body(start, end)` (its bytes [start, end), in order; asked again for a retry) and makes it readable.
   * A store whose uploads want their length up front (S3: one PutObject) implements it.
   */
  writeWhole?(length: number, body: (start: number, end: number) => AsyncIterable<Uint8Array>): Promise<void>;
  /** Drops whatever was written. Idempotent; never throws for an object that is already gone. */
  abort(): Promise<void>;
}

/** Ranged reads of one object. */
export interface BlobReader {
  /**
   * Exactly `length` bytes from `offset`, or SHF_ERR_DATA_CORRUPTED when the object is shorter. With
   * `into` (at least `length` long) the bytes land there and a view of it is returned.
   */
  read(offset: number, length: number, into?: Uint8Array): Promise<Uint8Array>;
  /**
   * Optional hint: the reads that follow cover `ranges` in this order, each in consecutive pieces. A
   * store may then serve each range with one streamed request (S3: one ranged GET per range).
   */
  plan?(ranges: readonly { readonly offset: number; readonly length: number }[]): void;
  /**
   * True when a read into shared memory (`into` backed by a SharedArrayBuffer) costs no more than into
   * ordinary memory — the kernel copies (positional file reads) — so a reader may verify its buffers on a
   * worker thread. Readers that copy in JavaScript (HTTP, S3) leave it unset: V8 copies into shared
   * memory with relaxed atomics, slower than the checksums it would move.
   */
  readonly sharedTargets?: boolean;
  /**
   * Optional: the open file behind a local reader, so a worker thread may make the reads itself
   * (SubpartitionRangeReader through ChecksumWorker.readBlocks: each block checksummed right after it
   * is read, while in cache). Readers of anything but a local file leave it unset.
   */
  readonly file?: OpenFile;
  close(): Promise<void>;
}

/** A local reader's open file, for positional reads made outside `read` (a worker thread's). */
export interface OpenFile {
  readonly fd: number;
  /** Keeps the file open until `work` settles (`close()` waits for it); returns `work`. */
  hold<T>(work: Promise<T>): Promise<T>;
  /** The error `read` gives when the file ends `filled` bytes into a read of `length` bytes at `offset`. */
  truncated(offset: number, length: number, filled: number): Error;
  /** The error `read` gives when the read itself fails. */
  failed(cause: unknown): Error;
}
