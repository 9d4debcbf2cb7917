import { randomBytes } from 'node:crypto';
import { type FileHandle, mkdir, open as openFile, readdir, rename, rm, stat } from 'node:fs/promises';
import { isAbsolute, join, resolve } from 'node:path';
import type { FormatFunction } from '../api/functions.js';
import type { AbortLingeringRequest, TransactionHandle, TwoPhaseCommitSink, TwoPhaseCommitSinkContext, TwoPhaseCommitSinkFactory } from '../api/two-phase-commit-sink.js';
import { invalidEngineArgument } from '../errors/engine-error.js';
import { ExternalFileCommitSink } from './external-file-commit-sink.js';
import { IN_PROGRESS_DIR, inProgressPrefix } from './in-progress-prefix.js';

export { IN_PROGRESS_DIR, inProgressPrefix };

export interface FileCommitSinkOptions<T> {
  /**
   * The directory committed part files appear in (relative: against the job's working directory), or a
   * `<scheme>://` one of a file system with `transactions` (S3: ExternalFileCommitSink).
   */
  readonly dir: string;
  /** One line per value (without the newline). @defaultValue strings as they are, anything else as JSON */
  readonly format?: FormatFunction<T>;
}

const IN_PROGRESS = IN_PROGRESS_DIR;
/** Characters (roughly bytes) buffered before a write is issued. */
const FLUSH_THRESHOLD = 1 << 20;
const KEYS = new Set(['dir', 'format']);

/** A transaction's handle: its in-progress file and the name it is committed as (null file: it wrote nothing). */
interface FileTransaction {
  readonly file: string | null;
  readonly target: string;
}

/**
 * A two-phase-commit sink writing lines into part files of a local directory (Flink's FileSink): each
 * transaction writes `<dir>/.in-progress/<tag>-part-<subtask>-<attempt>-<id>` (`<tag>`: inProgressPrefix,
 * the job's and the sink's); `preCommit` writes what is buffered and syncs it; `commit` renames it to
 * `<dir>/part-<subtask>-<attempt>-<id>` (a name no other transaction has) — done again, it finds the part
 * in place and changes nothing (idempotent); `abort` removes the in-progress file; `abortLingering`
 * removes the in-progress files of its job, sink and subtask that it did not begin and is not told to
 * keep. Readers see only committed parts (names starting with `.` are hidden). A transaction that wrote
 * nothing commits no file. Use it with `dataSet.sinkTo(fileCommitSink({ dir }))`; its staging (for
 * `weft gc`) is `{ kind: 'file-commit', dir }` (the directory as given; relative: against the job master's
 * working directory; on `s3://`, the markers of its uploads: ExternalFileCommitSink).
 */
