import type { JsonValue } from '@weft/shuffle-api';

/** One object of an external file system, with its size in bytes. */
export interface ExternalFile {
  readonly url: string;
  readonly size: number;
}

/**
 * Writes one object (a sink attempt's part), in order. Nothing is readable at its URL until `complete()`
 * resolved; `abort()` drops what was written (idempotent, also after a failed write). One call at a time.
 */
export interface ExternalFileWriter {
  write(chunk: string): Promise<void>;
  complete(): Promise<void>;
  abort(): Promise<void>;
}

/**
 * A sink's output, staged by `ExternalFileSystem.stage`: every byte is in place but nothing is visible at
 * the target yet. `commit()` makes the target whole at once (never half-written), keeping what it held
 * before; `rollBack()` after a commit puts that back (or removes the target where there was none);
 * `discard()` before a commit drops the staged bytes. Each runs at most once.
 */
export interface StagedExternalFile {
  commit(): Promise<void>;
  rollBack(): Promise<void>;
  discard(): Promise<void>;
}

/**
 * One transaction's object being written (a two-phase-commit sink's transaction, ExternalTransactions):
 * `write` in order; `preCommit()` makes every byte durable but not visible at the URL and returns the
 * handle any process commits or aborts it by; `abort()` drops it (idempotent; one the store refused or
 * could not be sent rejects, and the transaction is still there). One call at a time.
 */
export interface ExternalTransactionWriter {
  write(chunk: string): Promise<void>;
  preCommit(): Promise<JsonValue>;
  abort(): Promise<void>;
}

/** Options of `ExternalTransactions.begin`. */
export interface BeginExternalTransactionOptions {
  /**
   * Called once, when the transaction first holds anything in the store (S3: its multipart upload was
   * created), before any of its bytes go up, with a handle `ExternalTransactions.abort` takes to drop it:
   * so the caller can record it durably (fileCommitSink's marker) and another process abort the
   * transaction should this one die before its pre-commit. A rejection fails the write that began it (the
   * transaction is then dropped).
   */
  onStarted?(abortHandle: JsonValue): Promise<void>;
}

/**
 * Objects written as transactions (S3: a multipart upload per transaction, completed at commit), for
 * two-phase-commit sinks. `commit(handle)` makes the object visible whole and is idempotent (a second
 * commit of a handle finds the object in place and changes nothing); `abort(handle)` drops an uncommitted
 * one (a committed one is left as it is) — a pre-commit's handle or the one `onStarted` was given.
 */
export interface ExternalTransactions {
  begin(url: string, options?: BeginExternalTransactionOptions): Promise<ExternalTransactionWriter>;
  commit(handle: JsonValue): Promise<void>;
  abort(handle: JsonValue): Promise<void>;
}

/** How another process builds an equal file system: `(await import(module))[exportName](options)`. */
export interface ExternalFileSystemReference {
  readonly module: string;
  readonly exportName: string;
  readonly options: JsonValue;
}

/**
 * Where job inputs and outputs live when they are not local paths: every path of the form
 * `<scheme>://…` (e.g. `s3://bucket/key`) goes to the file system of that scheme, handed to `runJob`
 * (`RunJobOptions.fileSystems`) — the engine never picks one, as it never picks a shuffle. Text sources
 * list and read it by byte ranges (a split owns the lines that start in it, as for local files); text
 * sinks write one object per attempt under a temporary "directory" (a key prefix) beside the output,
 * and the job master stages and commits them all or nothing when the job succeeds.
 *
 * URLs are `<scheme>://<authority>/<key>` and "directories" are key prefixes ending at a `/`. Errors
 * are ShuffleErrors or EngineErrors with documented codes; the engine wraps them
 * (`WEFT_ERR_INPUT_UNREADABLE`, `WEFT_ERR_SINK_FAILED`).
 *
 * Ownership: the caller of `runJob` owns it (runJob never closes it); a worker process rebuilds one from
 * `reference` and closes it when it stops. Not in the contract: listing consistency beyond what the
 * store gives, renames, appends to an existing object, conditional writes.
 */
export interface ExternalFileSystem {
  /** The URL scheme it serves, without `://` (`s3`). */
  readonly scheme: string;
  /** Absent: the file system cannot be rebuilt in a worker process (in-process runs only). */
  readonly reference?: ExternalFileSystemReference;
  /**
   * The object at `url`, or else the objects directly under `url/` whose names do not start with `.` or
   * `_`, in name order. Throws when there is neither.
   */
  list(url: string): Promise<ExternalFile[]>;
  /** Up to `length` bytes of `url` from `position` (fewer only at its end; none past it): one ranged read. */
  read(url: string, position: number, length: number): Promise<Uint8Array>;
  /** Starts writing a new object at `url`. */
  createWriter(url: string): Promise<ExternalFileWriter>;
  /** Whether an object exists at `url`. */
  exists(url: string): Promise<boolean>;
  /** URLs of every object under `dir/`, at any depth. */
  listUnder(dir: string): Promise<string[]>;
  /** Joins `parts` (objects, in order) into `target` without making it visible (see StagedExternalFile); `tempDir` may hold its scratch objects. */
  stage(request: { readonly target: string; readonly parts: readonly string[]; readonly tempDir: string }): Promise<StagedExternalFile>;
  /** Objects written as transactions (two-phase-commit sinks); absent: the file system has none. */
  readonly transactions?: ExternalTransactions;
  /** Deletes the object at `url`; deleting nothing is fine. */
  delete(url: string): Promise<void>;
  /** Deletes everything under `dir/` (and any unfinished upload there). */
  deleteUnder(dir: string): Promise<void>;
  close(): Promise<void>;
}

/** The signature of the export an ExternalFileSystemReference names. */
export type ExternalFileSystemProvider = (options: JsonValue) => ExternalFileSystem;
