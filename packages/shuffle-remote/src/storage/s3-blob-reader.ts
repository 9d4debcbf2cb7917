import type { BlobReader } from './blob-store.js';
import { ChunkCursor } from './chunk-cursor.js';
import type { S3BlobStore } from './s3-blob-store.js';
import { blobTruncated } from './storage-errors.js';

interface Range {
  readonly offset: number;
  readonly length: number;
}

/** An open ranged GET, `position` being the next byte it delivers. */
interface OpenStream {
  position: number;
  readonly end: number;
  readonly cursor: ChunkCursor;
  readonly destroy: () => void;
}

/**
 * Ranged reads of one S3 object. Once told the ranges that will be read (`plan`), a read at the start
 * of one opens a single GET for the whole range and the reads that follow are served from its body in
 * order (backpressured: nothing is read ahead beyond the socket's buffers); any other read is a ranged
 * GET of its own. A planned stream that breaks (a consumer too slow for the request timeout, a dropped
 * connection) is reopened where it stopped, once per read.
 */
export class S3BlobReader implements BlobReader {
  private ranges: readonly Range[] = [];
  private stream: OpenStream | undefined;
  private pending: Promise<unknown> = Promise.resolve();
  private closed = false;

  constructor(
    private readonly store: S3BlobStore,
    private readonly key: string,
    private readonly fullKey: string,
  ) {}

  plan(ranges: readonly Range[]): void {
    this.ranges = ranges.filter((range) => range.length > 0);
  }

  read(offset: number, length: number, into?: Uint8Array): Promise<Uint8Array> {
    const next = this.pending.then(() => this.readInOrder(offset, length, into));
    this.pending = next.catch(() => undefined);
    return next;
  }

  async close(): Promise<void> {
    this.closed = true;
    await this.pending;
    this.dropStream();
  }

  private async readInOrder(offset: number, length: number, into: Uint8Array | undefined): Promise<Uint8Array> {
    const stream = this.stream;
    if (stream !== undefined && (stream.position !== offset || offset + length > stream.end)) this.dropStream();
    for (let reopened = false; ; reopened = true) {
      const current = this.stream ?? (await this.openPlanned(offset, length));
      if (current === undefined) return this.store.readRange(this.key, this.fullKey, offset, length, into);
      try {
        const bytes = await current.cursor.take(length, into);
        current.position += length;
        if (current.position === current.end) this.dropStream();
        return bytes;
      } catch (error) {
        this.dropStream();
        if (reopened || this.closed) throw error;
      }
    }
  }

  /** Opens one GET from `offset` to the end of the planned range holding [offset, offset + length), when it holds more. */
  private async openPlanned(offset: number, length: number): Promise<OpenStream | undefined> {
    const range = this.ranges.find((r) => r.offset <= offset && offset + length <= r.offset + r.length);
    if (range === undefined || offset + length === range.offset + range.length) return undefined;
    const end = range.offset + range.length;
    const body = await this.store.openRange(this.key, this.fullKey, offset, end);
    const stream: OpenStream = {
      position: offset,
      end,
      cursor: new ChunkCursor(body, () => blobTruncated(this.store.description, this.key, offset, end - offset, stream.position - offset)),
      destroy: () => body.destroy(),
    };
    this.stream = stream;
    return stream;
  }

  private dropStream(): void {
    this.stream?.destroy();
    this.stream = undefined;
  }
}
