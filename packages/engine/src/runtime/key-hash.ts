import type { KeyValue } from '../api/functions.js';
import { javaStringHashCode } from '../keygroups/java-hash-code.js';

const float = new Float64Array(1);
const words = new Int32Array(float.buffer);

/**
 * The Java `hashCode()` Flink would compute for `key`: `String.hashCode` for strings, `Integer.hashCode`
 * for int32 numbers (both exactly as docs/DESIGN.md's key groups require), `Double.hashCode` for other
 * numbers (-0 among them: it is a key of its own, as `Double.valueOf(-0.0)` is in Java, not 0),
 * `Boolean.hashCode` (1231 / 1237), 0 for null, and `List.hashCode` (31·h + element) for arrays. Throws a
 * TypeError for anything else.
 */
export function keyHashCode(key: unknown): number {
  switch (typeof key) {
    case 'string':
      return javaStringHashCode(key);
    case 'number': {
      if ((key | 0) === key && !Object.is(key, -0)) return key | 0;
      float[0] = key;
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

/**
 * True for keys a JS Map compares by value exactly as keys compare (so they group without a canonical
 * form): strings, booleans, null and numbers other than -0 (a Map takes -0 for 0).
 */
export function isPrimitiveKey(key: unknown): key is string | number | boolean | null {
  const type = typeof key;
  return type === 'string' || type === 'boolean' || key === null || (type === 'number' && !Object.is(key, -0));
}

/**
 * A string standing for a key that is not a primitive one (an array, or -0) in a Map: equal keys give
 * equal strings, and distinct keys distinct ones — NaN, ±Infinity, -0 and null each have their own
 * (JSON.stringify would write the first three as null, and -0 as 0). Elements are tagged by type, so
 * `[1]` and `["1"]` differ too. Throws a TypeError (naming the element) for values that are not keys.
 */
export function canonicalKey(key: unknown): string {
  keyHashCode(key); // validates every element
  return encode(key);
}

function encode(key: unknown): string {
  switch (typeof key) {
    case 'string':
      return JSON.stringify(key);
    case 'number':
      return Object.is(key, -0) ? 'n-0' : `n${key}`;
    case 'boolean':
      return key ? 't' : 'f';
    default: {
      if (key === null) return 'z';
      let out = '[';
      const items = key as readonly unknown[];
      for (let i = 0; i < items.length; i++) out += (i === 0 ? '' : ',') + encode(items[i]);
      return `${out}]`;
    }
  }
}

/** Checks that `key` is a KeyValue; throws a TypeError naming what it got. */
export function checkKey(key: unknown): KeyValue {
  if (isPrimitiveKey(key)) return key;
  keyHashCode(key);
  return key as KeyValue;
}
