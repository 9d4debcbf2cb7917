import type { KeyValue } from '../api/functions.js';
import { javaStringHashCode } from '../keygroups/java-hash-code.js';

const float = new Float64Array(1);
const words = new Int32Array(float.buffer);

/**
 * The Java `hashCode()` Flink would compute for `key`: `String.hashCode` for strings, `Integer.hashCode`
 * for int32 numbers (both exactly as docs/DESIGN.md's key groups require), `Double.hashCode` for other
 * numbers (-0 hashed as 0, so keys equal in a JS Map hash alike), `Boolean.hashCode` (1231 / 1237),
 * 0 for null, and `List.hashCode` (31·h + element) for arrays. Throws a TypeError for anything else.
 */
export function keyHashCode(key: unknown): number {
  switch (typeof key) {
    case 'string':
      return javaStringHashCode(key);
    case 'number': {
      if ((key | 0) === key) return key | 0;
      float[0] = key === 0 ? 0 : key;
      // Double.hashCode: (int)(bits ^ (bits >>> 32)), little-endian words
      return ((words[0] as number) ^ (words[1] as number)) | 0;
    }
    case 'boolean':
      return key ? 1231 : 1237;
    case 'object': {
      if (key === null) return 0;
      if (Array.isArray(key)) {
        let h = 1;
        for (let i = 0; i < key.length; i++) h = (Math.imul(31, h) + keyHashCode(key[i])) | 0;
        return h;
      }
      break;
    }
  }
  throw new TypeError(`a key must be a string, a number, a boolean, null or an array of those, got ${describeKey(key)}`);
}

export function describeKey(key: unknown): string {
  if (key === undefined) return 'undefined';
  if (typeof key === 'object' && key !== null) return `a ${(key as object).constructor?.name ?? 'object'}`;
  return `a ${typeof key}`;
}

/** True for keys a JS Map compares by value (so they group without a canonical form). */
export function isPrimitiveKey(key: unknown): key is string | number | boolean | null {
  const type = typeof key;
  return type === 'string' || type === 'number' || type === 'boolean' || key === null;
}

/**
 * A string standing for a composite (array) key in a Map: equal keys give equal strings. Throws a
 * TypeError (naming the element) for values that are not keys.
 */
export function canonicalKey(key: unknown): string {
  keyHashCode(key); // validates every element
  return JSON.stringify(key);
}

/** Checks that `key` is a KeyValue; throws a TypeError naming what it got. */
export function checkKey(key: unknown): KeyValue {
  if (isPrimitiveKey(key)) return key;
  keyHashCode(key);
  return key as KeyValue;
}
