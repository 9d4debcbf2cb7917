import { type EdgeExchange, EDGE_EXCHANGES, isEdgeExchange } from './exchange-mode.js';
import type { FilterFunction, FlatMapFunction, FormatFunction, KeySelector, KeyValue, MapFunction } from './functions.js';
import { KeyedDataSet, type KeyByOptions } from './keyed-data-set.js';
import { checkFunction, invalidJob, type LogicalGraph, type LogicalInput, type Partitioning } from './logical-graph.js';
import type { DeliveryGuarantee, TwoPhaseCommitSinkFactory } from './two-phase-commit-sink.js';
import { splitWords, VALUE_KEY } from './split-words.js';
import { resolveWatermarkStrategy, type WatermarkStrategy } from './watermark-strategy.js';

/** Options every operator takes. */
export interface OperatorOptions {
  /** Shown in plans, summaries and errors; also names the job vertex when the operator heads a chain. @defaultValue the operator kind */
  readonly name?: string;
  /** Parallel subtasks of this operator. @defaultValue the job's parallelism (`weft run --parallelism`) */
  readonly parallelism?: number;
  /** False starts a new chain here instead of fusing with the input's operator. @defaultValue true */
  readonly chaining?: boolean;
}

export interface SortOptions extends OperatorOptions {
  /** Largest key first. @defaultValue false */
  readonly descending?: boolean;
  /** Keys each input subtask samples to choose the range boundaries. @defaultValue 1000 */
  readonly samplesPerSubtask?: number;
}

export interface TextSinkOptions<T> {
  readonly name?: string;
  /** @defaultValue the parallelism of the data set's operator (so the sink chains to it) */
  readonly parallelism?: number;
  /** One line per value (without the newline). @defaultValue strings as they are, anything else as JSON */
  readonly format?: FormatFunction<T>;
}

export interface CollectOptions {
  /** @defaultValue the parallelism of the data set's operator (so the sink chains to it) */
  readonly parallelism?: number;
}

/** One producer of a data set with the routing its consumers will use. */
export interface DataSetInput {
  readonly producer: number;
  readonly partitioning: Partitioning;
  readonly exchange?: EdgeExchange;
}

const DEFAULT_PARTITIONING: Partitioning = Object.freeze({ type: 'default' });

/**
 * A distributed collection of values of type T: the result of an operator (or a union of several),
 * transformed by fluent, immutable calls. Nothing runs while a job's build function calls these; they
 * add operators to the job graph, which the engine plans (chains, regions) and runs.
 */
export class DataSet<T> {
  /** @internal */
  readonly graph: LogicalGraph;
  /** @internal */
  readonly sources: readonly DataSetInput[];
  /** @internal the event time of a value, set by `assignTimestampsAndWatermarks` (kept by filter, keyBy, repartitioning) */
  readonly timestampOf: ((value: unknown) => number) | undefined;

  /** @internal — data sets come from a JobContext source or another data set. */
  constructor(graph: LogicalGraph, sources: readonly DataSetInput[], timestampOf?: (value: unknown) => number) {
    this.graph = graph;
    this.sources = sources;
    this.timestampOf = timestampOf;
  }

  /** @internal */
  static of<T>(graph: LogicalGraph, producer: number): DataSet<T> {
    return new DataSet<T>(graph, [{ producer, partitioning: DEFAULT_PARTITIONING }]);
  }

  /** @internal a data set of `producer`'s output in the same job */
  derive<R>(producer: number): DataSet<R> {
    return DataSet.of<R>(this.graph, producer);
  }

  /** @internal the inputs an operator consuming this data set gets */
  inputs(inputIndex = 0, override?: Partitioning): LogicalInput[] {
    return this.sources.map((s) => ({
      producer: s.producer,
      inputIndex,
      partitioning: override ?? s.partitioning,
      ...(s.exchange === undefined ? {} : { exchange: s.exchange }),
    }));
  }

  map<R>(fn: MapFunction<T, R>, options: OperatorOptions = {}): DataSet<R> {
    checkFunction('map', options, fn);
    return this.#then<R>({ kind: 'map', fn: fn as MapFunction<unknown, unknown> }, 'map', options);
  }

