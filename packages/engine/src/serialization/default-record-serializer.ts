import { EngineError } from '../errors/engine-error.js';
import type { RecordSerializer } from './record-serializer.js';

// Tags. One byte starts every value; short strings, small ints, short arrays and objects carry their
// length in the tag itself, so `["word", 1]` is 8 bytes: 0x42 0x84 w o r d 0xC1.
const T_NULL = 0x00;
const T_UNDEFINED = 0x01;
const T_FALSE = 0x02;
const T_TRUE = 0x03;
/** int32, zigzag varint */
const T_INT = 0x04;
/** float64, little endian */
const T_FLOAT = 0x05;
/** string of 64 or more UTF-8 bytes: varint byte length, bytes */
const T_STRING = 0x06;
/** array of 32 or more items: varint count, items */
const T_ARRAY = 0x07;
/** object of 32 or more keys: varint count, (key as varint length + UTF-8, value) pairs */
const T_OBJECT = 0x08;
/** Uint8Array: varint length, bytes */
const T_BYTES = 0x09;
/** 0x40 | count: array of 0..31 items */
const T_SHORT_ARRAY = 0x40;
/** 0x60 | count: object of 0..31 keys */
const T_SHORT_OBJECT = 0x60;
/** 0x80 | length: string of 0..63 UTF-8 bytes */
const T_SHORT_STRING = 0x80;
/** 0xC0 | n: integer 0..63 */
const T_SMALL_INT = 0xc0;

const INITIAL_CAPACITY = 64 * 1024;
/** Nesting deeper than this is refused (a cycle, or a value no JSON encoder would take either). */
const MAX_DEPTH = 512;
/** Strings up to this many UTF-16 units are encoded by hand; longer ones by TextEncoder.encodeInto. */
const MANUAL_STRING_LIMIT = 48;

function serializationError(message: string, cause?: unknown): EngineError {
  return new EngineError('WEFT_ERR_SERIALIZATION', message, cause === undefined ? {} : { cause });
}

function describeValue(value: unknown): string {
  if (typeof value === 'object' && value !== null) {
    const name = (value as { constructor?: { name?: unknown } }).constructor?.name;
    return typeof name === 'string' && name !== '' ? `a ${name}` : 'an object with a prototype';
  }
  return `a ${typeof value}`;
}

/**
 * The default record serializer: a compact tagged binary form of JSON-like values — null, undefined,
 * booleans, numbers (int32 as zigzag varints, others as float64, -0 and NaN kept), strings (UTF-8),
 * arrays, plain objects (own enumerable string keys, in order) and Uint8Arrays. Anything else (functions,
 * symbols, bigints, Maps, Dates, class instances, cycles) fails with `WEFT_ERR_SERIALIZATION` naming what
 * it met; use a custom serializer for such values.
 *
 * Faster than `JSON.stringify` + `TextEncoder` for tuples of strings and numbers (see
 * packages/engine/bench/record-serializer.bench.ts): no intermediate string, ASCII written byte by byte,
 * lengths folded into tags, and strings decoded from a cached Buffer view of the shuffle segment.
 */
export class DefaultRecordSerializer implements RecordSerializer {
  readonly name = 'default';
  private buffer = new Uint8Array(INITIAL_CAPACITY);
  private view = new DataView(this.buffer.buffer);
  private position = 0;
  private readonly encoder = new TextEncoder();

  // Decoding state: the record being read and a Buffer over its whole ArrayBuffer (cached per segment).
  private input: Uint8Array = new Uint8Array(0);
  private inputBuffer: Buffer = Buffer.alloc(0);
  private inputArrayBuffer: ArrayBufferLike | null = null;
  private inputOffset = 0;
  private offset = 0;
  private end = 0;

  serialize(value: unknown): Uint8Array {
    this.position = 0;
    this.write(value, 0);
    return this.buffer.subarray(0, this.position);
  }

