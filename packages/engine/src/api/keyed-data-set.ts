import type { DataSet, OperatorOptions } from './data-set.js';
import type { AggregateFunction, JoinFunction, KeySelector, KeyValue, ReduceFunction } from './functions.js';
import { type Aggregator, checkFunction, invalidJob, type JoinType, type LogicalInput, type Partitioning } from './logical-graph.js';
import { checkWindowAssigner, type WindowAssigner } from '../windows/window-assigner.js';
import { WindowedDataSet } from './windowed-data-set.js';

export interface KeyByOptions {
  /**
   * Key groups (Flink's max parallelism): a key's group is `murmurHash(hashCode(key)) % maxParallelism`.
   * @defaultValue `computeDefaultMaxParallelism(consumer parallelism)`
   */
  readonly maxParallelism?: number;
}

export interface WindowOptions<T> {
  /**
   * Event time: a value's timestamp in ms. @defaultValue the timestamp function of the data set's
   * `assignTimestampsAndWatermarks` (kept through `filter`, `keyBy` and repartitioning; a `map` or
   * `flatMap` after it needs this)
   */
  readonly timestamp?: (value: T) => number;
}

export interface AggregateOptions extends OperatorOptions {
  /** Pre-aggregate per key before the shuffle (map-side combining). @defaultValue true */
  readonly combine?: boolean;
  /** Distinct keys a combiner holds before it emits what it has and starts afresh. @defaultValue 1_000_000 */
  readonly combineMaxKeys?: number;
}

export interface JoinOptions extends OperatorOptions {
  /** The side read fully into a hash table first; the other streams past it. @defaultValue 'right' */
  readonly build?: 'left' | 'right';
}

const EMPTY: unique symbol = Symbol('weft.empty-accumulator');

/**
 * A data set grouped by a key: reduce, aggregate, count or join per key. Keyed operators route by key
 * group (`assignToKeyGroup` + `computeOperatorIndexForKeyGroup`), so every value of a key meets in one
 * subtask, and combine map-side first so the shuffle carries one accumulator per key and subtask.
 */
export class KeyedDataSet<T, K extends KeyValue> {
  readonly #parent: DataSet<T>;
  readonly #key: KeySelector<unknown, KeyValue>;
  readonly #maxParallelism: number | undefined;

  /** @internal — made by `DataSet.keyBy`. */
  constructor(parent: DataSet<T>, key: KeySelector<T, K>, options: KeyByOptions) {
    const max = options.maxParallelism;
    if (max !== undefined && (!Number.isInteger(max) || max < 1 || max > 32768)) {
      throw invalidJob('keyBy: maxParallelism', `expected an integer in [1, 32768], got ${String(max)}`);
    }
    this.#parent = parent;
    this.#key = key as KeySelector<unknown, KeyValue>;
    this.#maxParallelism = max;
  }

