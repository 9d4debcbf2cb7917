import { MANUAL_STRING_LIMIT } from './record-encoder.js';

/**
 * The bytes DefaultRecordSerializer writes for a primitive value (string, number, boolean, null,
 * undefined), without encoding it — exactly (record-encoder.ts's rules, mirrored here). `undefined`
 * for anything else (arrays, objects: serialize those to measure them). For memory accounting on hot
 * paths (a combiner's new keys), where encoding every key would cost more than counting it.
 */
export function primitiveSerializedSize(value: unknown): number | undefined {
  switch (typeof value) {
    case 'string': {
      const length = value.length;
      const bytes = length < 22 && isAscii(value) ? length : Buffer.byteLength(value, 'utf8');
      // RecordEncoder.writeString: short strings get a 1-byte tag below 64 bytes, else a 2-byte varint;
      // long ones a varint as wide as 3 bytes a UTF-16 unit would need
      if (length <= MANUAL_STRING_LIMIT) return (bytes < 64 ? 1 : 3) + bytes;
      const max = 3 * length;
      return 1 + (max < 0x80 ? 1 : max < 0x4000 ? 2 : max < 0x200000 ? 3 : max < 0x10000000 ? 4 : 5) + bytes;
    }
    case 'number':
      if ((value | 0) === value && !Object.is(value, -0)) {
        if (value >= 0 && value < 64) return 1;
        let n = ((value << 1) ^ (value >> 31)) >>> 0;
        let width = 1;
        while (n >= 0x80) {
          n >>>= 7;
          width++;
        }
        return 1 + width;
      }
      return 9;
    case 'boolean':
    case 'undefined':
      return 1;
    case 'object':
      return value === null ? 1 : undefined;
    default:
      return undefined;
  }
}

function isAscii(value: string): boolean {
  for (let i = 0; i < value.length; i++) if (value.charCodeAt(i) >= 0x80) return false;
  return true;
}
