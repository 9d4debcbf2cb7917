/**
 * Reads exact lengths from a stream of chunks (a response body): `take(length, into?)` copies into
 * `into` when given (the caller recycles its buffers), else returns a view into the received chunk when
 * the bytes lie inside one, else one copy. The stream ending early is `ended()`'s error.
 */
export class ChunkCursor {
  private readonly iterator: AsyncIterator<Uint8Array>;
  private chunk: Uint8Array | undefined;

  constructor(
    body: AsyncIterable<Uint8Array>,
    private readonly ended: () => Error,
  ) {
    this.iterator = body[Symbol.asyncIterator]();
  }

  async take(length: number, into?: Uint8Array): Promise<Uint8Array> {
    if (length === 0) return new Uint8Array(0);
    let chunk = this.chunk ?? (await this.nextChunk());
    if (chunk.length >= length && into === undefined) {
      this.chunk = chunk.length === length ? undefined : chunk.subarray(length);
      return chunk.subarray(0, length);
    }
    const out = into !== undefined && into.length >= length ? into.subarray(0, length) : Buffer.allocUnsafe(length);
    let filled = 0;
    for (;;) {
      const n = Math.min(chunk.length, length - filled);
      out.set(n === chunk.length ? chunk : chunk.subarray(0, n), filled);
      filled += n;
      if (filled === length) {
        this.chunk = n === chunk.length ? undefined : chunk.subarray(n);
        return out;
      }
      chunk = await this.nextChunk();
    }
  }

  /** True when the stream has nothing more (what was received is all taken and it ended). */
  async atEnd(): Promise<boolean> {
    if (this.chunk !== undefined && this.chunk.length > 0) return false;
    const next = await this.iterator.next();
    if (next.done === true) return true;
    this.chunk = next.value;
    return next.value.length === 0 ? this.atEnd() : false;
  }

  private async nextChunk(): Promise<Uint8Array> {
    const next = await this.iterator.next();
    if (next.done === true) throw this.ended();
    return next.value;
  }
}
