import { randomBytes } from 'node:crypto';
import type { JsonValue } from '@weft/shuffle-api';
import type { FormatFunction } from '../api/functions.js';
import type { AbortLingeringRequest, TransactionHandle, TwoPhaseCommitSink, TwoPhaseCommitSinkContext } from '../api/two-phase-commit-sink.js';
import { EngineError } from '../errors/engine-error.js';
import type { ExternalFileSystem, ExternalTransactions, ExternalTransactionWriter } from '../io/external-file-system.js';
import { IN_PROGRESS_DIR, inProgressPrefix } from './in-progress-prefix.js';

/** Characters (roughly bytes) buffered before a write is issued. */
const FLUSH_THRESHOLD = 1 << 20;

/**
 * A transaction's handle: the object's URL and, once pre-committed, its file system's handle (null: it
 * wrote nothing) and its marker (absent in handles of sinks before markers).
 */
interface ExternalTransaction {
  readonly url: string;
  readonly upload?: JsonValue | null;
  readonly marker?: string;
}

interface OpenTransaction {
  lines: string[];
  buffered: number;
  writer: ExternalTransactionWriter | undefined;
  writing: Promise<void>;
  /** The marker was written (the upload exists in the store). */
  marked: boolean;
}

/**
 * fileCommitSink on a `<scheme>://` directory: each transaction one object `<dir>/part-<subtask>-<attempt>-<id>`
 * written through its file system's `transactions` (S3: a multipart upload per transaction, its parts
 * sent as they fill, the last at the pre-commit; completed at the commit, idempotently; aborted at the abort).
 *
 * Lingering transactions are found by their markers: once a transaction's upload exists in the store,
 * before any of its bytes go up, the sink writes `<dir>/.in-progress/<tag>-<name>` (`<tag>`:
 * inProgressPrefix, the job's and the sink's; `<name>`: the object's) holding the upload's abort handle,
 * and removes it when the transaction is committed or aborted. `abortLingering` lists its subtask's
 * markers (an ordinary listing: no ListMultipartUploads needed), aborts each upload it is not told to keep
 * and removes the marker. A process killed between the upload's creation and its marker's write leaves an
 * upload with no part and no marker (a bucket lifecycle rule AbortIncompleteMultipartUpload collects it).
 * Markers are hidden from readers (their directory starts with `.`).
 */
export class ExternalFileCommitSink<T> implements TwoPhaseCommitSink<T> {
  readonly #dir: string;
  readonly #format: FormatFunction<T> | undefined;
  readonly #context: TwoPhaseCommitSinkContext;
  readonly #fs: ExternalFileSystem;
  readonly #transactions: ExternalTransactions;
  readonly #open = new Map<string, OpenTransaction>();