  deserialize(bytes: Uint8Array): unknown {
    if (bytes.buffer !== this.inputArrayBuffer) {
      this.inputArrayBuffer = bytes.buffer;
      this.inputBuffer = Buffer.from(bytes.buffer as ArrayBuffer);
    }
    this.input = bytes;
    this.inputOffset = bytes.byteOffset;
    this.offset = 0;
    this.end = bytes.length;
    let value: unknown;
    try {
      value = this.read(0);
    } catch (error) {
      throw serializationError(`cannot decode a record of ${bytes.length} bytes: ${(error as Error).message}`, error);
    }
    if (this.offset !== this.end) {
      throw serializationError(`cannot decode a record of ${bytes.length} bytes: ${this.end - this.offset} bytes left after the value`);
    }
    return value;
  }

  // ---- encoding -------------------------------------------------------------------------------

  private ensure(extra: number): void {
    const needed = this.position + extra;
    if (needed <= this.buffer.length) return;
    let capacity = this.buffer.length * 2;
    while (capacity < needed) capacity *= 2;
    const grown = new Uint8Array(capacity);
    grown.set(this.buffer.subarray(0, this.position));
    this.buffer = grown;
    this.view = new DataView(grown.buffer);
  }

  private writeVarint(n: number): void {
    // n is a non-negative integer below 2^53
    const buffer = this.buffer;
    let p = this.position;
    while (n >= 0x80) {
      buffer[p++] = (n & 0x7f) | 0x80;
      n = Math.floor(n / 128);
    }
    buffer[p++] = n;
    this.position = p;
  }

  private write(value: unknown, depth: number): void {
    switch (typeof value) {
      case 'string':
        this.writeString(value);
        return;
      case 'number':
        this.writeNumber(value);
        return;
      case 'boolean':
        this.ensure(1);
        this.buffer[this.position++] = value ? T_TRUE : T_FALSE;
        return;
      case 'undefined':
        this.ensure(1);
        this.buffer[this.position++] = T_UNDEFINED;
        return;
      case 'object':
        if (value === null) {
          this.ensure(1);
          this.buffer[this.position++] = T_NULL;
          return;
        }
        if (depth >= MAX_DEPTH) throw serializationError(`cannot serialize a value nested deeper than ${MAX_DEPTH} levels (a cycle?)`);
        if (Array.isArray(value)) {
          this.writeArray(value, depth);
          return;
        }
        if (value instanceof Uint8Array) {
          this.ensure(10 + value.length);
          this.buffer[this.position++] = T_BYTES;
          this.writeVarint(value.length);
          this.buffer.set(value, this.position);
          this.position += value.length;
          return;
        }
        {
          const prototype = Object.getPrototypeOf(value) as unknown;
          if (prototype !== Object.prototype && prototype !== null) {
            throw serializationError(`cannot serialize ${describeValue(value)} with the default serializer (JSON-like values only); map it to plain data or configure a custom serializer`);
          }
        }
        this.writeObject(value as Record<string, unknown>, depth);
        return;
      default:
        throw serializationError(`cannot serialize ${describeValue(value)} with the default serializer (JSON-like values only)`);
    }
  }

  private writeNumber(value: number): void {
    this.ensure(9);
    if ((value | 0) === value && !(value === 0 && 1 / value < 0)) {
      if (value >= 0 && value < 64) {
        this.buffer[this.position++] = T_SMALL_INT | value;
        return;
      }
      this.buffer[this.position++] = T_INT;
      this.writeVarint(((value << 1) ^ (value >> 31)) >>> 0);
      return;
    }
    this.buffer[this.position++] = T_FLOAT;
    this.view.setFloat64(this.position, value, true);
    this.position += 8;
  }