  /**
   * Cuts each key's values into windows (`tumblingEventTimeWindows(sizeMs)`, `slidingEventTimeWindows`,
   * and the processing-time twins): see WindowedDataSet. Event-time windows need timestamps and
   * watermarks: `assignTimestampsAndWatermarks` upstream.
   */
  window(assigner: WindowAssigner, options: WindowOptions<T> = {}): WindowedDataSet<T, K> {
    const checked = checkWindowAssigner(assigner);
    if (options.timestamp !== undefined && typeof options.timestamp !== 'function') throw invalidJob('window: timestamp', 'expected a function (value) => milliseconds');
    const timestamp = (options.timestamp ?? this.#parent.timestampOf) as ((value: unknown) => number) | undefined;
    if (checked.time === 'event' && timestamp === undefined) {
      throw invalidJob('window: timestamp', 'event-time windows need timestamps: call assignTimestampsAndWatermarks(…) before keyBy (after the last map), or give window(…, { timestamp })');
    }
    return new WindowedDataSet<T, K>({ parent: this.#parent as DataSet<unknown>, key: this.#key, partitioning: hash(this.#key, this.#maxParallelism, true), assigner: checked, timestamp: checked.time === 'event' ? timestamp : undefined });
  }

  /** Folds the values of each key with `fn` (associative); emits one value per key. */
  reduce(fn: ReduceFunction<T>, options: AggregateOptions = {}): DataSet<T> {
    checkFunction('reduce', options, fn);
    const reduce = fn as ReduceFunction<unknown>;
    return this.#aggregate<T>(
      {
        create: () => EMPTY,
        add: (acc, value) => (acc === EMPTY ? value : reduce(acc, value)),
        merge: (a, b) => (a === EMPTY ? b : b === EMPTY ? a : reduce(a, b)),
        result: (_key, acc) => acc,
      },
      'reduce',
      options,
    );
  }

  /** Flink's AggregateFunction per key; emits `[key, result]` per key. */
  aggregate<A, R>(fn: AggregateFunction<T, A, R>, options: AggregateOptions = {}): DataSet<[K, R]> {
    const name = options.name ?? 'aggregate';
    for (const method of ['createAccumulator', 'add', 'merge', 'getResult'] as const) {
      if (typeof fn?.[method] !== 'function') throw invalidJob(`operator ${JSON.stringify(name)} (aggregate): ${method}`, 'expected a function');
    }
    const f = fn as unknown as AggregateFunction<unknown, unknown, unknown>;
    return this.#aggregate<[K, R]>(
      {
        create: () => f.createAccumulator(),
        add: (acc, value) => f.add(acc, value),
        merge: (a, b) => f.merge(a, b),
        result: (key, acc) => [key, f.getResult(acc)],
      },
      'aggregate',
      options,
    );
  }

  /** Values per key: `[key, count]`. */
  count(options: AggregateOptions = {}): DataSet<[K, number]> {
    return this.#aggregate<[K, number]>(
      {
        kind: 'count',
        create: () => 0,
        add: (acc) => (acc as number) + 1,
        merge: (a, b) => (a as number) + (b as number),
        result: (key, acc) => [key, acc],
      },
      'count',
      options,
    );
  }

  /**
   * Inner hash join with `other` on equal keys: `fn(left, right)` for every matching pair (default
   * `[left, right]`). The build side (`options.build`) is read first into a hybrid hash table per subtask
   * (in memory while the task's budget allows, the rest spilled and joined partition by partition), then
   * the other side streams past it.
   */
  join<U, O = [T, U]>(other: KeyedDataSet<U, K>, fn?: JoinFunction<T, U, O>, options: JoinOptions = {}): DataSet<O> {
    return this.#join<O>('inner', other, fn as JoinFunction<unknown, unknown, unknown> | undefined, options);
  }

  /**
   * Left outer join: as `join`, and every left value no right value matched once more as
   * `fn(left, null)` — the missing right side is `null` (default output `[left, right]`, so `[left, null]`).
   */
  leftOuterJoin<U, O = [T, U | null]>(other: KeyedDataSet<U, K>, fn?: JoinFunction<T, U | null, O>, options: JoinOptions = {}): DataSet<O> {
    return this.#join<O>('left', other, fn as JoinFunction<unknown, unknown, unknown> | undefined, options);
  }

  /** Right outer join: as `join`, and every unmatched right value as `fn(null, right)` (the missing left side is `null`). */
  rightOuterJoin<U, O = [T | null, U]>(other: KeyedDataSet<U, K>, fn?: JoinFunction<T | null, U, O>, options: JoinOptions = {}): DataSet<O> {
    return this.#join<O>('right', other, fn as JoinFunction<unknown, unknown, unknown> | undefined, options);
  }

  /** Full outer join: as `join`, plus `fn(left, null)` for every unmatched left value and `fn(null, right)` for every unmatched right value. */
  fullOuterJoin<U, O = [T | null, U | null]>(other: KeyedDataSet<U, K>, fn?: JoinFunction<T | null, U | null, O>, options: JoinOptions = {}): DataSet<O> {
    return this.#join<O>('full', other, fn as JoinFunction<unknown, unknown, unknown> | undefined, options);
  }

