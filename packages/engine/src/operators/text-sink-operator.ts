import { randomBytes } from 'node:crypto';
import { type FileHandle, mkdir, open } from 'node:fs/promises';
import type { FormatFunction } from '../api/functions.js';
import { EngineError } from '../errors/engine-error.js';
import type { ExternalFileWriter } from '../io/external-file-system.js';
import { type JobPath, joinSinkFile, resolveJobPath, sinkTempDirOf } from '../io/job-paths.js';
import { userFunctionError } from '../runtime/user-function-error.js';
import type { OperatorContext, SinkOutput, StreamOperator } from './stream-operator.js';

/** Bytes (roughly: UTF-16 units) buffered before a write is issued. */
const FLUSH_THRESHOLD = 1 << 20;
/** The operator list state of a checkpointed text sink: `[file, bytes]`, the pre-committed prefix of an attempt's part file. */
const PRECOMMITTED_STATE = 'precommitted-parts';
/** Bytes copied at once when a restored attempt takes over a part file's pre-committed prefix. */
const COPY_CHUNK_BYTES = 1 << 20;

/**
 * Writes one line per value to this attempt's own file, `<dir>/.<name>.weft-<jobId>/part-<subtask>@<attempt>`
 * (for a `<scheme>://` output, an object of that key through its ExternalFileSystem, readable once the
 * attempt finished). Nothing is visible at the output path until the job master publishes the finished
 * attempts' files when the whole job succeeds (`publishSinks`); a failed job's files are deleted.
 *
 * In a checkpointed job (a local path): each checkpoint pre-commits — the lines buffered so far are
 * written, and the part file and its length recorded in operator state, before the checkpoint is
 * acknowledged. An attempt restored from a checkpoint starts its own part file with the recorded
 * prefixes of the part files it took over (with another parallelism, the recorded parts are dealt over
 * the new subtasks), so the published file holds each record once however often the job failed. Part
 * files then carry a random suffix (a restored run may number its attempts as an earlier run did), and a
 * failed job keeps them for `--from-checkpoint`. The commit is still the publish at the job's end.
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
  /** UTF-8 bytes handed to writes so far (what the file holds once `#writing` settles). */
  #bytesQueued = 0;

  constructor(
    path: string,
    private readonly format: FormatFunction<unknown> | undefined,
    private readonly context: OperatorContext,
  ) {
    this.#target = resolveJobPath(path, context.cwd, context.fileSystems);
    this.#path = this.#target.local ?? this.#target.url;
    this.#tempDir = sinkTempDirOf(this.#target, context.jobId);
    const suffix = context.state === undefined ? '' : `-${randomBytes(4).toString('hex')}`;
    this.#file = joinSinkFile(this.#target, this.#tempDir, `part-${String(context.subtask).padStart(5, '0')}@${context.attempt}${suffix}`);
    if (context.state !== undefined && this.#target.external !== undefined) {
      throw new EngineError('WEFT_ERR_INVALID_JOB', `sink ${JSON.stringify(context.operatorName)}: a checkpointed job writes text to local paths only yet, not ${this.#path}`, { context: { field: 'writeText' } });
    }
  }

  snapshotState(): Promise<void> | void {
    const state = this.context.state;
    if (state === undefined) return;
    const written = this.#flush();
    state.operator().listState<[string, number]>(PRECOMMITTED_STATE, 'split').update([[this.#file, this.#bytesQueued]]);
    return written;
  }

  async open(): Promise<void> {
    try {
      if (this.#target.external !== undefined) {
        this.#handle = await this.#target.external.createWriter(this.#file);
        return;
      }
      await mkdir(this.#tempDir, { recursive: true });
      this.#handle = await open(this.#file, 'w');
      if (this.context.state?.restored === true) await this.#takeOver(this.#handle as FileHandle);
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

  /** A restored attempt: the pre-committed prefix of every part file it took over, in order, starts its own. */
  async #takeOver(handle: FileHandle): Promise<void> {
    const parts = this.context.state?.operator().listState<[string, number]>(PRECOMMITTED_STATE, 'split').get() ?? [];
    const chunk = Buffer.allocUnsafe(COPY_CHUNK_BYTES);
    for (const [file, bytes] of parts) {
      const source = await open(file, 'r');
      try {
        for (let at = 0; at < bytes; ) {
          const { bytesRead } = await source.read(chunk, 0, Math.min(chunk.length, bytes - at), at);
          if (bytesRead === 0) throw new Error(`${file} holds ${at} bytes, its checkpoint recorded ${bytes}`);
          await handle.write(chunk.subarray(0, bytesRead));
          at += bytesRead;
        }
      } finally {
        await source.close();
      }
      this.#bytesQueued += bytes;
    }
  }

  #flush(): Promise<void> {
    if (this.#lines.length === 0) return this.#writing;
    const text = `${this.#lines.join('\n')}\n`;
    this.#lines = [];
    this.#buffered = 0;
    if (this.context.state !== undefined) this.#bytesQueued += Buffer.byteLength(text, 'utf8');
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
