import { randomUUID } from 'node:crypto';
import { type FileHandle, mkdir, open, unlink } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { BlobReader, BlobWriter } from './blob-store.js';
import { PositionalAppends, byteLength, writevAll } from './local-blob-store.js';
import { blobTruncated, storageUnavailable } from './storage-errors.js';

/**
 * A producer's local scratch file: appended like a blob, read back with positional reads, never visible
 * to anyone else. Its name is unlinked as soon as it is created, so the disk space goes back to the
 * system when the file is closed or the process dies — a crashed producer leaves nothing behind.
 */
export class SpillFile implements BlobWriter, BlobReader {
  readonly key: string;
  readonly bufferedBytes = 0;
  readonly maxRetainedBytes = 0;
  readonly uploadId = undefined;
  readonly concurrentAppends = true;
  bytesWritten = 0;
  private readonly appends = new PositionalAppends();
  private closed = false;
  #closing: Promise<void> | undefined;

  private constructor(
    private readonly handle: FileHandle,
    private readonly description: string,
  ) {
    this.key = description;
  }

  /** Creates a spill file in `dir` (default: the system's temporary directory). */
  static async create(dir: string = tmpdir()): Promise<SpillFile> {
    const path = join(dir, `weft-spill-${process.pid}-${randomUUID()}.tmp`);
    let handle: FileHandle;
    try {
      await mkdir(dir, { recursive: true });
      handle = await open(path, 'wx+');
    } catch (cause) {
      throw storageUnavailable(`file://${dir}`, 'create a spill file', cause);
    }
    await unlink(path).catch(() => undefined);
    return new SpillFile(handle, `file://${path} (spill)`);
  }

  append(chunks: readonly Uint8Array[]): Promise<void> {
    const at = this.bytesWritten;
    this.bytesWritten += byteLength(chunks);
    return this.appends.track(writevAll(this.handle, chunks, at), (cause) => storageUnavailable(this.description, 'write', cause));
  }

  async read(offset: number, length: number, into?: Uint8Array): Promise<Uint8Array> {
    const out = into === undefined ? Buffer.allocUnsafe(length) : into.subarray(0, length);
    let filled = 0;
    try {
      while (filled < length) {
        const { bytesRead } = await this.handle.read(out, filled, length - filled, offset + filled);
        if (bytesRead === 0) break;
        filled += bytesRead;
      }
    } catch (cause) {
      throw storageUnavailable(this.description, 'read', cause);
    }
    if (filled < length) throw blobTruncated(this.description, this.key, offset, length, filled);
    return out;
  }

  /** The spill stays readable: completing it waits for its appends and changes nothing else. */
  async complete(): Promise<number> {
    await this.appends.settled();
    return this.bytesWritten;
  }

  /** Closes the file (its space is freed) once the appends in flight landed. Idempotent. */
  close(): Promise<void> {
    this.closed = true;
    this.#closing ??= this.appends
      .settled()
      .catch(() => undefined)
      .then(() => this.handle.close())
      .catch(() => undefined);
    return this.#closing;
  }

  abort(): Promise<void> {
    return this.close();
  }
}
