import type { BlobReader, BlobWriter } from '@weft/shuffle-remote';

/**
 * A BlobWriter/BlobReader pair over one in-memory byte array, for format tests. It also writes whole
 * objects (`writeWhole`, asking the body for ranges of `partBytes`, as a multipart upload does) and
 * serves as a spill (`read`, `close`).
 */
export class MemoryBlob implements BlobWriter {
  readonly key = 'memory/object.wsm';
  readonly bufferedBytes = 0;
  readonly maxRetainedBytes = 0;
  readonly uploadId = undefined;
  bytes = new Uint8Array(0);
  completed = false;
  aborted = false;
  reads: { offset: number; length: number }[] = [];
  wholeWrites = 0;
  closed = false;

  constructor(private readonly partBytes = Number.POSITIVE_INFINITY) {}

  get bytesWritten(): number {
    return this.bytes.length;
  }

  async append(chunks: readonly Uint8Array[]): Promise<void> {
    const total = chunks.reduce((sum, c) => sum + c.length, 0);
    const next = new Uint8Array(this.bytes.length + total);
    next.set(this.bytes, 0);
    let at = this.bytes.length;
    for (const chunk of chunks) {
      next.set(chunk, at);
      at += chunk.length;
    }
    this.bytes = next;
  }

  async complete(): Promise<number> {
    this.completed = true;
    return this.bytes.length;
  }

  async writeWhole(length: number, body: (start: number, end: number) => AsyncIterable<Uint8Array>): Promise<void> {
    this.wholeWrites++;
    const out = new Uint8Array(length);
    for (let start = 0; start < length; start += this.partBytes) {
      const end = Math.min(length, start + this.partBytes);
      let at = start;
      for await (const chunk of body(start, end)) {
        out.set(chunk, at);
        at += chunk.length;
      }
      if (at !== end) throw new Error(`range [${start}, ${end}) of the body gave ${at - start} bytes`);
    }
    this.bytes = out;
    this.completed = true;
  }

  read(offset: number, length: number, into?: Uint8Array): Promise<Uint8Array> {
    return this.reader().read(offset, length, into);
  }

  async close(): Promise<void> {
    this.closed = true;
  }

  async abort(): Promise<void> {
    this.aborted = true;
    this.bytes = new Uint8Array(0);
  }

  /** A reader; `sharedTargets` makes it claim what a file reader claims (cheap reads into shared memory). */
  reader(options: { readonly sharedTargets?: boolean } = {}): BlobReader {
    return {
      ...(options.sharedTargets === true ? { sharedTargets: true } : {}),
      read: async (offset, length, into) => {
        this.reads.push({ offset, length });
        if (offset + length > this.bytes.length) throw new Error(`read past the end: ${offset}+${length} > ${this.bytes.length}`);
        if (into === undefined) return this.bytes.slice(offset, offset + length);
        // like the real stores: the bytes land in the caller's buffer, which it reuses
        into.set(this.bytes.subarray(offset, offset + length));
        return into.subarray(0, length);
      },
      close: async () => undefined,
    };
  }
}
