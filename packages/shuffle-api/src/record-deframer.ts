import { RECORD_HEADER_BYTES } from './record-framing.js';
import { ShuffleError } from './shuffle-error.js';

/**
 * Reads the records of one channel back out of its data buffers (FRAMING.md), reassembling records that
 * span buffers. Records that lie whole inside a buffer are returned as views into it (valid as long as the
 * buffer is); spanning records are copied into a new array.
 */
export class RecordDeframer {
  private pending: Uint8Array | null = null;
  private pendingFilled = 0;

  constructor(
    private readonly maxRecordBytes: number,
    private readonly partitionId?: string,
  ) {}

  /** True while a record that started in an earlier buffer is incomplete. */
  get hasPartialRecord(): boolean {
    return this.pending !== null;
  }

  /**
   * Drops the record begun in an earlier buffer, if any (its producer went away before sending the rest:
   * PIPELINED_APPROXIMATE); returns how many of its bytes had arrived (0 when none was pending).
   */
  discardPartialRecord(): number {
    const dropped = this.pending === null ? 0 : this.pendingFilled;
    this.pending = null;
    this.pendingFilled = 0;
    return dropped;
  }

  /** Appends every record completed by `bytes` to `out`; returns how many were appended. */
  push(bytes: Uint8Array, out: Uint8Array[]): number {
    const length = bytes.length;
    const before = out.length;
    let position = 0;
    const pending = this.pending;
    if (pending !== null) {
      const n = Math.min(pending.length - this.pendingFilled, length);
      pending.set(bytes.subarray(0, n), this.pendingFilled);
      this.pendingFilled += n;
      position = n;
      if (this.pendingFilled === pending.length) {
        out.push(pending);
        this.pending = null;
        this.pendingFilled = 0;
      }
    }
    // a view made with the constructor costs half what subarray() does (no species lookup); a Buffer's
    // records stay Buffers
    const plain = Object.getPrototypeOf(bytes) === Uint8Array.prototype;
    const buffer = bytes.buffer;
    const base = bytes.byteOffset;
    while (position < length) {
      if (length - position < RECORD_HEADER_BYTES) {
        throw this.corrupted(`${length - position} stray bytes at the end of a buffer`);
      }
      const recordLength =
        (bytes[position]! | (bytes[position + 1]! << 8) | (bytes[position + 2]! << 16) | (bytes[position + 3]! << 24)) >>> 0;
      position += RECORD_HEADER_BYTES;
      if (recordLength > this.maxRecordBytes) {
        throw this.corrupted(`record length ${recordLength} exceeds the maximum ${this.maxRecordBytes}`);
      }
      const end = position + recordLength;
      if (end <= length) {
        out.push(plain ? new Uint8Array(buffer, base + position, recordLength) : bytes.subarray(position, end));
        position = end;
      } else {
        const record = new Uint8Array(recordLength);
        record.set(bytes.subarray(position, length));
        this.pending = record;
        this.pendingFilled = length - position;
        position = length;
      }
    }
    return out.length - before;
  }

  /** Throws SHF_ERR_DATA_CORRUPTED if the channel ended inside a record. */
  checkComplete(): void {
    if (this.pending !== null) {
      throw this.corrupted(`channel ended ${this.pending.length - this.pendingFilled} bytes short of a record`);
    }
  }

  private corrupted(why: string): ShuffleError {
    return new ShuffleError('SHF_ERR_DATA_CORRUPTED', `corrupted record framing${this.partitionId ? ` in partition ${this.partitionId}` : ''}: ${why}`, {
      context: { partitionId: this.partitionId },
    });
  }
}
