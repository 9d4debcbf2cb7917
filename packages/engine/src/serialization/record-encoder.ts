import {
  MAX_DEPTH,
  serializationError,
  T_ARRAY,
  T_BYTES,
  T_FALSE,
  T_FLOAT,
  T_INT,
  T_NULL,
  T_OBJECT,
  T_SHORT_ARRAY,
  T_SHORT_OBJECT,
  T_SHORT_STRING,
  T_SMALL_INT,
  T_STRING,
  T_TRUE,
  T_UNDEFINED,
} from './record-format.js';

const INITIAL_CAPACITY = 64 * 1024;
/** Strings up to this many UTF-16 units are encoded by hand; longer ones by TextEncoder.encodeInto. */
/** Strings of up to this many UTF-16 units are encoded by hand (primitive-size.ts mirrors the rule). */
export const MANUAL_STRING_LIMIT = 48;

function describeValue(value: unknown): string {
  if (typeof value === 'object' && value !== null) {
    const name = (value as { constructor?: { name?: unknown } }).constructor?.name;
    return typeof name === 'string' && name !== '' ? `a ${name}` : 'an object with a prototype';
  }
  return `a ${typeof value}`;
}

/**
 * Writes values in DefaultRecordSerializer's format into one growing buffer it reuses: `encode` returns a
 * view valid until the next call. No intermediate string; ASCII is written byte by byte.
 */
export class RecordEncoder {
  private buffer = new Uint8Array(INITIAL_CAPACITY);
  private view = new DataView(this.buffer.buffer);
  private position = 0;
  private readonly encoder = new TextEncoder();

  encode(value: unknown): Uint8Array {
    this.position = 0;
    this.write(value, 0);
    return this.buffer.subarray(0, this.position);
  }

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
}
