/**
 * Keyed state, scoped to the backend's current key (Flink's ValueState, ListState, MapState). Values are
 * kept as given (a heap backend, as Flink's HeapKeyedStateBackend) and serialized only by a snapshot:
 * they must be values the default record serializer takes (JSON-like values, Uint8Arrays).
 */
export interface ValueState<T> {
  /** The value for the current key; undefined when none. */
  value(): T | undefined;
  update(value: T): void;
  clear(): void;
}

export interface ListState<T> {
  /** The list for the current key (empty when none); a copy. */
  get(): T[];
  add(value: T): void;
  addAll(values: readonly T[]): void;
  update(values: readonly T[]): void;
  clear(): void;
}

export interface MapState<K, V> {
  get(key: K): V | undefined;
  put(key: K, value: V): void;
  remove(key: K): void;
  contains(key: K): boolean;
  /** The entries for the current key, in insertion order. */
  entries(): [K, V][];
  isEmpty(): boolean;
  clear(): void;
}

export type KeyedStateKind = 'value' | 'list' | 'map';
