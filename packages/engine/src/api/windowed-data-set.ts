import type { WindowAssigner } from '../windows/window-assigner.js';
import type { DataSet, OperatorOptions } from './data-set.js';
import type { AggregateFunction, KeySelector, KeyValue, ReduceFunction } from './functions.js';
import { checkFunction, invalidJob, type Partitioning, type WindowFolder } from './logical-graph.js';

/** One window's result for one key: the window `[start, end)` (end exclusive) and what its values folded to. */
export interface WindowedValue<K extends KeyValue, R> {
  readonly key: K;
  readonly start: number;
  readonly end: number;
  readonly value: R;
}

/** @internal what `KeyedDataSet.window` hands over */
export interface WindowedInput {
  readonly parent: DataSet<unknown>;
  readonly key: KeySelector<unknown, KeyValue>;
  readonly partitioning: Partitioning;
  readonly assigner: WindowAssigner;
  readonly timestamp: ((value: unknown) => number) | undefined;
}

/**
 * A keyed data set cut into windows (Flink's WindowedStream): `reduce`, `aggregate` or `count` fold each
 * key's values per window, and the result of a window is emitted once its time passed — for event time
 * when the watermark passes `end - 1`, for processing time when the task's clock does — or at the end of
 * the input, which fires every window left (so a bounded input gets the batch answer). A value whose
 * every window already fired (its timestamp at or below the watermark) is dropped and counted
 * (`VertexSummary.lateRecordsDropped`). Window contents live in keyed state: checkpointed, restored and
 * redistributed by key group with the job.
 */
export class WindowedDataSet<T, K extends KeyValue> {
  readonly #input: WindowedInput;

  /** @internal — made by `KeyedDataSet.window`. */
  constructor(input: WindowedInput) {
    this.#input = input;
  }

  /** Folds each window's values with `fn`: one WindowedValue per key and window. */
  reduce(fn: ReduceFunction<T>, options: OperatorOptions = {}): DataSet<WindowedValue<K, T>> {
    checkFunction('window-reduce', options, fn);
    const reduce = fn as ReduceFunction<unknown>;
    return this.#add({ first: (v) => v, add: (acc, v) => reduce(acc, v), result: (acc) => acc }, 'window-reduce', options);
  }

  /** Flink's AggregateFunction per key and window (`merge` is not called: windows here never merge). */
  aggregate<A, R>(fn: AggregateFunction<T, A, R>, options: OperatorOptions = {}): DataSet<WindowedValue<K, R>> {
    const name = options.name ?? 'window-aggregate';
    for (const method of ['createAccumulator', 'add', 'getResult'] as const) {
      if (typeof fn?.[method] !== 'function') throw invalidJob(`operator ${JSON.stringify(name)} (window-aggregate): ${method}`, 'expected a function');
    }
    const f = fn as unknown as AggregateFunction<unknown, unknown, unknown>;
    return this.#add({ first: (v) => f.add(f.createAccumulator(), v), add: (acc, v) => f.add(acc, v), result: (acc) => f.getResult(acc) }, 'window-aggregate', options);
  }

  /** Values per key and window. */
  count(options: OperatorOptions = {}): DataSet<WindowedValue<K, number>> {
    return this.#add({ first: () => 1, add: (acc) => (acc as number) + 1, result: (acc) => acc }, 'window-count', options);
  }

  #add<R>(folder: WindowFolder, defaultName: string, options: OperatorOptions): DataSet<R> {
    const { parent, key, partitioning, assigner, timestamp } = this.#input;
    const index = parent.graph.add({
      name: options.name,
      defaultName,
      spec: { kind: 'window-aggregate', assigner, key, timestamp, folder },
      inputs: parent.inputs(0, partitioning),
      parallelism: options.parallelism,
      chaining: options.chaining,
    });
    return parent.derive<R>(index);
  }
}
