/**
 * A key a keyed operator groups and routes by: a string, a number, a boolean, null, or an array (tuple) of
 * those. Strings and int32 numbers hash exactly as Flink's Java would (docs/DESIGN.md, key groups), so a key
 * lands in the same key group; the others hash as Java's `Double`, `Boolean` and `List` would. Keys are
 * equal as Java's `equals` would have them: NaN equals NaN, and -0, 0, NaN, ±Infinity and null are five
 * distinct keys, alone or inside arrays.
 */
export type KeyValue = string | number | boolean | null | readonly KeyValue[];

/**
 * Where a user function runs (Flink's RuntimeContext), passed as the last argument of map, flatMap and
 * filter functions: which subtask of how many, and which attempt (0 first, then 1, 2… after restarts).
 */
export interface RuntimeContext {
  readonly operatorName: string;
  readonly subtask: number;
  readonly parallelism: number;
  readonly attempt: number;
}

export type MapFunction<T, R> = (value: T, context: RuntimeContext) => R;
/** Returns the values to emit: an array or any iterable; `null`/`undefined` emits nothing. */
export type FlatMapFunction<T, R> = (value: T, context: RuntimeContext) => Iterable<R> | null | undefined;
export type FilterFunction<T> = (value: T, context: RuntimeContext) => boolean;
export type KeySelector<T, K extends KeyValue> = (value: T) => K;
/** Combines two values of one key into one; must be associative (it runs before and after the shuffle). */
export type ReduceFunction<T> = (a: T, b: T) => T;
export type JoinFunction<L, R, O> = (left: L, right: R) => O;
/** Turns a value into one line of a text sink (without the newline). */
export type FormatFunction<T> = (value: T) => string;

/**
 * Flink's AggregateFunction: an accumulator per key, filled by `add` on each side of the shuffle and
 * combined by `merge` (map-side combining ships accumulators, not values). Accumulators cross the
 * shuffle, so they must be serializable (JSON-like with the default serializer). `add` and `merge` may
 * mutate and return their first argument.
 */
export interface AggregateFunction<T, A, R> {
  createAccumulator(): A;
  add(accumulator: A, value: T): A;
  merge(a: A, b: A): A;
  getResult(accumulator: A): R;
}
