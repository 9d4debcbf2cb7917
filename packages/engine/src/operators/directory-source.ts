import { open, readdir, stat } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { awaitFinalCheckpoint } from './await-final-checkpoint.js';
import { inputUnreadable } from './text-file-source.js';
import type { OperatorContext, Output, SourceOperator } from './stream-operator.js';

/** Lines emitted between two yields to the event loop (where checkpoint triggers and cancellation get in). */
const BATCH = 256;
const CHUNK_BYTES = 64 * 1024;
const NEWLINE = 0x0a;
/** The operator list state (union) of `[file name, offset]`: offset -1 = read whole, else the next byte to read. */
export const DIRECTORY_FILES_STATE = 'directory-files';

export interface DirectorySourceSpec {
  readonly path: string;
  readonly pollIntervalMs: number;
  readonly endMarker: string | undefined;
}

/** Whether a directory entry is a file to read: not hidden (`.`), not in progress (`_`, `.tmp`). */
export function isVisibleInputName(name: string): boolean {
  return !name.startsWith('.') && !name.startsWith('_') && !name.endsWith('.tmp');
}

/** The subtask that reads file `name` at `parallelism`: FNV-1a of its UTF-16 code units, modulo the parallelism. */
export function directoryFileOwner(name: string, parallelism: number): number {
  let hash = 0x811c9dc5;
  for (let i = 0; i < name.length; i++) {
    hash ^= name.charCodeAt(i);
    hash = Math.imul(hash, 0x01000193) >>> 0;
  }
  return hash % parallelism;
}

/** A local directory path as the job gave it (plain, relative to `cwd`, or `file://`). */
export function resolveDirectory(path: string, cwd: string): string {
  return path.startsWith('file://') ? fileURLToPath(path) : resolve(cwd, path);
}

/**
 * `ctx.watchDirectory`: reads each file of a directory that belongs to this subtask (directoryFileOwner),
 * the ones listed first in name order, then those a later listing shows (every `pollIntervalMs`), as
 * lines without their `\n` / `\r\n`. A file is marked read once its last line is emitted; until then
 * the offset after the last emitted line is its position. Both are operator state (union-distributed: a
 * restore with another parallelism gives every subtask the whole record, each keeps its own files), so a
 * restore resumes at the exact line. With `endMarker`, the first listing that shows the marker is the last.
 */
export class DirectorySource implements SourceOperator {
  recordsEmitted = 0;
  readonly #dir: string;
  /** Files read whole. */
  readonly #done = new Set<string>();
  /** The file being read and the offset after its last emitted line. */
  #current: { readonly name: string; offset: number } | undefined;

