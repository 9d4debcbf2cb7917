import { RECORD_HEADER_BYTES } from './record-framing.js';

/**
 * Writes records of one subpartition as length-prefixed frames into fixed-size buffers (FRAMING.md).
 * A record larger than what is left of a buffer continues at the start of the next one; a length prefix
 * never straddles two buffers. Used by every writer, so all implementations frame alike.
 *
 * `allocate` must always return a buffer of `bufferSizeBytes` (flow control is the caller's business);
 * `onFull(segment, length, partialRecordLength)` receives each finished buffer with the number of valid
 * bytes, and owns it. `partialRecordLength` is Flink's: how many bytes at the buffer's start are the tail of
 * a record begun in an earlier buffer (0 when it starts with a whole record) — what an approximate
 * subpartition skips to serve a new reader from the next whole record.
 */
export class RecordFramer {
  private segment: Uint8Array | null = null;
  private position = 0;
  /** The current buffer's partialRecordLength. */
  private partial = 0;

  constructor(
    private readonly bufferSizeBytes: number,
    private readonly allocate: () => Uint8Array,
    private readonly onFull: (segment: Uint8Array, length: number, partialRecordLength: number) => void,
  ) {}

  /** Bytes written to the current, not yet handed over, buffer. */
  get pendingBytes(): number {
    return this.position;
  }

  /** Frames `record` (the caller checked its size). The bytes are copied; the caller may reuse `record`. */
  write(record: Uint8Array): void {
    const length = record.length;
    const size = this.bufferSizeBytes;
    let segment = this.segment;
    let position = this.position;
    if (segment === null || size - position < RECORD_HEADER_BYTES) {
      if (segment !== null) this.onFull(segment, position, this.partial);
      segment = this.allocate();
      position = 0;
      this.partial = 0;
    }
    segment[position] = length & 0xff;
    segment[position + 1] = (length >>> 8) & 0xff;
    segment[position + 2] = (length >>> 16) & 0xff;
    segment[position + 3] = (length >>> 24) & 0xff;
    position += RECORD_HEADER_BYTES;
    if (length <= size - position) {
      if (length > 0) segment.set(record, position);
      position += length;
    } else {
      let offset = 0;
      while (offset < length) {
        if (position === size) {
          this.onFull(segment, position, this.partial);
          segment = this.allocate();
          position = 0;
          // the rest of this record opens the new buffer
          this.partial = Math.min(length - offset, size);
        }
        const n = Math.min(length - offset, size - position);
        segment.set(record.subarray(offset, offset + n), position);
        offset += n;
        position += n;
      }
    }
    this.segment = segment;
    this.position = position;
  }

  /** Hands over the current buffer if it holds any bytes; the next record starts a new buffer. */
  flush(): void {
    if (this.segment !== null && this.position > 0) {
      const segment = this.segment;
      const length = this.position;
      const partial = this.partial;
      this.segment = null;
      this.position = 0;
      this.partial = 0;
      this.onFull(segment, length, partial);
    }
  }

  /** Drops the current buffer without handing it over and returns it (for recycling), if any. */
  discard(): Uint8Array | null {
    const segment = this.segment;
    this.segment = null;
    this.position = 0;
    this.partial = 0;
    return segment;
  }
}