  private writeArray(value: readonly unknown[], depth: number): void {
    const length = value.length;
    this.ensure(6);
    if (length < 32) {
      this.buffer[this.position++] = T_SHORT_ARRAY | length;
    } else {
      this.buffer[this.position++] = T_ARRAY;
      this.writeVarint(length);
    }
    for (let i = 0; i < length; i++) this.write(value[i], depth + 1);
  }

  private writeObject(value: Record<string, unknown>, depth: number): void {
    const keys = Object.keys(value);
    const length = keys.length;
    this.ensure(6);
    if (length < 32) {
      this.buffer[this.position++] = T_SHORT_OBJECT | length;
    } else {
      this.buffer[this.position++] = T_OBJECT;
      this.writeVarint(length);
    }
    for (let i = 0; i < length; i++) {
      const key = keys[i] as string;
      this.writeKey(key);
      this.write(value[key], depth + 1);
    }
  }

  /** A string with its tag: short ones with the length folded into the tag. */
  private writeString(value: string): void {
    const length = value.length;
    if (length <= MANUAL_STRING_LIMIT) {
      // At most 3 bytes per UTF-16 unit; 48 units fit a 1-byte tag when ASCII, else maybe a 2-byte header.
      this.ensure(3 + 3 * length);
      const buffer = this.buffer;
      const start = this.position;
      let p = start + 1;
      let i = 0;
      for (; i < length; i++) {
        const c = value.charCodeAt(i);
        if (c >= 0x80) break;
        buffer[p++] = c;
      }
      if (i < length) p += this.encoder.encodeInto(value.slice(i), buffer.subarray(p)).written;
      const bytes = p - start - 1;
      if (bytes < 64) {
        buffer[start] = T_SHORT_STRING | bytes;
        this.position = p;
        return;
      }
      // 64..144 bytes: needs T_STRING and a 2-byte varint; shift the bytes right by two.
      buffer.copyWithin(start + 3, start + 1, p);
      buffer[start] = T_STRING;
      buffer[start + 1] = (bytes & 0x7f) | 0x80;
      buffer[start + 2] = bytes >>> 7;
      this.position = p + 2;
      return;
    }
    // Long: reserve a fixed-width varint for the largest possible size, encode, then fill the varint in
    // (an over-long varint — continuation bits on leading groups — which the reader accepts).
    const max = 3 * length;
    const width = max < 0x80 ? 1 : max < 0x4000 ? 2 : max < 0x200000 ? 3 : max < 0x10000000 ? 4 : 5;
    this.ensure(1 + width + max);
    const start = this.position;
    this.buffer[start] = T_STRING;
    const dataStart = start + 1 + width;
    const written = this.encoder.encodeInto(value, this.buffer.subarray(dataStart)).written;
    let n = written;
    for (let k = 0; k < width; k++) {
      const last = k === width - 1;
      this.buffer[start + 1 + k] = (n & 0x7f) | (last ? 0 : 0x80);
      n = Math.floor(n / 128);
    }
    this.position = dataStart + written;
  }

  /** An object key: varint byte length and UTF-8, no tag. */
  private writeKey(key: string): void {
    const length = key.length;
    this.ensure(5 + 3 * length);
    const buffer = this.buffer;
    if (length < 43) {
      // 3 * 42 = 126 < 128: a one-byte length always fits.
      const start = this.position;
      let p = start + 1;
      let i = 0;
      for (; i < length; i++) {
        const c = key.charCodeAt(i);
        if (c >= 0x80) break;
        buffer[p++] = c;
      }
      if (i < length) p += this.encoder.encodeInto(key.slice(i), buffer.subarray(p)).written;
      buffer[start] = p - start - 1;
      this.position = p;
      return;
    }
    const bytes = Buffer.byteLength(key, 'utf8');
    this.writeVarint(bytes);
    this.position += this.encoder.encodeInto(key, this.buffer.subarray(this.position)).written;
  }

  // ---- decoding -------------------------------------------------------------------------------

  private truncated(): Error {
    return new Error(`truncated at byte ${this.offset}`);
  }

