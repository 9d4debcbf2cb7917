import { constants } from 'node:fs';
import { type FileHandle, access, mkdir, open, readdir, rm, rmdir, stat } from 'node:fs/promises';
import { isAbsolute, join, relative, resolve, sep } from 'node:path';
import { ShuffleError, invalidArgument, invalidConfig } from '@weft/shuffle-api';
import type { BlobReader, BlobStore, BlobWriter, OpenFile } from './blob-store.js';
import { checkKey } from './object-key.js';
import { blobNotFound, blobTruncated, storageUnavailable } from './storage-errors.js';

export interface LocalBlobStoreOptions {
  /** Absolute directory holding the objects; created when missing. */
  readonly dir: string;
  /**
   * fsync each object when it is completed, so it survives a machine crash (not only a process crash).
   * @defaultValue false
   */
  readonly syncOnComplete?: boolean;
}

function isErrno(error: unknown, code: string): boolean {
  return typeof error === 'object' && error !== null && (error as { code?: unknown }).code === code;
}

/** Objects as files under one directory: key `a/b/c.wsm` is `<dir>/a/b/c.wsm`. Appends, positional reads. */
export class LocalBlobStore implements BlobStore {
  readonly description: string;
  private readonly root: string;

  constructor(private readonly options: LocalBlobStoreOptions) {
    if (typeof options.dir !== 'string' || !isAbsolute(options.dir)) {
      throw invalidConfig('store.dir', `expected an absolute directory, got ${JSON.stringify(options.dir)}`);
    }
    this.root = resolve(options.dir);
    this.description = `file://${this.root}`;
  }

  async start(): Promise<void> {
    try {
      await mkdir(this.root, { recursive: true });
      await access(this.root, constants.W_OK | constants.R_OK);
      if (!(await stat(this.root)).isDirectory()) throw new Error('not a directory');
    } catch (cause) {
      throw invalidConfig('store.dir', `${this.root} is not a writable directory: ${(cause as Error).message}`, cause);
    }
  }

  async createWriter(key: string): Promise<BlobWriter> {
    const path = this.pathOf(key);
    let handle: FileHandle | undefined;
    for (let tries = 0; handle === undefined; tries++) {
      try {
        await mkdir(join(path, '..'), { recursive: true });
        handle = await open(path, 'wx');
      } catch (cause) {
        // a concurrent delete may prune the fresh directory between mkdir and open: try again
        if (isErrno(cause, 'ENOENT') && tries < 3) continue;
        // keys are unique per writer: one that exists was given twice, and stays taken however long one waits
        if (isErrno(cause, 'EEXIST')) throw invalidArgument('key', `object ${key} already exists in ${this.description}`, { blobKey: key });
        throw storageUnavailable(this.description, `create ${key}`, cause);
      }
    }
    return new LocalBlobWriter(key, path, handle, this.description, this.options.syncOnComplete ?? false);
  }

  async openReader(key: string): Promise<BlobReader> {
    const path = this.pathOf(key);
    let handle: FileHandle;
    try {
      handle = await open(path, 'r');
    } catch (cause) {
      if (isErrno(cause, 'ENOENT')) throw blobNotFound(this.description, key, cause);
      throw storageUnavailable(this.description, `open ${key}`, cause);
    }
    const store = this.description;
    const held = new Set<Promise<unknown>>();
    const file: OpenFile = {
      fd: handle.fd,
      hold<T>(work: Promise<T>): Promise<T> {
        const settled: Promise<unknown> = work.then(
          (): boolean => held.delete(settled),
          (): boolean => held.delete(settled),
        );
        held.add(settled);
        return work;
      },
      truncated: (offset, length, filled) => blobTruncated(store, key, offset, length, filled),
      failed: (cause) => storageUnavailable(store, `read ${key}`, cause),
    };
    return {
      sharedTargets: true,
      file,
      async read(offset: number, length: number, into?: Uint8Array): Promise<Uint8Array> {
        const out = into === undefined ? Buffer.allocUnsafe(length) : into.subarray(0, length);
        let filled = 0;
        try {
          while (filled < length) {
            const { bytesRead } = await handle.read(out, filled, length - filled, offset + filled);
            if (bytesRead === 0) break;
            filled += bytesRead;
          }
        } catch (cause) {
          throw storageUnavailable(store, `read ${key}`, cause);
        }
        if (filled < length) throw blobTruncated(store, key, offset, length, filled);
        return out;
      },
      close: async () => {
        // reads a worker makes on this file descriptor end before it is closed (and its number reused)
        while (held.size > 0) await Promise.all(held);
        await handle.close().catch(() => undefined);
      },
    };
  }

  async delete(key: string): Promise<void> {
    await this.deleteExisting(key);
  }

  async deleteExisting(key: string): Promise<boolean> {
    const path = this.pathOf(key);
    try {
      await rm(path);
    } catch (cause) {
      if (isErrno(cause, 'ENOENT')) return false;
      throw storageUnavailable(this.description, `delete ${key}`, cause);
    }
    await this.pruneEmptyParents(path);
    return true;
  }