  flatMap<R>(fn: FlatMapFunction<T, R>, options: OperatorOptions = {}): DataSet<R> {
    checkFunction('flatMap', options, fn);
    if ((fn as unknown) === splitWords) return this.#then<R>({ kind: 'split-words' }, 'splitWords', options);
    return this.#then<R>({ kind: 'flat-map', fn: fn as FlatMapFunction<unknown, unknown> }, 'flatMap', options);
  }

  /**
   * The words of each line (a data set of strings): `flatMap(splitWords)` — maximal runs of non-whitespace,
   * whitespace as JavaScript's `\s`, no empty words. The engine's built-in splitter: after a text source and
   * before `keyBy().count()` in one chain it is fused with both (see `splitWords`).
   */
  flatMapWords(options: OperatorOptions = {}): DataSet<string> {
    return this.#then<string>({ kind: 'split-words' }, 'splitWords', options);
  }

  filter(fn: FilterFunction<T>, options: OperatorOptions = {}): DataSet<T> {
    checkFunction('filter', options, fn);
    return this.#then<T>({ kind: 'filter', fn: fn as FilterFunction<unknown> }, 'filter', options, this.timestampOf);
  }

  /**
   * Event time (Flink's `assignTimestampsAndWatermarks`): an operator chained here reads each value's
   * timestamp with `strategy.timestamp` and emits watermarks (bounded out-of-orderness, every
   * `intervalMs`) in band to every consumer; a task's watermark is the minimum over its input channels.
   * Values pass unchanged; event-time windows downstream use the same timestamps. Its parallelism is
   * its input's unless `options.parallelism` says otherwise (Flink's rule), so it chains to its input.
   */
  assignTimestampsAndWatermarks(strategy: WatermarkStrategy<T>, options: OperatorOptions = {}): DataSet<T> {
    const resolved = resolveWatermarkStrategy(options.name ?? 'timestamps-watermarks', strategy as WatermarkStrategy<unknown>);
    // Flink's rule: the input's parallelism, so it chains to its input
    const parallelism = options.parallelism ?? this.#inputParallelism();
    return this.#then<T>({ kind: 'timestamps-watermarks', ...resolved }, 'timestamps-watermarks', { ...options, ...(parallelism === undefined ? {} : { parallelism }) }, resolved.timestamp);
  }

  /**
   * Groups by `key(value)`: the consumers of the result receive every value of a key in one subtask.
   * Without a key selector (`keyBy()`) each value is its own key (it must then be a KeyValue).
   */
  keyBy(): KeyedDataSet<T, T & KeyValue>;
  keyBy<K extends KeyValue>(key: KeySelector<T, K>, options?: KeyByOptions): KeyedDataSet<T, K>;
  keyBy<K extends KeyValue>(key: KeySelector<T, K> = VALUE_KEY as KeySelector<T, K>, options: KeyByOptions = {}): KeyedDataSet<T, K> {
    checkFunction('keyBy', { name: 'keyBy' }, key);
    return new KeyedDataSet<T, K>(this, key, options);
  }

  /** All values of this and `others` (same type), without duplicates removed. */
  union(...others: DataSet<T>[]): DataSet<T> {
    for (const [i, other] of others.entries()) {
      if (!(other instanceof DataSet) || other.graph !== this.graph) {
        throw invalidJob(`union: argument ${i}`, 'expected a data set of the same job');
      }
    }
    const timestampOf = others.every((o) => o.timestampOf === this.timestampOf) ? this.timestampOf : undefined;
    return new DataSet<T>(this.graph, [...this.sources, ...others.flatMap((o) => o.sources)], timestampOf);
  }

  /** Round robin to every consumer subtask (evens out skew; an all-to-all exchange). */
  rebalance(): DataSet<T> {
    return this.#repartition({ type: 'rebalance' });
  }

  /** Round robin within pointwise groups of consumer subtasks (cheaper than rebalance). */
  rescale(): DataSet<T> {
    return this.#repartition({ type: 'rescale' });
  }

