import type { KeySelector, KeyValue } from '../api/functions.js';
import type { Aggregator } from '../api/logical-graph.js';
import { checkKey } from '../runtime/key-hash.js';
import { userFunctionError } from '../runtime/user-function-error.js';
import type { MemoryConsumer } from '../memory/memory-manager.js';
import { KEYED_ENTRY_OVERHEAD_BYTES } from '../memory/spilling-aggregation-table.js';
import { primitiveSerializedSize } from '../serialization/primitive-size.js';
import type { RecordSerializer } from '../serialization/record-serializer.js';
import { KeyedTable } from './keyed-table.js';
import { emitAll, type OperatorContext, type Output, type StreamOperator } from './stream-operator.js';

/** Records a combiner folds before it decides whether combining pays (Spark's skipPartialAggregate minNumRows). */
export const COMBINE_SKIP_CHECK_RECORDS = 100_000;
/** Distinct keys per record above which, at that point, the combiner stops combining. */
export const COMBINE_SKIP_RATIO = 0.9;
/** The operator list state (`split` on restore) holding a checkpointed combiner's `[key, accumulator]` partials. */
export const COMBINE_PARTIALS_STATE = 'combine-partials';

/**
 * Map-side combining (Flink's combiner): folds values into one accumulator per key and emits
 * `[key, accumulator]` pairs at the end — or early, all at once, when it holds `maxKeys` keys or the
 * task's memory budget refuses a new key (the reducer merges what it sends twice). Each new key is
 * counted at its serialized key + first accumulator + KEYED_ENTRY_OVERHEAD_BYTES; an accumulator that
 * grows afterwards is not re-measured here (the reduce side's table re-measures). Its keys stay in a JS
 * Map: a byte table (as the reduce side's) measured 2-2.5x slower here on few distinct keys, where a
 * combiner's hits dominate.
 *
 * Combining that does not pay is skipped (Spark's partial-aggregation skipping): when, after its first
 * COMBINE_SKIP_CHECK_RECORDS records, more than COMBINE_SKIP_RATIO of them brought a new key, the combiner
 * emits what it holds and from then on forwards each value as `[key, add(create(), value)]` at once. A
 * Map of hundreds of thousands of keys that are never hit again costs the shuffle nothing less and the
 * heap a great deal (its tables and keys, emptied at every early emit, are garbage until a full GC).
 *
 * In a checkpointed job its partial aggregates are operator state: a checkpoint writes what it holds into
 * the COMBINE_PARTIALS_STATE list (snapshotted with the source position before the barrier goes on) and
 * keeps combining — it does not flush them downstream, which made every checkpoint cost a shuffle, a
 * deserialization and a keyed-state update per key held (bench/checkpoint.bench.ts). A restored attempt
 * starts from the partials of its share of the list (`split`: with another parallelism the old subtasks'
 * entries are dealt over the new ones, each to exactly one; any combiner may emit any key, the reducer
 * merges); equal keys met twice (from two old subtasks) are merged.
 */
export class CombineOperator implements StreamOperator {
  readonly #table = new KeyedTable<unknown>();
  readonly #primitive: Map<unknown, unknown>;
  readonly #create: () => unknown;
  readonly #add: (accumulator: unknown, value: unknown) => unknown;
  readonly #merge: (a: unknown, b: unknown) => unknown;
  readonly #count: boolean;
  readonly #memory: MemoryConsumer;
  readonly #keys: RecordSerializer;
  readonly #values: RecordSerializer;
  #seen = 0;
  #newKeys = 0;
  #forwarding = false;

  constructor(
    private readonly key: KeySelector<unknown, KeyValue>,
    aggregator: Aggregator,
    private readonly maxKeys: number,
    private readonly output: Output,
    private readonly context: OperatorContext,
  ) {
    this.#primitive = this.#table.primitive;
    this.#create = aggregator.create;
    this.#add = aggregator.add;
    this.#merge = aggregator.merge;
    this.#count = aggregator.kind === 'count';
    this.#memory = context.memory.manager.consumer(context.operatorName);
    this.#keys = context.memory.keySerializer();
    this.#values = context.memory.serializer();
  }

