import type { BlobReader } from './blob-store.js';

/**
 * The bytes of `pieces` read from `reader` in order, one read ahead: while the caller uses piece N,
 * piece N+1 is being read. Each piece is a fresh buffer (the caller may keep it), unless `bufferFor`
 * lends one (the caller then owns its reuse). A read ahead left
 * unawaited (the caller stopped early) never surfaces as an unhandled rejection.
 */
export async function* readAhead(
  reader: BlobReader,
  pieces: Iterable<{ readonly offset: number; readonly length: number }>,
  /** Where a piece of `length` bytes may be read into (the reader may still return a fresh buffer); default: a fresh buffer each. */
  bufferFor?: (length: number) => Uint8Array,
): AsyncGenerator<Uint8Array> {
  const iterator = pieces[Symbol.iterator]();
  const start = (): Promise<Uint8Array> | undefined => {
    const piece = iterator.next();
    if (piece.done === true) return undefined;
    const read = reader.read(piece.value.offset, piece.value.length, bufferFor?.(piece.value.length));
    read.catch(() => undefined);
    return read;
  };
  for (let pending = start(); pending !== undefined; ) {
    const bytes = await pending;
    pending = start();
    yield bytes;
  }
}