  constructor(request: { readonly dir: string; readonly format: FormatFunction<T> | undefined; readonly context: TwoPhaseCommitSinkContext }) {
    this.#dir = normalizeExternalDir(request.dir);
    this.#format = request.format;
    this.#context = request.context;
    const scheme = this.#dir.slice(0, this.#dir.indexOf('://')).toLowerCase();
    const fs = request.context.fileSystems.find((f) => f.scheme === scheme);
    if (fs?.transactions === undefined) {
      throw new EngineError('WEFT_ERR_INVALID_JOB', `sink ${JSON.stringify(request.context.operatorName)}: ${fs === undefined ? `no file system serves ${scheme}:// (RunJobOptions.fileSystems)` : `the ${scheme}:// file system has no transactions`}`, { context: { field: 'fileCommitSink.dir' } });
    }
    this.#fs = fs;
    this.#transactions = fs.transactions;
  }

  beginTransaction(): TransactionHandle {
    const url = `${this.#dir}/part-${String(this.#context.subtask).padStart(5, '0')}-${this.#context.attempt}-${randomBytes(6).toString('hex')}`;
    this.#open.set(url, { lines: [], buffered: 0, writer: undefined, writing: Promise.resolve(), marked: false });
    return { url };
  }

  write(handle: TransactionHandle, value: T): Promise<void> | void {
    const { url } = handle as unknown as ExternalTransaction;
    const tx = this.#open.get(url);
    if (tx === undefined) throw new Error(`transaction ${url} is not open in this sink`);
    const line = this.#format !== undefined ? this.#format(value) : typeof value === 'string' ? value : JSON.stringify(value);
    tx.lines.push(line);
    tx.buffered += line.length + 1;
    if (tx.buffered >= FLUSH_THRESHOLD) return this.#flush(url);
  }

  async preCommit(handle: TransactionHandle): Promise<TransactionHandle> {
    const { url } = handle as unknown as ExternalTransaction;
    const tx = this.#open.get(url);
    if (tx === undefined) throw new Error(`transaction ${url} is not open in this sink`);
    await this.#flush(url);
    // open until the pre-commit went through: one that fails (its last part) is dropped by abort or close
    const upload = tx.writer === undefined ? null : await tx.writer.preCommit();
    this.#open.delete(url);
    return upload === null ? { url, upload: null } : { url, upload, marker: this.#markerOf(url) };
  }

  async commit(handle: TransactionHandle): Promise<void> {
    const { upload, marker } = handle as unknown as ExternalTransaction;
    if (upload === null || upload === undefined) return;
    await this.#transactions.commit(upload);
    if (marker !== undefined) await this.#fs.delete(marker);
  }

  async abort(handle: TransactionHandle): Promise<void> {
    const { url, upload, marker } = handle as unknown as ExternalTransaction;
    const tx = this.#open.get(url);
    this.#open.delete(url);
    if (tx !== undefined) await this.#drop(url, tx);
    else if (upload === undefined) await abortMarkedTransaction(this.#fs, this.#markerOf(url)); // open in another instance (a restored checkpoint's): its marker, if it got one, names its upload
    if (upload !== null && upload !== undefined) await this.#transactions.abort(upload);
    if (marker !== undefined) await this.#fs.delete(marker);
  }

  /** Aborts the uploads of this job's, sink's and subtask's markers that this instance did not begin and is not told to keep. */
  async abortLingering(request: AbortLingeringRequest): Promise<number> {
    const prefix = `${this.#markerDir()}/${inProgressPrefix(this.#context.jobId, this.#context.operatorName)}part-${String(this.#context.subtask).padStart(5, '0')}-`;
    const keep = new Set(request.keep.map((h) => (h as unknown as ExternalTransaction | null)?.url).filter((url): url is string => typeof url === 'string').map((url) => this.#markerOf(url)));
    const own = new Set([...this.#open.keys()].map((url) => this.#markerOf(url)));
    let aborted = 0;
    for (const marker of await this.#fs.listUnder(this.#markerDir())) {
      if (!marker.startsWith(prefix) || keep.has(marker) || own.has(marker)) continue;
      await abortMarkedTransaction(this.#fs, marker);
      aborted++;
    }
    return aborted;
  }

  async close(): Promise<void> {
    const open = [...this.#open];
    this.#open.clear();
    for (const [url, tx] of open) await this.#drop(url, tx).catch(() => {});
  }

  /** Drops an open transaction: its writes settled, its upload aborted, its marker removed. */
  async #drop(url: string, tx: OpenTransaction): Promise<void> {
    await tx.writing.catch(() => {});
    await tx.writer?.abort();
    if (tx.marked) await this.#fs.delete(this.#markerOf(url));
  }

  #markerDir(): string {
    return `${this.#dir}/${IN_PROGRESS_DIR}`;
  }

  /** The marker of the transaction writing `url` (an object of this sink's directory). */
  #markerOf(url: string): string {
    return `${this.#markerDir()}/${inProgressPrefix(this.#context.jobId, this.#context.operatorName)}${url.slice(url.lastIndexOf('/') + 1)}`;
  }

  async #writeMarker(url: string, abortHandle: JsonValue): Promise<void> {
    const writer = await this.#fs.createWriter(this.#markerOf(url));
    try {
      await writer.write(JSON.stringify(abortHandle));
      await writer.complete();
    } catch (error) {
      await writer.abort().catch(() => {});
      throw error;
    }
  }

  #flush(url: string): Promise<void> {
    const tx = this.#open.get(url);
    if (tx === undefined) return Promise.resolve();
    if (tx.lines.length === 0) return tx.writing;
    const text = `${tx.lines.join('\n')}\n`;
    tx.lines = [];
    tx.buffered = 0;
    tx.writing = tx.writing.then(async () => {
      tx.writer ??= await this.#transactions.begin(url, {
        onStarted: async (abortHandle) => {
          await this.#writeMarker(url, abortHandle);
          tx.marked = true;
        },
      });
      await tx.writer.write(text);
    });
    return tx.writing;
  }
}

/**
 * Aborts the transaction a marker of ExternalFileCommitSink names (`<dir>/.in-progress/<tag>-<name>`, its
 * upload's abort handle) and removes the marker — what `abortLingering` and `weft gc` do with each they
 * find. A marker that holds no handle (unreadable, not JSON) is removed alone.
 */
export async function abortMarkedTransaction(fs: ExternalFileSystem, marker: string): Promise<void> {
  let abortHandle: JsonValue | undefined;
  try {
    abortHandle = JSON.parse(new TextDecoder().decode(await fs.read(marker, 0, 1 << 20))) as JsonValue;
  } catch {
    abortHandle = undefined;
  }
  if (abortHandle !== undefined && fs.transactions !== undefined) {
    try {
      await fs.transactions.abort(abortHandle);
    } catch (error) {
      // a handle the file system does not take (not one of its own) is no upload to abort; a failed abort
      // keeps the marker, the upload's only record
      if ((error as { code?: unknown } | null)?.code !== 'SHF_ERR_INVALID_ARGUMENT') throw error;
    }
  }
  await fs.delete(marker);
}

/** An external directory as the sink and `weft gc` name it: its scheme in lower case (file systems list `s3://…`), no trailing `/`. */
export function normalizeExternalDir(dir: string): string {
  const at = dir.indexOf('://');
  return `${dir.slice(0, at).toLowerCase()}${dir.slice(at)}`.replace(/\/+$/u, '');
}
