import type { BlobWriter } from './blob-store.js';
import type { S3BlobStore } from './s3-blob-store.js';
import { storageUnavailable } from './storage-errors.js';

/** S3's most parts in one multipart upload. */
export const MAX_PARTS = 10_000;

/**
 * One object of an S3BlobStore. Streaming (`append`): parts of a multipart upload, each at least
 * `minPartBytes` (a smaller tail is held until the next append; an object that never reaches one part is
 * one PutObject at `complete()`). Whole (`writeWhole`): one streamed PutObject of known length, or above
 * `maxPutBytes` a multipart upload of parts streamed from the body — nothing held in memory but the
 * pieces in flight.
 */
export class S3BlobWriter implements BlobWriter {
  bytesWritten = 0;
  uploadId: string | undefined;
  private tail: Uint8Array | null = null;
  private sending = 0;
  private readonly etags: string[] = [];
  private readonly fullKey: string;
  private finished = false;

  constructor(
    private readonly store: S3BlobStore,
    readonly key: string,
    readonly maxRetainedBytes: number,
    private readonly maxPutBytes: number,
  ) {
    this.fullKey = store.fullKey(key);
  }

  get bufferedBytes(): number {
    return (this.tail?.length ?? 0) + this.sending;
  }

  async append(chunks: readonly Uint8Array[]): Promise<void> {
    const length = chunks.reduce((sum, chunk) => sum + chunk.length, 0);
    if (length === 0) return;
    this.bytesWritten += length;
    // one contiguous body: the tail, then the chunks (S3 needs each part's length up front)
    const joined = concat(this.tail === null ? chunks : [this.tail, ...chunks]);
    this.tail = null;
    if (joined.length < this.maxRetainedBytes) {
      this.tail = joined;
      return;
    }
    this.sending = joined.length;
    try {
      await this.sendPart(joined);
    } finally {
      this.sending = 0;
    }
  }

  async complete(): Promise<number> {
    const tail = this.tail ?? new Uint8Array(0);
    this.tail = null;
    try {
      if (this.uploadId === undefined) {
        await this.store.putObject(this.fullKey, tail);
      } else {
        if (tail.length > 0 || this.etags.length === 0) await this.sendPart(tail);
        await this.store.completeUpload(this.fullKey, this.uploadId, this.etags);
      }
    } catch (cause) {
      throw storageUnavailable(this.store.description, `complete ${this.key}`, cause);
    }
    this.finished = true;
    return this.bytesWritten;
  }

  async writeWhole(length: number, body: (start: number, end: number) => AsyncIterable<Uint8Array>): Promise<void> {
    try {
      if (length <= this.maxPutBytes) {
        await this.store.putStream(this.fullKey, length, () => body(0, length));
      } else {
        const partBytes = Math.max(this.maxRetainedBytes, Math.ceil(length / MAX_PARTS));
        this.uploadId = await this.store.createUpload(this.fullKey);
        for (let start = 0; start < length; start += partBytes) {
          const end = Math.min(length, start + partBytes);
          this.etags.push(await this.store.uploadPartStream(this.fullKey, this.uploadId, this.etags.length + 1, end - start, () => body(start, end)));
        }
        await this.store.completeUpload(this.fullKey, this.uploadId, this.etags);
      }
    } catch (cause) {
      throw storageUnavailable(this.store.description, `upload ${this.key}`, cause);
    }
    this.bytesWritten = length;
    this.finished = true;
  }

  async abort(): Promise<void> {
    this.tail = null;
    if (this.uploadId !== undefined && !this.finished) await this.store.abortUpload(this.fullKey, this.uploadId).catch(() => undefined);
    await this.store.delete(this.key).catch(() => undefined);
  }

  private async sendPart(body: Uint8Array): Promise<void> {
    try {
      this.uploadId ??= await this.store.createUpload(this.fullKey);
      if (this.etags.length >= MAX_PARTS) throw new Error(`object ${this.key} needs more than ${MAX_PARTS} parts; raise producerMemoryBytes`);
      this.etags.push(await this.store.uploadPart(this.fullKey, this.uploadId, this.etags.length + 1, body));
    } catch (cause) {
      throw storageUnavailable(this.store.description, `upload part ${this.etags.length + 1} of ${this.key}`, cause);
    }
  }
}

function concat(chunks: readonly Uint8Array[]): Uint8Array {
  if (chunks.length === 1) return chunks[0]!.slice();
  const out = Buffer.allocUnsafe(chunks.reduce((sum, chunk) => sum + chunk.length, 0));
  let at = 0;
  for (const chunk of chunks) {
    out.set(chunk, at);
    at += chunk.length;
  }
  return out;
}