  /** A key entered the table, now of `size` keys: past maxKeys emit everything, else count its cost. */
  #entered(size: number, key: unknown, accumulator: unknown): void {
    if (size > this.maxKeys) this.#spill();
    else this.#added(key, accumulator);
  }

  /** A key entered the table with its first accumulator: count it; refused, emit everything. */
  #added(key: unknown, accumulator: unknown): void {
    this.#newKeys++;
    const cost =
      (primitiveSerializedSize(key) ?? this.#keys.serialize(key).length) +
      (typeof accumulator === 'number' ? 9 : (primitiveSerializedSize(accumulator) ?? this.#values.serialize(accumulator).length)) +
      KEYED_ENTRY_OVERHEAD_BYTES;
    if (this.#memory.tryReserve(cost)) return;
    this.#memory.checkRecordSize(cost);
    this.#spill();
  }

  /** Whether the combiner gave up combining (distinct keys nearly every record) and forwards values. */
  get forwarding(): boolean {
    return this.#forwarding;
  }

  collect(value: unknown): void {
    if (this.#forwarding) {
      this.#forward(value);
      return;
    }
    this.#combine(value);
    if (++this.#seen === COMBINE_SKIP_CHECK_RECORDS && this.#newKeys > COMBINE_SKIP_RATIO * COMBINE_SKIP_CHECK_RECORDS) {
      this.#spill();
      this.#forwarding = true;
    }
  }

  #forward(value: unknown): void {
    let key: KeyValue;
    try {
      key = checkKey(this.key(value));
    } catch (error) {
      throw userFunctionError(this.context, error, 'key selector');
    }
    let accumulator: unknown;
    if (this.#count) accumulator = 1;
    else {
      try {
        accumulator = this.#add(this.#create(), value);
      } catch (error) {
        throw userFunctionError(this.context, error, 'aggregate function');
      }
    }
    this.output.collect([key, accumulator]);
  }

  #combine(value: unknown): void {
    let key: unknown;
    try {
      key = this.key(value);
    } catch (error) {
      throw userFunctionError(this.context, error, 'key selector');
    }
    // the fast path: keys a Map compares as keys compare (not -0, which a Map takes for 0)
    if (typeof key === 'string' || (typeof key === 'number' && !Object.is(key, -0))) {
      const map = this.#primitive;
      if (this.#count) {
        const count = map.get(key) as number | undefined;
        map.set(key, (count ?? 0) + 1);
        if (count === undefined) this.#entered(map.size, key, 1);
        return;
      }
      const previous = map.get(key);
      let next: unknown;
      try {
        next = this.#add(previous === undefined ? this.#create() : previous, value);
      } catch (error) {
        throw userFunctionError(this.context, error, 'aggregate function');
      }
      map.set(key, next);
      if (previous === undefined) this.#entered(map.size, key, next);
      return;
    }
    const table = this.#table;
    let previous: unknown;
    try {
      previous = table.get(key);
    } catch (error) {
      throw userFunctionError(this.context, error, 'key selector');
    }
    let next: unknown;
    try {
      next = this.#add(previous === undefined ? this.#create() : previous, value);
    } catch (error) {
      throw userFunctionError(this.context, error, 'aggregate function');
    }
    table.set(key, next);
    if (previous === undefined) this.#entered(table.size, key, next);
  }

  async finish(): Promise<void> {
    await emitAll(this.#table.entries(), this.output, this.context, (entry) => entry);
    this.#table.clear();
    this.#memory.releaseAll();
  }

  /** Restored from a checkpoint: starts from the partials of its share of the snapshotted list. */
  open(): void {
    const state = this.context.state;
    if (state?.restored !== true) return;
    for (const [key, accumulator] of state.operator().listState<[KeyValue, unknown]>(COMBINE_PARTIALS_STATE, 'split').get()) this.#restorePartial(key, accumulator);
  }

  /** A checkpoint: what it holds is written into its operator state (it keeps combining; nothing goes downstream). */
  snapshotState(): void {
    this.snapshotPartials([]);
  }

  /** Writes `extra` (a fused combiner's other table) and what it holds into its operator state. */
  snapshotPartials(extra: Iterable<[KeyValue, unknown]>): void {
    const state = this.context.state;
    if (state === undefined) return;
    const partials: [KeyValue, unknown][] = [...extra];
    for (const entry of this.#table.entries()) partials.push(entry);
    state.operator().listState<[KeyValue, unknown]>(COMBINE_PARTIALS_STATE, 'split').update(partials);
  }

  #restorePartial(key: KeyValue, accumulator: unknown): void {
    const table = this.#table;
    const previous = table.get(key);
    let next = accumulator;
    if (previous !== undefined) {
      try {
        next = this.#merge(previous, accumulator);
      } catch (error) {
        throw userFunctionError(this.context, error, 'aggregate function');
      }
    }
    table.set(key, next);
    if (previous === undefined) this.#entered(table.size, key, next);
  }

  /** Emits everything it holds and starts afresh (not to disk: the reducer merges). */
  #spill(): void {
    for (const entry of this.#table.entries()) this.output.collect(entry);
    this.#table.clear();
    this.#memory.releaseAll();
  }

  close(): void {
    this.#table.clear();
    this.#memory.releaseAll();
  }
}
