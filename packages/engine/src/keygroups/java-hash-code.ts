import { invalidEngineArgument } from '../errors/engine-error.js';

/** A key Weft hashes exactly as Flink's Java would: a string (`String`) or an int32 number (`Integer`). */
export type Key = string | number;

/** Java's `String.hashCode()`: over UTF-16 code units, `h = 31*h + c` with int32 overflow. */
export function javaStringHashCode(value: string): number {
  let h = 0;
  for (let i = 0; i < value.length; i++) h = (Math.imul(31, h) + value.charCodeAt(i)) | 0;
  return h;
}

function isInt32(value: number): boolean {
  return Number.isInteger(value) && value >= -2147483648 && value <= 2147483647;
}

/**
 * Java's `hashCode()` of the key Flink would see: `String.hashCode()` for a string, `Integer.hashCode()`
 * (the value itself) for an int32 number. Any other key is refused with `WEFT_ERR_INVALID_ARGUMENT`: its
 * Java hash is not defined here, and guessing would silently put it in another key group than Flink does.
 */
export function javaHashCode(key: Key): number {
  if (typeof key === 'string') return javaStringHashCode(key);
  if (typeof key === 'number' && isInt32(key)) return key | 0;
  throw invalidEngineArgument('key', `expected a string or an int32 integer, got ${typeof key === 'number' ? key : typeof key}`);
}