  constructor(
    private readonly spec: DirectorySourceSpec,
    private readonly output: Output,
    private readonly context: OperatorContext,
  ) {
    this.#dir = resolveDirectory(spec.path, context.cwd);
    const state = context.state;
    if (state?.restored === true) {
      for (const [name, offset] of state.operator().listState<[string, number]>(DIRECTORY_FILES_STATE, 'union').get()) {
        if (directoryFileOwner(name, context.parallelism) !== context.subtask) continue;
        if (offset < 0) this.#done.add(name);
        else if (!this.#done.has(name)) this.#current = { name, offset };
      }
      if (this.#current !== undefined && this.#done.has(this.#current.name)) this.#current = undefined;
    }
  }

  snapshotState(): void {
    const entries: [string, number][] = [...this.#done].map((name) => [name, -1]);
    if (this.#current !== undefined) entries.push([this.#current.name, this.#current.offset]);
    this.context.state?.operator().listState<[string, number]>(DIRECTORY_FILES_STATE, 'union').update(entries);
  }

  async run(): Promise<void> {
    const { signal } = this.context;
    for (;;) {
      const { files, ended } = await this.#list();
      const current = this.#current;
      // the file a restore left half read goes first
      if (current !== undefined) files.sort((a, b) => (a === current.name ? -1 : b === current.name ? 1 : 0));
      for (const name of files) {
        await this.#readFile(name);
        if (signal.aborted) throw signal.reason;
      }
      if (ended) {
        // checkpointed: a finished task takes no checkpoint, so it stays a running task until the job's final one
        await awaitFinalCheckpoint(this.context);
        return;
      }
      await this.#sleep(this.spec.pollIntervalMs);
    }
  }

  /** This subtask's unread files, in name order, and whether the listing showed the end marker. */
  async #list(): Promise<{ files: string[]; ended: boolean }> {
    let names: string[];
    try {
      names = await readdir(this.#dir);
    } catch (error) {
      throw inputUnreadable(this.context.operatorName, this.#dir, error);
    }
    const ended = this.spec.endMarker !== undefined && names.includes(this.spec.endMarker);
    const { subtask, parallelism } = this.context;
    const files: string[] = [];
    for (const name of names.sort()) {
      if (name === this.spec.endMarker || !isVisibleInputName(name) || this.#done.has(name)) continue;
      if (directoryFileOwner(name, parallelism) !== subtask) continue;
      files.push(name);
    }
    return { files, ended };
  }

  /** Reads `name` from its recorded offset (0 for a new file) to its end, then marks it done. */
  async #readFile(name: string): Promise<void> {
    const path = join(this.#dir, name);
    const { backpressure, signal } = this.context;
    let handle;
    try {
      if (!(await stat(path)).isFile()) return;
      handle = await open(path, 'r');
    } catch (error) {
      throw inputUnreadable(this.context.operatorName, path, error);
    }
    try {
      const current = this.#current?.name === name ? this.#current : { name, offset: 0 };
      this.#current = current;
      let buffer = Buffer.allocUnsafe(CHUNK_BYTES);
      let held = 0;
      let position = current.offset;
      for (;;) {
        if (held === buffer.length) {
          const grown = Buffer.allocUnsafe(buffer.length * 2);
          buffer.copy(grown, 0, 0, held);
          buffer = grown;
        }
        const { bytesRead } = await handle.read(buffer, held, buffer.length - held, position);
        position += bytesRead;
        const length = held + bytesRead;
        // the file offset of buffer[0]
        const base = position - length;
        let start = 0;
        let emitted = 0;
        for (;;) {
          const newline = buffer.indexOf(NEWLINE, start);
          if (newline === -1 || newline >= length) break;
          // the offset moves with each line, before it goes out: a snapshot taken from here on resumes after it
          current.offset = base + newline + 1;
          this.#emit(buffer, start, newline);
          start = newline + 1;
          if (++emitted % BATCH === 0) {
            if (backpressure.blocked) await backpressure.wait();
            await new Promise<void>((r) => setImmediate(r));
            if (signal.aborted) throw signal.reason;
          }
        }
        if (bytesRead === 0) {
          // the end of the file: a last line without a newline still counts
          current.offset = base + length;
          this.#done.add(name);
          this.#current = undefined;
          if (length > start) this.#emit(buffer, start, length);
          return;
        }
        buffer.copy(buffer, 0, start, length);
        held = length - start;
        if (backpressure.blocked) await backpressure.wait();
        if (signal.aborted) throw signal.reason;
      }
    } finally {
      await handle.close();
    }
  }

  #emit(buffer: Buffer, start: number, end: number): void {
    const stop = end > start && buffer[end - 1] === 0x0d ? end - 1 : end;
    this.output.collect(buffer.toString('utf8', start, stop));
    this.recordsEmitted++;
  }

  /** Waits `ms` (a checkpoint trigger may arrive meanwhile); cancellation ends the wait. */
  async #sleep(ms: number): Promise<void> {
    const signal = this.context.signal;
    if (signal.aborted) throw signal.reason;
    await new Promise<void>((done) => {
      const timer = setTimeout(finish, ms);
      function finish(): void {
        clearTimeout(timer);
        signal.removeEventListener('abort', finish);
        done();
      }
      signal.addEventListener('abort', finish, { once: true });
    });
    if (signal.aborted) throw signal.reason;
  }
}
