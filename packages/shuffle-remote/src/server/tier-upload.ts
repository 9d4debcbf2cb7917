import { ShuffleError } from '@weft/shuffle-api';
import type { BlobReader } from '../storage/blob-store.js';
import type { S3BlobStore } from '../storage/s3-blob-store.js';
import { MAX_PARTS } from '../storage/s3-blob-writer.js';
import { storageUnavailable } from '../storage/storage-errors.js';
import type { TierMode } from './shuffle-server-options.js';
import type { TransferSlots } from './transfer-slots.js';

/** Largest read of the local file a tier transfer makes; a transfer holds about three (reading, queued, in the socket). */
export const TIER_PIECE_BYTES = 1024 * 1024;

export interface TierUploadOptions {
  readonly store: S3BlobStore;
  /** The object's key, the same in the tier as on the server's disk. */
  readonly key: string;
  readonly mode: TierMode;
  /** Size of a write-through part (all but the last). */
  readonly partBytes: number;
  readonly slots: TransferSlots;
  /** Opens the local object (being written, or complete) for reading. */
  readonly openLocal: () => Promise<BlobReader>;
}

interface Part {
  readonly number: number;
  readonly start: number;
  readonly end: number;
  etag: Promise<string>;
}

/**
 * The S3 tier copy of one pushed object. It never becomes an S3 object before the attempt commits, so an
 * attempt that never commits (aborted, losing a conflict, swept, released, cut off) leaves nothing in the
 * bucket:
 *
 * - `write-through`: every `partBytes` of the object that reach the local disk go up as one part of a
 *   multipart upload while the push runs (read back from the local file, in TIER_PIECE_BYTES pieces);
 *   `complete()` (at commit) sends the tail as the last part and completes the upload. An object smaller
 *   than one part goes up at `complete()` as one PutObject.
 * - `on-commit`: `complete()` copies the local object (one streamed PutObject; multipart above S3's
 *   single-PUT limit).
 *
 * Every transfer (a part, a whole copy) runs in one of the server's TransferSlots. `abort()` drops
 * whatever reached S3: the multipart upload is aborted and the key deleted (s3rver, which lacks
 * AbortMultipartUpload, keeps the parts of an aborted upload in its directory, never as an object).
 */
export class TierUpload {
  private readonly fullKey: string;
  private readonly parts: Part[] = [];
  /** Bytes handed to parts so far. */
  private scheduled = 0;
  private length: number | undefined;
  private uploadId: Promise<string> | undefined;
  private completing: Promise<void> | undefined;
  private aborting: Promise<void> | undefined;
  /** Some request reached S3: an abort must clean up. */
  private touched = false;

  constructor(private readonly o: TierUploadOptions) {
    this.fullKey = o.store.fullKey(o.key);
  }

  get key(): string {
    return this.o.key;
  }

  /** The local file now holds `bytesOnDisk` bytes: write-through sends each whole part of them. */
  advance(bytesOnDisk: number): void {
    if (this.o.mode !== 'write-through' || this.aborting !== undefined) return;
    while (bytesOnDisk - this.scheduled >= this.o.partBytes) this.schedule(this.scheduled + this.o.partBytes);
  }

  /** The push is whole: `length` bytes. */
  seal(length: number): void {
    this.length = length;
  }

  /** Makes the S3 copy whole and readable; idempotent once it succeeded, tried again after a failure. */
  complete(): Promise<void> {
    this.completing ??= this.finish().catch((error: unknown) => {
      this.completing = undefined;
      throw error;
    });
    return this.completing;
  }

  /** Drops whatever reached S3 (parts, upload, a completed copy). Idempotent; never throws. */
  abort(): Promise<void> {
    this.aborting ??= (async () => {
      await Promise.allSettled([...this.parts.map((p) => p.etag), this.completing]);
      if (!this.touched) return;
      const uploadId = await this.uploadId?.catch(() => undefined);
      if (uploadId !== undefined) await this.o.store.abortUpload(this.fullKey, uploadId).catch(() => undefined);
      await this.o.store.delete(this.o.key).catch(() => undefined);
    })();
    return this.aborting;
  }

  private async finish(): Promise<void> {
    const length = this.length;
    if (length === undefined) throw new ShuffleError('SHF_ERR_INVALID_ARGUMENT', `the push of ${this.o.key} is not complete`);
    this.checkLive();
    try {
      if (this.parts.length === 0) {
        await this.o.slots.run(async () => {
          this.checkLive();
          this.touched = true;
          const writer = await this.o.store.createWriter(this.o.key);
          await writer.writeWhole!(length, (start, end) => this.localBytes(start, end));
        });
      } else {
        if (length > this.scheduled) this.schedule(length);
        const etags: string[] = [];
        for (const part of this.parts) {
          // a part that failed (S3 away for longer than its retries) is sent again once, from the local file
          part.etag = part.etag.catch(() => this.sendPart(part));
          etags.push(await part.etag);
        }
        const uploadId = await this.uploadId!;
        this.checkLive();
        await this.o.store.completeUpload(this.fullKey, uploadId, etags);
      }
    } catch (cause) {
      if (cause instanceof ShuffleError) throw cause;
      throw storageUnavailable(this.o.store.description, `copy ${this.o.key} to the tier`, cause);
    }
    // an abort that came while the copy completed deletes it (it waits for this)
  }

  private schedule(end: number): void {
    if (this.parts.length >= MAX_PARTS) throw storageUnavailable(this.o.store.description, `copy ${this.o.key}`, new Error(`more than ${MAX_PARTS} parts`));
    const part: Part = { number: this.parts.length + 1, start: this.scheduled, end, etag: Promise.resolve('') };
    part.etag = this.sendPart(part);
    part.etag.catch(() => undefined);
    this.parts.push(part);
    this.scheduled = end;
  }

  private sendPart(part: Part): Promise<string> {
    return this.o.slots.run(async () => {
      this.checkLive();
      this.touched = true;
      const uploadId = this.uploadId ?? (this.uploadId = this.o.store.createUpload(this.fullKey));
      const id = await uploadId.catch((error: unknown) => {
        if (this.uploadId === uploadId) this.uploadId = undefined; // the next part asks again
        throw error;
      });
      return this.o.store.uploadPartStream(this.fullKey, id, part.number, part.end - part.start, () => this.localBytes(part.start, part.end));
    });
  }

  /** Bytes [start, end) of the local object, in fresh pieces (the upload body may hold them). */
  private async *localBytes(start: number, end: number): AsyncGenerator<Uint8Array> {
    const reader = await this.o.openLocal();
    try {
      for (let at = start; at < end; ) {
        const length = Math.min(TIER_PIECE_BYTES, end - at);
        yield await reader.read(at, length);
        at += length;
      }
    } finally {
      await reader.close();
    }
  }

  private checkLive(): void {
    if (this.aborting !== undefined) throw new ShuffleError('SHF_ERR_CLOSED', `the tier copy of ${this.o.key} was dropped`);
  }
}
