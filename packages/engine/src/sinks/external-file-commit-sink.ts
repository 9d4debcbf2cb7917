import { randomBytes } from 'node:crypto';
import type { FormatFunction } from '../api/functions.js';
import type { TransactionHandle, TwoPhaseCommitSink, TwoPhaseCommitSinkContext } from '../api/two-phase-commit-sink.js';
import { EngineError } from '../errors/engine-error.js';
import type { ExternalTransactions, ExternalTransactionWriter } from '../io/external-file-system.js';

/** Characters (roughly bytes) buffered before a write is issued. */
const FLUSH_THRESHOLD = 1 << 20;

/** A transaction's handle: the object's URL and, once pre-committed, its file system's handle (null: it wrote nothing). */
interface ExternalTransaction {
  readonly url: string;
  readonly upload?: TransactionHandle | null;
}

/**
 * fileCommitSink on a `<scheme>://` directory: each transaction one object `<dir>/part-<subtask>-<attempt>-<id>`
 * written through its file system's `transactions` (S3: a multipart upload per transaction, its parts
 * sent as they fill, the last at the pre-commit; completed at the commit, idempotently; aborted at the abort).
 */
export class ExternalFileCommitSink<T> implements TwoPhaseCommitSink<T> {
  readonly #dir: string;
  readonly #format: FormatFunction<T> | undefined;
  readonly #context: TwoPhaseCommitSinkContext;
  readonly #transactions: ExternalTransactions;
  readonly #open = new Map<string, { lines: string[]; buffered: number; writer: ExternalTransactionWriter | undefined; writing: Promise<void> }>();

  constructor(request: { readonly dir: string; readonly format: FormatFunction<T> | undefined; readonly context: TwoPhaseCommitSinkContext }) {
    this.#dir = request.dir.replace(/\/+$/u, '');
    this.#format = request.format;
    this.#context = request.context;
    const scheme = this.#dir.slice(0, this.#dir.indexOf('://')).toLowerCase();
    const fs = request.context.fileSystems.find((f) => f.scheme === scheme);
    if (fs?.transactions === undefined) {
      throw new EngineError('WEFT_ERR_INVALID_JOB', `sink ${JSON.stringify(request.context.operatorName)}: ${fs === undefined ? `no file system serves ${scheme}:// (RunJobOptions.fileSystems)` : `the ${scheme}:// file system has no transactions`}`, { context: { field: 'fileCommitSink.dir' } });
    }
    this.#transactions = fs.transactions;
  }

  beginTransaction(): TransactionHandle {
    const url = `${this.#dir}/part-${String(this.#context.subtask).padStart(5, '0')}-${this.#context.attempt}-${randomBytes(6).toString('hex')}`;
    this.#open.set(url, { lines: [], buffered: 0, writer: undefined, writing: Promise.resolve() });
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
    this.#open.delete(url);
    if (tx.writer === undefined) return { url, upload: null };
    return { url, upload: await tx.writer.preCommit() };
  }

  async commit(handle: TransactionHandle): Promise<void> {
    const { upload } = handle as unknown as ExternalTransaction;
    if (upload === null || upload === undefined) return;
    await this.#transactions.commit(upload);
  }

  async abort(handle: TransactionHandle): Promise<void> {
    const { url, upload } = handle as unknown as ExternalTransaction;
    const tx = this.#open.get(url);
    this.#open.delete(url);
    if (tx !== undefined) {
      await tx.writing.catch(() => {});
      await tx.writer?.abort();
    }
    if (upload !== null && upload !== undefined) await this.#transactions.abort(upload);
  }

  async close(): Promise<void> {
    for (const tx of this.#open.values()) {
      await tx.writing.catch(() => {});
      await tx.writer?.abort().catch(() => {});
    }
    this.#open.clear();
  }

  #flush(url: string): Promise<void> {
    const tx = this.#open.get(url);
    if (tx === undefined) return Promise.resolve();
    if (tx.lines.length === 0) return tx.writing;
    const text = `${tx.lines.join('\n')}\n`;
    tx.lines = [];
    tx.buffered = 0;
    tx.writing = tx.writing.then(async () => {
      tx.writer ??= await this.#transactions.begin(url);
      await tx.writer.write(text);
    });
    return tx.writing;
  }
}
