import type { KeyValue } from '../api/functions.js';
import { canonicalKey, isPrimitiveKey } from '../runtime/key-hash.js';

/**
 * A hash table from keys to values: primitive keys (strings, numbers but -0, booleans, null) straight in a
 * Map, the others (arrays, -0) under a canonical string that keeps NaN, ±Infinity, -0 and null apart.
 * `undefined` values mean "absent".
 */
export class KeyedTable<V> {
  readonly primitive = new Map<string | number | boolean | null, V>();
  readonly composite = new Map<string, { readonly key: KeyValue; value: V }>();

  get size(): number {
    return this.primitive.size + this.composite.size;
  }

  /** Throws a TypeError for a value that is not a key. */
  get(key: unknown): V | undefined {
    if (isPrimitiveKey(key)) return this.primitive.get(key);
    return this.composite.get(canonicalKey(key))?.value;
  }

  set(key: unknown, value: V): void {
    if (isPrimitiveKey(key)) {
      this.primitive.set(key, value);
      return;
    }
    const canonical = canonicalKey(key);
    const entry = this.composite.get(canonical);
    if (entry === undefined) this.composite.set(canonical, { key: key as KeyValue, value });
    else entry.value = value;
  }

  clear(): void {
    this.primitive.clear();
    this.composite.clear();
  }

  *entries(): IterableIterator<[KeyValue, V]> {
    yield* this.primitive;
    for (const entry of this.composite.values()) yield [entry.key, entry.value];
  }
}