  /** Every value to every consumer subtask. */
  broadcast(): DataSet<T> {
    return this.#repartition({ type: 'broadcast' });
  }

  /**
   * Overrides the job's exchange mode for the edges that consume this data set: `PIPELINED` /
   * `PIPELINED_BOUNDED` (producer and consumer run together, in one region) or `BLOCKING` (the output is
   * persisted first; the consumer's region starts after).
   */
  exchange(type: EdgeExchange): DataSet<T> {
    if (!isEdgeExchange(type)) throw invalidJob('exchange', `unknown exchange ${JSON.stringify(type)}; expected one of ${EDGE_EXCHANGES.join(', ')}`);
    return new DataSet<T>(this.graph, this.sources.map((s) => ({ ...s, exchange: type })), this.timestampOf);
  }

  /**
   * Sorts by `key(value)` across `parallelism` subtasks (terasort's way): the input is sampled, the samples
   * choose range boundaries, records are routed by range and each subtask sorts its range. Subtask i's
   * output precedes subtask i+1's, so a text sink's file is sorted as a whole.
   */
  sortBy<K extends KeyValue>(key: KeySelector<T, K>, options: SortOptions = {}): DataSet<T> {
    checkFunction('sortBy', options, key);
    const name = options.name ?? 'sort';
    const descending = options.descending ?? false;
    const samples = options.samplesPerSubtask ?? 1000;
    if (!Number.isInteger(samples) || samples < 1) throw invalidJob(`operator ${JSON.stringify(name)} (sort): samplesPerSubtask`, `expected an integer >= 1, got ${String(samples)}`);
    const keyFn = key as KeySelector<unknown, KeyValue>;
    // One producer with default routing, so the sample and the data come from the same subtasks.
    const input = this.sources.length === 1 && this.sources[0]?.partitioning.type === 'default' && this.sources[0].exchange === undefined ? this : this.map((v) => v, { name: `${name}-input` });
    const producer = (input.sources[0] as DataSetInput).producer;
    const producerParallelism = this.graph.node(producer).parallelism;
    const graph = this.graph;
    const sample = graph.add({
      name: `${name}-sample`,
      defaultName: 'sort-sample',
      spec: { kind: 'sort-sample', key: keyFn, samples },
      inputs: [{ producer, inputIndex: 0, partitioning: { type: 'forward' } }],
      parallelism: producerParallelism,
    });
    const boundaries = graph.add({
      name: `${name}-boundaries`,
      defaultName: 'sort-boundaries',
      spec: { kind: 'sort-boundaries', ranges: 0, descending },
      inputs: [{ producer: sample, inputIndex: 0, partitioning: { type: 'rebalance' } }],
      parallelism: 1,
    });
    const assign = graph.add({
      name: `${name}-assign`,
      defaultName: 'sort-assign',
      spec: { kind: 'range-assign', key: keyFn, descending },
      inputs: [
        { producer, inputIndex: 0, partitioning: { type: 'forward' }, exchange: 'BLOCKING', noChain: true },
        { producer: boundaries, inputIndex: 1, partitioning: { type: 'broadcast' } },
      ],
      parallelism: producerParallelism,
    });
    const sorted = graph.add({
      name,
      defaultName: 'sort',
      spec: { kind: 'local-sort', key: keyFn, descending },
      inputs: [{ producer: assign, inputIndex: 0, partitioning: { type: 'custom', select: (record) => (record as [number, unknown])[0] } }],
      parallelism: options.parallelism,
      chaining: options.chaining,
    });
    return DataSet.of<T>(graph, sorted);
  }