  #join<O>(type: JoinType, other: KeyedDataSet<unknown, K>, fn: JoinFunction<unknown, unknown, unknown> | undefined, options: JoinOptions): DataSet<O> {
    const kind = type === 'inner' ? 'join' : `${type}OuterJoin`;
    const name = options.name ?? 'join';
    if (!(other instanceof KeyedDataSet)) throw invalidJob(`operator ${JSON.stringify(name)} (${kind}): other`, 'expected a keyed data set (call keyBy first)');
    if (other.#parent.graph !== this.#parent.graph) throw invalidJob(`operator ${JSON.stringify(name)} (${kind}): other`, 'expected a data set of the same job');
    if (fn !== undefined) checkFunction(kind, options, fn);
    const build = options.build ?? 'right';
    if (build !== 'left' && build !== 'right') throw invalidJob(`operator ${JSON.stringify(name)} (${kind}): build`, `expected 'left' or 'right', got ${JSON.stringify(build)}`);
    const max = this.#maxParallelism ?? other.#maxParallelism;
    if (this.#maxParallelism !== undefined && other.#maxParallelism !== undefined && this.#maxParallelism !== other.#maxParallelism) {
      throw invalidJob(`operator ${JSON.stringify(name)} (${kind}): maxParallelism`, `the two sides use different key groups (${this.#maxParallelism} and ${other.#maxParallelism})`);
    }
    const joinFn = fn ?? ((l: unknown, r: unknown) => [l, r]);
    const index = this.#parent.graph.add({
      name: options.name,
      defaultName: 'join',
      spec: { kind: 'join', leftKey: this.#key, rightKey: other.#key, fn: joinFn, build: build === 'left' ? 0 : 1, type },
      inputs: [...this.#parent.inputs(0, hash(this.#key, max, true)), ...other.#parent.inputs(1, hash(other.#key, max, true))],
      parallelism: options.parallelism,
      chaining: options.chaining,
    });
    return this.#parent.derive<O>(index);
  }

  #aggregate<R>(aggregator: Aggregator, defaultName: string, options: AggregateOptions): DataSet<R> {
    const name = options.name ?? defaultName;
    const graph = this.#parent.graph;
    const combine = options.combine ?? true;
    const maxKeys = options.combineMaxKeys ?? 1_000_000;
    if (typeof combine !== 'boolean') throw invalidJob(`operator ${JSON.stringify(name)} (aggregate): combine`, `expected a boolean, got ${JSON.stringify(combine)}`);
    if (!Number.isInteger(maxKeys) || maxKeys < 1) throw invalidJob(`operator ${JSON.stringify(name)} (aggregate): combineMaxKeys`, `expected an integer >= 1, got ${String(maxKeys)}`);
    let inputs: LogicalInput[];
    if (combine) {
      inputs = this.#parent.sources.map((source) => {
        const combiner = graph.add({
          name: `${name}-combine`,
          defaultName: 'combine',
          spec: { kind: 'combine', key: this.#key, aggregator, maxKeys },
          inputs: [{ producer: source.producer, inputIndex: 0, partitioning: { type: 'forward' } }],
          parallelism: graph.node(source.producer).parallelism,
        });
        return {
          producer: combiner,
          inputIndex: 0,
          partitioning: hash(pairKey, this.#maxParallelism, false),
          ...(source.exchange === undefined ? {} : { exchange: source.exchange }),
        };
      });
    } else {
      inputs = this.#parent.inputs(0, hash(this.#key, this.#maxParallelism, true));
    }
    if (graph.splitSkewedAggregations && options.parallelism === undefined) {
      // two stages: a partial aggregate whose skewed key groups may be split, merged behind a hash edge
      const partial = graph.add({
        name: `${name}-partial`,
        defaultName: `${defaultName}-partial`,
        spec: { kind: 'aggregate', aggregator: { ...aggregator, result: (key, accumulator) => [key, accumulator] }, partial: true, ...(combine ? {} : { key: this.#key }) },
        inputs,
      });
      inputs = [{ producer: partial, inputIndex: 0, partitioning: hash(pairKey, this.#maxParallelism, false) }];
      const index = graph.add({ name: options.name, defaultName, spec: { kind: 'aggregate', aggregator }, inputs, chaining: options.chaining });
      return this.#parent.derive<R>(index);
    }
    const index = graph.add({
      name: options.name,
      defaultName,
      spec: { kind: 'aggregate', aggregator, ...(combine ? {} : { key: this.#key }) },
      inputs,
      parallelism: options.parallelism,
      chaining: options.chaining,
    });
    return this.#parent.derive<R>(index);
  }
}

const pairKey = (record: unknown): KeyValue => (record as [KeyValue, unknown])[0];

function hash(key: KeySelector<unknown, KeyValue>, maxParallelism: number | undefined, userKey: boolean): Partitioning {
  return { type: 'hash', key, userKey, ...(maxParallelism === undefined ? {} : { maxParallelism }) };
}
