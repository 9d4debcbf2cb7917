import { open, readdir, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { EngineError } from '../errors/engine-error.js';
import type { ExternalFileSystem } from '../io/external-file-system.js';
import { type JobPath, resolveJobPath } from '../io/job-paths.js';
import { shareOf } from './range-source.js';
import { isTextChunkInput, type OperatorContext, type Output, type SourceOperator, type TextChunkInput } from './stream-operator.js';

/** Bytes read per `read()`; a line longer than this grows the buffer. */
const CHUNK_BYTES = 1 << 20;
const NEWLINE = 0x0a;

export interface InputFile {
  readonly path: string;
  readonly size: number;
}

/** Positional reads of one input file: a local file handle, or ranged reads of an external object. */
interface SplitReader {
  read(buffer: Buffer, offset: number, length: number, position: number): Promise<{ bytesRead: number }>;
  close(): Promise<void>;
}

/** The files a text source reads: the file (object) itself, or a directory's (prefix's) regular files (not `.`/`_`-prefixed), by name. */
export async function listJobInputFiles(path: JobPath): Promise<InputFile[]> {
  if (path.local !== undefined) return listInputFiles(path.local);
  return (await path.external.list(path.url)).map((f) => ({ path: f.url, size: f.size }));
}

/** `listJobInputFiles` for a local path. */
export async function listInputFiles(path: string): Promise<InputFile[]> {
  const info = await stat(path);
  if (!info.isDirectory()) return [{ path, size: info.size }];
  const names = (await readdir(path)).filter((n) => !n.startsWith('.') && !n.startsWith('_')).sort();
  const files: InputFile[] = [];
  for (const name of names) {
    const file = join(path, name);
    const s = await stat(file);
    if (s.isFile()) files.push({ path: file, size: s.size });
  }
  return files;
}

/**
 * The lines of a text file (or directory of files), split across subtasks by bytes: the files are laid
 * end to end, subtask i takes the bytes `[i*T/p, (i+1)*T/p)`, and owns every line whose first byte lies in
 * its share — so it skips a line that began before its share and finishes the last one past its end.
 * Lines are decoded as UTF-8 whole chunks at a time (never split inside a character) and lose their `\n`
 * or `\r\n`. A `<scheme>://` path (an object, or the objects under a prefix) is read the same way from
 * its ExternalFileSystem, each read one ranged read of at most a chunk: a subtask reads only its share
 * (and the end of the line it finishes), never the whole object.
 */
export class TextFileSource implements SourceOperator {
  recordsEmitted = 0;
  readonly #path: JobPath;
  readonly #description: string;
  #buffer = Buffer.allocUnsafe(CHUNK_BYTES);
  /** Where whole chunks go instead of lines (the plan's `text-chunks` fusion), or undefined. */
  readonly #chunks: TextChunkInput | undefined;

  /** `chunks`: the plan fused this source with its output, which takes chunks of bytes (TextChunkInput) if it can. */
  constructor(
    path: string,
    private readonly output: Output,
    private readonly context: OperatorContext,
    chunks = false,
  ) {
    this.#path = resolveJobPath(path, context.cwd, context.fileSystems);
    this.#description = this.#path.local ?? this.#path.url;
    this.#chunks = chunks && isTextChunkInput(output) ? output : undefined;
  }

  /** True when the source hands its output chunks of bytes, not lines (the fused path was taken). */
  get emitsChunks(): boolean {
    return this.#chunks !== undefined;
  }

  async run(): Promise<void> {
    let files: InputFile[];
    try {
      files = await listJobInputFiles(this.#path);
    } catch (error) {
      throw this.#unreadable(this.#description, error);
    }
    const total = files.reduce((sum, f) => sum + f.size, 0);
    const { from, to } = shareOf(0, total, this.context.subtask, this.context.parallelism);
    let base = 0;
    for (const file of files) {
      const start = Math.max(from, base) - base;
      const end = Math.min(to, base + file.size) - base;
      base += file.size;
      if (start >= end) continue;
      let handle: SplitReader;
      try {
        handle = this.#path.external === undefined ? await open(file.path, 'r') : externalReader(this.#path.external, file.path);
      } catch (error) {
        throw this.#unreadable(file.path, error);
      }
      try {
        await this.#readSplit(handle, file.size, start, end);
      } finally {
        await handle.close();
      }
    }
  }

  /** Emits the lines whose first byte lies in `[start, end)` of one file. */
  async #readSplit(handle: SplitReader, size: number, start: number, end: number): Promise<void> {
    const begin = start === 0 ? 0 : (await this.#findNewline(handle, start - 1, size)) + 1;
    if (begin >= end) return;
    const { backpressure, signal } = this.context;
    let carry = 0;
    let position = begin;
    for (;;) {
      if (carry === this.#buffer.length) {
        const grown = Buffer.allocUnsafe(this.#buffer.length * 2);
        this.#buffer.copy(grown, 0, 0, carry);
        this.#buffer = grown;
      }
      const buffer = this.#buffer;
      const { bytesRead } = await handle.read(buffer, carry, buffer.length - carry, position);
      position += bytesRead;
      const length = carry + bytesRead;
      const dataStart = position - length;
      const eof = bytesRead === 0 || position >= size;
      // The last owned line ends at the first newline at or after byte end-1.
      let stop = -1;
      if (dataStart + length > end - 1) {
        const from = Math.max(0, end - 1 - dataStart);
        stop = buffer.indexOf(NEWLINE, from);
        if (stop >= length) stop = -1;
      }
      if (stop !== -1) {
        this.#emitLines(buffer, stop);
        return;
      }
      if (eof) {
        if (length > 0) this.#emitLines(buffer, length);
        return;
      }
      const last = buffer.lastIndexOf(NEWLINE, length - 1);
      if (last === -1) {
        carry = length;
        continue;
      }
      this.#emitLines(buffer, last);
      carry = length - last - 1;
      buffer.copy(buffer, 0, last + 1, length);
      if (backpressure.blocked) await backpressure.wait();
      if (signal.aborted) throw signal.reason;
    }
  }

  /** Emits the lines of `buffer[0, end)` (which ends before a newline, or at the end of the file). */
  #emitLines(buffer: Buffer, end: number): void {
    if (this.#chunks !== undefined) {
      this.recordsEmitted += this.#chunks.collectTextChunk(buffer, 0, end);
      return;
    }
    const text = buffer.toString('utf8', 0, end);
    const lines = text.split('\n');
    const output = this.output;
    if (text.includes('\r')) {
      for (let i = 0; i < lines.length; i++) {
        const line = lines[i] as string;
        output.collect(line.endsWith('\r') ? line.slice(0, -1) : line);
      }
    } else {
      for (let i = 0; i < lines.length; i++) output.collect(lines[i]);
    }
    this.recordsEmitted += lines.length;
  }

  /** The offset of the first newline at or after `from`, or `size` when there is none. */
  async #findNewline(handle: SplitReader, from: number, size: number): Promise<number> {
    const probe = Buffer.allocUnsafe(64 * 1024);
    let position = from;
    while (position < size) {
      const { bytesRead } = await handle.read(probe, 0, probe.length, position);
      if (bytesRead === 0) break;
      const at = probe.indexOf(NEWLINE);
      if (at !== -1 && at < bytesRead) return position + at;
      position += bytesRead;
    }
    return size;
  }

  #unreadable(path: string, error: unknown): EngineError {
    return inputUnreadable(this.context.operatorName, path, error);
  }
}

/** Ranged reads of one object of `fileSystem`: each `read` is one ranged read of at most `length` bytes. */
function externalReader(fileSystem: ExternalFileSystem, url: string): SplitReader {
  return {
    async read(buffer, offset, length, position) {
      const bytes = await fileSystem.read(url, position, length);
      buffer.set(bytes.subarray(0, length), offset);
      return { bytesRead: Math.min(bytes.length, length) };
    },
    close: async () => {},
  };
}

/** `WEFT_ERR_INPUT_UNREADABLE`: text source `operator` cannot read `path` (the message says why). */
export function inputUnreadable(operator: string, path: string, error: unknown): EngineError {
  const code = (error as NodeJS.ErrnoException)?.code;
  const reason = code === 'ENOENT' ? 'no such file or directory' : code === 'EACCES' ? 'permission denied' : (error as Error)?.message ?? String(error);
  return new EngineError('WEFT_ERR_INPUT_UNREADABLE', `operator ${JSON.stringify(operator)} cannot read ${path}: ${reason}`, {
    cause: error,
    context: { path, operator },
  });
}