  /**
   * Writes one line per value to the text file `path` (a relative path resolves against the working
   * directory). Each subtask attempt writes a temporary file; only when the whole job succeeds are they
   * joined, in subtask order, and renamed to `path`. A failed job leaves nothing at `path`.
   */
  writeText(path: string, options: TextSinkOptions<T> = {}): void {
    const name = options.name ?? 'writeText';
    if (typeof path !== 'string' || path.trim() === '') throw invalidJob(`operator ${JSON.stringify(name)} (text-sink): path`, `expected a non-empty string, got ${JSON.stringify(path)}`);
    if (options.format !== undefined && typeof options.format !== 'function') throw invalidJob(`operator ${JSON.stringify(name)} (text-sink): format`, 'expected a function');
    this.graph.add({
      name: options.name,
      defaultName: 'writeText',
      spec: { kind: 'text-sink', path, format: options.format as FormatFunction<unknown> | undefined },
      inputs: this.inputs(),
      parallelism: options.parallelism ?? this.#inputParallelism(),
    });
  }

  /**
   * Writes every value through a two-phase-commit sink (see TwoPhaseCommitSink): in a checkpointed job
   * exactly once — a transaction per checkpoint, committed when the checkpoint completes — and in any job
   * one final transaction committed when the whole job succeeded. `create` makes the instance of each
   * subtask attempt. `deliveryGuarantee` (default `exactly-once`): `none` declares that the sink promises
   * nothing of the records a failure loses — what a job with approximate recovery needs (DeliveryGuarantee).
   */
  sinkTo(create: TwoPhaseCommitSinkFactory<T>, options: { readonly name?: string; readonly parallelism?: number; readonly deliveryGuarantee?: DeliveryGuarantee } = {}): void {
    const name = options.name ?? 'sinkTo';
    if (typeof create !== 'function') throw invalidJob(`operator ${JSON.stringify(name)} (two-phase-commit-sink): create`, 'expected a function making the sink of a subtask');
    // undefined is the default; null, like any other value, is refused (docs/two-phase-commit-sinks.md)
    const deliveryGuarantee: unknown = options.deliveryGuarantee === undefined ? 'exactly-once' : options.deliveryGuarantee;
    if (deliveryGuarantee !== 'exactly-once' && deliveryGuarantee !== 'none') {
      throw invalidJob(`operator ${JSON.stringify(name)} (two-phase-commit-sink): deliveryGuarantee`, `expected 'exactly-once' or 'none', got ${JSON.stringify(deliveryGuarantee)}`);
    }
    this.graph.add({
      name: options.name,
      defaultName: 'sinkTo',
      spec: { kind: 'two-phase-commit-sink', create: create as TwoPhaseCommitSinkFactory<unknown>, deliveryGuarantee },
      inputs: this.inputs(),
      parallelism: options.parallelism ?? this.#inputParallelism(),
    });
  }

  /** Collects every value into the job result under `name` (`result.collected[name]`, subtask order). */
  collect(name: string, options: CollectOptions = {}): void {
    if (typeof name !== 'string' || name.trim() === '') throw invalidJob('collect: name', `expected a non-empty string, got ${JSON.stringify(name)}`);
    if (this.graph.nodes.some((n) => n.spec.kind === 'collect-sink' && n.spec.name === name)) {
      throw invalidJob(`collect: name`, `two collect sinks are named ${JSON.stringify(name)}`);
    }
    this.graph.add({ name, defaultName: 'collect', spec: { kind: 'collect-sink', name }, inputs: this.inputs(), parallelism: options.parallelism ?? this.#inputParallelism() });
  }

  #then<R>(spec: Parameters<LogicalGraph['add']>[0]['spec'], defaultName: string, options: OperatorOptions, timestampOf?: (value: unknown) => number): DataSet<R> {
    const index = this.graph.add({
      name: options.name,
      defaultName,
      spec,
      inputs: this.inputs(),
      parallelism: options.parallelism,
      chaining: options.chaining,
    });
    return new DataSet<R>(this.graph, [{ producer: index, partitioning: DEFAULT_PARTITIONING }], timestampOf);
  }

  /** The parallelism of the single producer (undefined: the job default, or several producers). */
  #inputParallelism(): number | undefined {
    const only = this.sources.length === 1 ? this.sources[0] : undefined;
    return only === undefined ? undefined : this.graph.node(only.producer).parallelism;
  }

  #repartition(partitioning: Partitioning): DataSet<T> {
    return new DataSet<T>(this.graph, this.sources.map((s) => ({ ...s, partitioning })), this.timestampOf);
  }
}