  async listKeys(prefix = ''): Promise<string[]> {
    const out: string[] = [];
    const walk = async (dir: string): Promise<void> => {
      let entries;
      try {
        entries = await readdir(dir, { withFileTypes: true });
      } catch (cause) {
        if (isErrno(cause, 'ENOENT')) return;
        throw storageUnavailable(this.description, 'list', cause);
      }
      for (const entry of entries) {
        const path = join(dir, entry.name);
        if (entry.isDirectory()) await walk(path);
        else out.push(relative(this.root, path).split(sep).join('/'));
      }
    };
    await walk(this.directoryOfPrefix(prefix));
    return out.filter((key) => key.startsWith(prefix)).sort();
  }

  async close(): Promise<void> {}

  /** The directory the prefix's whole segments name (only it can hold matching keys); the root for any other prefix. */
  private directoryOfPrefix(prefix: string): string {
    const dir = prefix.slice(0, Math.max(0, prefix.lastIndexOf('/')));
    try {
      return dir === '' ? this.root : this.pathOf(dir);
    } catch {
      return this.root;
    }
  }

  private pathOf(key: string): string {
    const path = resolve(this.root, ...checkKey(key).split('/'));
    if (!path.startsWith(this.root + sep)) throw new ShuffleError('SHF_ERR_INVALID_ARGUMENT', `key ${key} escapes ${this.root}`);
    return path;
  }

  /** Removes the partition and job directories a delete left empty (never the root). */
  private async pruneEmptyParents(path: string): Promise<void> {
    let dir = resolve(path, '..');
    while (dir.startsWith(this.root + sep)) {
      try {
        await rmdir(dir);
      } catch {
        return;
      }
      dir = resolve(dir, '..');
    }
  }
}

class LocalBlobWriter implements BlobWriter {
  readonly bufferedBytes = 0;
  readonly maxRetainedBytes = 0;
  readonly uploadId = undefined;
  readonly concurrentAppends = true;
  bytesWritten = 0;
  private readonly appends = new PositionalAppends();
  private done = false;

  constructor(
    readonly key: string,
    private readonly path: string,
    private readonly handle: FileHandle,
    private readonly store: string,
    private readonly sync: boolean,
  ) {}

  append(chunks: readonly Uint8Array[]): Promise<void> {
    const at = this.bytesWritten;
    this.bytesWritten += byteLength(chunks);
    return this.appends.track(writevAll(this.handle, chunks, at), (cause) => storageUnavailable(this.store, `write ${this.key}`, cause));
  }

  async complete(): Promise<number> {
    try {
      await this.appends.settled();
      if (this.sync) await this.handle.sync();
      this.done = true;
      await this.handle.close();
    } catch (cause) {
      throw storageUnavailable(this.store, `complete ${this.key}`, cause);
    }
    return this.bytesWritten;
  }

  async abort(): Promise<void> {
    if (!this.done) {
      this.done = true;
      await this.appends.settled().catch(() => undefined);
      await this.handle.close().catch(() => undefined);
    }
    await rm(this.path, { force: true }).catch(() => undefined);
  }
}

/** Total bytes of `chunks`. */
export function byteLength(chunks: readonly Uint8Array[]): number {
  let bytes = 0;
  for (const chunk of chunks) bytes += chunk.length;
  return bytes;
}

/**
 * The positional appends of one file in flight (BlobWriter.concurrentAppends): each is started at the
 * offset it took when called; `settled()` resolves once all have landed, rejects with the first failure.
 */
export class PositionalAppends {
  private readonly inFlight = new Set<Promise<unknown>>();
  private failure: Error | undefined;

  /** Tracks one positional write; resolves when it has landed, rejects with `describe(cause)`. */
  track(write: Promise<number>, describe: (cause: unknown) => Error): Promise<void> {
    const landed = write.then(
      () => undefined,
      (cause: unknown) => {
        const error = describe(cause);
        this.failure ??= error;
        throw error;
      },
    );
    const settled = landed.catch(() => undefined).finally(() => this.inFlight.delete(settled));
    this.inFlight.add(settled);
    return landed;
  }

  /** Resolves once every append started so far has landed; rejects when one failed. */
  async settled(): Promise<void> {
    while (this.inFlight.size > 0) await Promise.all(this.inFlight);
    if (this.failure !== undefined) throw this.failure;
  }
}

/**
 * Writes `chunks` in order at `position` with positional writev (no concatenation): at most IOV_MAX
 * buffers per call, a short write continues where it stopped. Resolves with the bytes written.
 */
export async function writevAll(handle: FileHandle, chunks: readonly Uint8Array[], position: number): Promise<number> {
  // the first writev is started before this returns: a caller that does not yield still gets its bytes moving
  let pending = chunks.filter((chunk) => chunk.length > 0);
  let written = 0;
  while (pending.length > 0) {
    const { bytesWritten } = await handle.writev(pending.length > 1024 ? pending.slice(0, 1024) : pending, position + written);
    written += bytesWritten;
    pending = skip(pending, bytesWritten);
  }
  return written;
}

/** What remains of `chunks` after the first `bytes` bytes. */
function skip(chunks: readonly Uint8Array[], bytes: number): Uint8Array[] {
  let i = 0;
  let left = bytes;
  while (i < chunks.length && left >= chunks[i]!.length) left -= chunks[i++]!.length;
  const rest = chunks.slice(i);
  if (left > 0 && rest.length > 0) rest[0] = rest[0]!.subarray(left);
  return rest;
}