  private readByte(): number {
    if (this.offset >= this.end) throw this.truncated();
    return this.input[this.offset++] as number;
  }

  private readVarint(): number {
    let result = 0;
    let multiplier = 1;
    for (let k = 0; k < 8; k++) {
      const b = this.readByte();
      result += (b & 0x7f) * multiplier;
      if (b < 0x80) return result;
      multiplier *= 128;
    }
    throw new Error(`malformed varint at byte ${this.offset}`);
  }

  private readUtf8(length: number): string {
    const start = this.offset;
    const end = start + length;
    if (end > this.end) throw this.truncated();
    this.offset = end;
    if (length === 0) return '';
    const input = this.input;
    if (length <= 16) {
      // Short ASCII: build the string by hand (a native call costs more than the loop).
      let ascii = true;
      for (let i = start; i < end; i++) {
        if ((input[i] as number) >= 0x80) {
          ascii = false;
          break;
        }
      }
      if (ascii) {
        let s = '';
        for (let i = start; i < end; i++) s += String.fromCharCode(input[i] as number);
        return s;
      }
    }
    return this.inputBuffer.toString('utf8', this.inputOffset + start, this.inputOffset + end);
  }

  private read(depth: number): unknown {
    if (depth > MAX_DEPTH) throw new Error(`nested deeper than ${MAX_DEPTH} levels`);
    const tag = this.readByte();
    if (tag >= T_SHORT_STRING) {
      if (tag >= T_SMALL_INT) return tag & 0x3f;
      return this.readUtf8(tag & 0x3f);
    }
    if (tag >= T_SHORT_ARRAY) {
      if (tag >= T_SHORT_OBJECT) return this.readObject(tag & 0x1f, depth);
      return this.readArray(tag & 0x1f, depth);
    }
    switch (tag) {
      case T_NULL:
        return null;
      case T_UNDEFINED:
        return undefined;
      case T_FALSE:
        return false;
      case T_TRUE:
        return true;
      case T_INT: {
        const zigzag = this.readVarint();
        return (zigzag % 2 === 0 ? zigzag / 2 : -(zigzag + 1) / 2) | 0;
      }
      case T_FLOAT: {
        if (this.offset + 8 > this.end) throw this.truncated();
        const input = this.input;
        const value = new DataView(input.buffer, input.byteOffset + this.offset, 8).getFloat64(0, true);
        this.offset += 8;
        return value;
      }
      case T_STRING:
        return this.readUtf8(this.readVarint());
      case T_ARRAY:
        return this.readArray(this.readVarint(), depth);
      case T_OBJECT:
        return this.readObject(this.readVarint(), depth);
      case T_BYTES: {
        const length = this.readVarint();
        if (this.offset + length > this.end) throw this.truncated();
        const bytes = this.input.slice(this.offset, this.offset + length);
        this.offset += length;
        return bytes;
      }
      default:
        throw new Error(`unknown tag 0x${tag.toString(16)} at byte ${this.offset - 1}`);
    }
  }

  private readArray(length: number, depth: number): unknown[] {
    if (length > this.end - this.offset) throw this.truncated();
    const out = new Array<unknown>(length);
    for (let i = 0; i < length; i++) out[i] = this.read(depth + 1);
    return out;
  }

  private readObject(length: number, depth: number): Record<string, unknown> {
    if (length > this.end - this.offset) throw this.truncated();
    const out: Record<string, unknown> = {};
    for (let i = 0; i < length; i++) {
      const key = this.readUtf8(this.readVarint());
      const value = this.read(depth + 1);
      if (key === '__proto__') Object.defineProperty(out, key, { value, enumerable: true, writable: true, configurable: true });
      else out[key] = value;
    }
    return out;
  }
}

/** The default serializer factory. */
export function createDefaultRecordSerializer(): RecordSerializer {
  return new DefaultRecordSerializer();
}
