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

/**
 * Reads values in DefaultRecordSerializer's format. Strings are decoded from a Buffer view of the whole
 * shuffle segment the record lies in, made once per segment.
 */
export class RecordDecoder {
  // The record being read and a Buffer over its whole ArrayBuffer (cached per segment).
  private input: Uint8Array = new Uint8Array(0);
  private inputBuffer: Buffer = Buffer.alloc(0);
  private inputArrayBuffer: ArrayBufferLike | null = null;
  private inputOffset = 0;
  private offset = 0;
  private end = 0;

  decode(bytes: Uint8Array): unknown {
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
