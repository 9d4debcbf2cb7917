import { type FileHandle, mkdir, open } from 'node:fs/promises';
import type { FormatFunction } from '../api/functions.js';
import { EngineError } from '../errors/engine-error.js';
import type { ExternalFileWriter } from '../io/external-file-system.js';
import { type JobPath, joinSinkFile, resolveJobPath, sinkTempDirOf } from '../io/job-paths.js';
import { userFunctionError } from '../runtime/user-function-error.js';
import type { OperatorContext, SinkOutput, StreamOperator } from './stream-operator.js';

/** Bytes (roughly: UTF-16 units) buffered before a write is issued. */
const FLUSH_THRESHOLD = 1 << 20;

/**
 * Writes one line per value to this attempt's own file, `<dir>/.<name>.weft-<jobId>/part-<subtask>@<attempt>`
 * (for a `<scheme>://` output, an object of that key through its ExternalFileSystem, readable once the
 * attempt finished). Nothing is visible at the output path until the job master publishes the finished
 * attempts' files when the whole job succeeds (`publishSinks`); a failed job's files are deleted.
 */
export class TextSinkOperator implements StreamOperator {
  readonly #target: JobPath;
  readonly #path: string;
  readonly #tempDir: string;
  readonly #file: string;
  #handle: FileHandle | ExternalFileWriter | undefined;
  #lines: string[] = [];
  #buffered = 0;
  #writing: Promise<void> = Promise.resolve();
  #finished = false;

  constructor(
    path: string,
    private readonly format: FormatFunction<unknown> | undefined,
    private readonly context: OperatorContext,
  ) {
    this.#target = resolveJobPath(path, context.cwd, context.fileSystems);
    this.#path = this.#target.local ?? this.#target.url;
    this.#tempDir = sinkTempDirOf(this.#target, context.jobId);
    this.#file = joinSinkFile(this.#target, this.#tempDir, `part-${String(context.subtask).padStart(5, '0')}@${context.attempt}`);
  }

  async open(): Promise<void> {
    try {
      if (this.#target.external !== undefined) {
        this.#handle = await this.#target.external.createWriter(this.#file);
        return;
      }
      await mkdir(this.#tempDir, { recursive: true });
      this.#handle = await open(this.#file, 'w');
    } catch (error) {
      throw this.#failure(error);
    }
  }

  collect(value: unknown): void {
    let line: string;
    if (this.format !== undefined) {
      try {
        line = this.format(value);
      } catch (error) {
        throw userFunctionError(this.context, error, 'format function');
      }
      if (typeof line !== 'string') throw userFunctionError(this.context, new TypeError(`format must return a string, got ${typeof line}`), 'format function');
    } else {
      line = typeof value === 'string' ? value : JSON.stringify(value);
    }
    this.#lines.push(line);
    this.#buffered += line.length + 1;
    if (this.#buffered >= FLUSH_THRESHOLD) this.context.backpressure.blockOn(this.#flush());
  }

  async finish(): Promise<void> {
    await this.#flush();
    const handle = this.#handle;
    this.#handle = undefined;
    try {
      if (handle !== undefined) await ('complete' in handle ? handle.complete() : handle.close());
    } catch (error) {
      throw this.#failure(error);
    }
    this.#finished = true;
  }

  async close(): Promise<void> {
    const handle = this.#handle;
    this.#handle = undefined;
    await this.#writing.catch(() => {});
    // an external part not finished is dropped (a local one stays until the job master removes it)
    if (handle !== undefined) await ('abort' in handle ? handle.abort() : handle.close()).catch(() => {});
  }

  sinkOutput(): SinkOutput | undefined {
    if (!this.#finished) return undefined;
    const { subtask, parallelism } = this.context;
    return { kind: 'text-file', sink: this.context.operatorName, path: this.#path, tempDir: this.#tempDir, file: this.#file, subtask, parallelism };
  }

  #flush(): Promise<void> {
    if (this.#lines.length === 0) return this.#writing;
    const text = `${this.#lines.join('\n')}\n`;
    this.#lines = [];
    this.#buffered = 0;
    const handle = this.#handle;
    this.#writing = this.#writing.then(async () => {
      if (handle === undefined) throw new Error('the sink file is closed');
      try {
        await handle.write(text);
      } catch (error) {
        throw this.#failure(error);
      }
    });
    return this.#writing;
  }

  #failure(error: unknown): EngineError {
    return new EngineError('WEFT_ERR_SINK_FAILED', `sink ${JSON.stringify(this.context.operatorName)} cannot write ${this.#file}: ${(error as Error).message}`, {
      cause: error,
      context: { path: this.#path, operator: this.context.operatorName, subtask: this.context.subtask },
    });
  }
}
