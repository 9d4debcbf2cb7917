import { invalidArgument } from './shuffle-error.js';
import { validateInteger } from './ids.js';

/** Default size of one shuffle buffer: 32 KiB, as Flink's network buffers. */
export const DEFAULT_BUFFER_SIZE_BYTES = 32 * 1024;
/** Smallest and largest buffer size an implementation accepts. */
export const MIN_BUFFER_SIZE_BYTES = 16;
export const MAX_BUFFER_SIZE_BYTES = 64 * 1024 * 1024;
/** Bytes of the length prefix before each record. */
export const RECORD_HEADER_BYTES = 4;
/** Default upper bound on one record's size; larger emits fail with SHF_ERR_INVALID_ARGUMENT. */
export const DEFAULT_MAX_RECORD_BYTES = 256 * 1024 * 1024;
/** Hard upper bound on one record's size (what a uint32 length and a Uint8Array can hold). */
export const MAX_RECORD_BYTES_LIMIT = 2 ** 31 - 1;

/** What a buffer holds: framed records, or one encoded event (see FRAMING.md). */
export type BufferDataType = 'data' | 'event';

/** A filled buffer as it moves from producer to consumer: `bytes` are the valid bytes. */
export interface ShuffleBuffer {
  readonly dataType: BufferDataType;
  readonly bytes: Uint8Array;
}

export function validateBufferSize(field: string, value: unknown): number {
  return validateInteger(field, value, MIN_BUFFER_SIZE_BYTES, MAX_BUFFER_SIZE_BYTES);
}

export function validateMaxRecordBytes(field: string, value: unknown): number {
  return validateInteger(field, value, 0, MAX_RECORD_BYTES_LIMIT);
}

/** Throws SHF_ERR_INVALID_ARGUMENT unless `record` is a Uint8Array of at most `maxRecordBytes`. */
export function checkRecord(record: unknown, maxRecordBytes: number): asserts record is Uint8Array {
  if (!(record instanceof Uint8Array)) {
    throw invalidArgument('record', `expected a Uint8Array, got ${record === null ? 'null' : typeof record}`);
  }
  if (record.length > maxRecordBytes) {
    throw invalidArgument('record', `${record.length} bytes is more than maxRecordBytes (${maxRecordBytes})`);
  }
}