export function fileCommitSink<T>(options: FileCommitSinkOptions<T>): TwoPhaseCommitSinkFactory<T> {
  for (const key of Object.keys(options)) if (!KEYS.has(key)) throw invalidEngineArgument(`fileCommitSink.${key}`, 'unknown option');
  if (typeof options.dir !== 'string' || options.dir.trim() === '') throw invalidEngineArgument('fileCommitSink.dir', `expected a directory, got ${JSON.stringify(options.dir)}`);
  if (options.format !== undefined && typeof options.format !== 'function') throw invalidEngineArgument('fileCommitSink.format', 'expected a function');
  const staging = { staging: { kind: 'file-commit', dir: options.dir } };
  if (/^[a-z][a-z0-9+.-]*:\/\//iu.test(options.dir)) return Object.assign((context: TwoPhaseCommitSinkContext) => new ExternalFileCommitSink<T>({ dir: options.dir, format: options.format, context }), staging);
  return Object.assign((context: TwoPhaseCommitSinkContext) => new FileCommitSink<T>(options, context), staging);
}

interface OpenTransaction {
  lines: string[];
  buffered: number;
  file: FileHandle | undefined;
  written: boolean;
  /** Writes of this transaction, one after the other. */
  writing: Promise<void>;
}

class FileCommitSink<T> implements TwoPhaseCommitSink<T> {
  readonly #dir: string;
  readonly #format: FormatFunction<T> | undefined;
  readonly #context: TwoPhaseCommitSinkContext;
  /** The open transactions' buffers and files, by in-progress file. */
  readonly #open = new Map<string, OpenTransaction>();

  constructor(options: FileCommitSinkOptions<T>, context: TwoPhaseCommitSinkContext) {
    this.#dir = isAbsolute(options.dir) ? options.dir : resolve(context.cwd, options.dir);
    this.#format = options.format;
    this.#context = context;
  }

  beginTransaction(): TransactionHandle {
    const name = `part-${String(this.#context.subtask).padStart(5, '0')}-${this.#context.attempt}-${randomBytes(6).toString('hex')}`;
    const file = join(this.#dir, IN_PROGRESS, `${inProgressPrefix(this.#context.jobId, this.#context.operatorName)}${name}`);
    this.#open.set(file, { lines: [], buffered: 0, file: undefined, written: false, writing: Promise.resolve() });
    return { file, target: join(this.#dir, name) };
  }

  write(handle: TransactionHandle, value: T): Promise<void> | void {
    const tx = this.#transaction(handle);
    const line = this.#format !== undefined ? this.#format(value) : typeof value === 'string' ? value : JSON.stringify(value);
    tx.lines.push(line);
    tx.buffered += line.length + 1;
    if (tx.buffered >= FLUSH_THRESHOLD) return this.#flush((handle as unknown as FileTransaction).file as string);
  }

  async preCommit(handle: TransactionHandle): Promise<TransactionHandle> {
    const { file, target } = handle as unknown as FileTransaction;
    if (file === null) return handle;
    const tx = this.#transaction(handle);
    await this.#flush(file);
    this.#open.delete(file);
    if (tx.file !== undefined) {
      await tx.file.sync();
      await tx.file.close();
    }
    return tx.written ? handle : { file: null, target };
  }

  async commit(handle: TransactionHandle): Promise<void> {
    const { file, target } = handle as unknown as FileTransaction;
    if (file === null) return;
    try {
      await rename(file, target);
    } catch (error) {
      // committed before (a re-commit after a restore): the part is in place
      if ((error as NodeJS.ErrnoException).code === 'ENOENT' && (await stat(target).then(() => true, () => false))) return;
      throw error;
    }
  }

  async abort(handle: TransactionHandle): Promise<void> {
    const { file } = handle as unknown as FileTransaction;
    if (file === null) return;
    const tx = this.#open.get(file);
    this.#open.delete(file);
    await tx?.writing.catch(() => {});
    await tx?.file?.close().catch(() => {});
    await rm(file, { force: true });
  }

  async abortLingering(request: AbortLingeringRequest): Promise<number> {
    const { jobId, operatorName, subtask } = this.#context;
    const prefix = `${inProgressPrefix(jobId, operatorName)}part-${String(subtask).padStart(5, '0')}-`;
    const keep = new Set(request.keep.map((h) => (h as unknown as FileTransaction | null)?.file));
    let aborted = 0;
    for (const name of await readdir(join(this.#dir, IN_PROGRESS)).catch(() => [] as string[])) {
      const file = join(this.#dir, IN_PROGRESS, name);
      if (!name.startsWith(prefix) || keep.has(file) || this.#open.has(file)) continue;
      await rm(file, { force: true });
      aborted++;
    }
    return aborted;
  }

  async close(): Promise<void> {
    for (const tx of this.#open.values()) {
      await tx.writing.catch(() => {});
      await tx.file?.close().catch(() => {});
    }
    this.#open.clear();
  }

  #transaction(handle: TransactionHandle): OpenTransaction {
    const file = (handle as unknown as FileTransaction).file;
    const tx = file === null ? undefined : this.#open.get(file);
    if (tx === undefined) throw new Error(`transaction ${JSON.stringify(handle)} is not open in this sink`);
    return tx;
  }

  #flush(file: string): Promise<void> {
    const tx = this.#open.get(file);
    if (tx === undefined) return Promise.resolve();
    if (tx.lines.length === 0) return tx.writing;
    const text = `${tx.lines.join('\n')}\n`;
    tx.lines = [];
    tx.buffered = 0;
    tx.writing = tx.writing.then(async () => {
      if (tx.file === undefined) {
        await mkdir(join(this.#dir, IN_PROGRESS), { recursive: true });
        tx.file = await openFile(file, 'w');
      }
      await tx.file.write(text);
      tx.written = true;
    });
    return tx.writing;
  }
}
