import { EngineError } from '../errors/engine-error.js';

// The byte format of DefaultRecordSerializer (RecordEncoder writes it, RecordDecoder reads it).
// One byte starts every value; short strings, small ints, short arrays and objects carry their
// length in the tag itself, so `["word", 1]` is 7 bytes: 0x42 0x84 w o r d 0xC1.
export const T_NULL = 0x00;
export const T_UNDEFINED = 0x01;
export const T_FALSE = 0x02;
export const T_TRUE = 0x03;
/** int32, zigzag varint */
export const T_INT = 0x04;
/** float64, little endian */
export const T_FLOAT = 0x05;
/** string of 64 or more UTF-8 bytes: varint byte length, bytes */
export const T_STRING = 0x06;
/** array of 32 or more items: varint count, items */
export const T_ARRAY = 0x07;
/** object of 32 or more keys: varint count, (key as varint length + UTF-8, value) pairs */
export const T_OBJECT = 0x08;
/** Uint8Array: varint length, bytes */
export const T_BYTES = 0x09;
/** 0x40 | count: array of 0..31 items */
export const T_SHORT_ARRAY = 0x40;
/** 0x60 | count: object of 0..31 keys */
export const T_SHORT_OBJECT = 0x60;
/** 0x80 | length: string of 0..63 UTF-8 bytes */
export const T_SHORT_STRING = 0x80;
/** 0xC0 | n: integer 0..63 */
export const T_SMALL_INT = 0xc0;

/** Nesting deeper than this is refused (a cycle, or a value no JSON encoder would take either). */
export const MAX_DEPTH = 512;

/** `WEFT_ERR_SERIALIZATION`. */
export function serializationError(message: string, cause?: unknown): EngineError {
  return new EngineError('WEFT_ERR_SERIALIZATION', message, cause === undefined ? {} : { cause });
}
