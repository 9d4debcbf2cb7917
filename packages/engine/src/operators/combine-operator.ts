import type { KeySelector, KeyValue } from '../api/functions.js';
import type { Aggregator } from '../api/logical-graph.js';
import { userFunctionError } from '../runtime/user-function-error.js';
import type { MemoryConsumer } from '../memory/memory-manager.js';
import { KEYED_ENTRY_OVERHEAD_BYTES } from '../memory/spilling-aggregation-table.js';
import { primitiveSerializedSize } from '../serialization/primitive-size.js';
import type { RecordSerializer } from '../serialization/record-serializer.js';
import { ByteCountTable, hashBytes } from '../text/byte-count-table.js';
import { KeyedTable } from './keyed-table.js';
import { emitAll, type OperatorContext, type Output, type StreamOperator } from './stream-operator.js';

/**
 * Map-side combining (Flink's combiner): folds values into one accumulator per key and emits
 * `[key, accumulator]` pairs at the end — or early, all at once, when it holds `maxKeys` keys or the
 * task's memory budget refuses a new key (the reducer merges what it sends twice). Each new key is
 * counted at its serialized key + first accumulator + KEYED_ENTRY_OVERHEAD_BYTES; an accumulator that
 * grows afterwards is not re-measured here (the reduce side's table re-measures). `count` with string
 * keys counts in a ByteCountTable over their UTF-8 bytes instead (no JS object per key; counted at its
 * allocation beyond its fixed initial 170 KiB), as the reduce side does.
 */
export class CombineOperator implements StreamOperator {
  readonly #table = new KeyedTable<unknown>();
  readonly #primitive: Map<unknown, unknown>;
  readonly #create: () => unknown;
  readonly #add: (accumulator: unknown, value: unknown) => unknown;
  readonly #count: boolean;
  readonly #memory: MemoryConsumer;
  readonly #keys: RecordSerializer;
  readonly #values: RecordSerializer;
  readonly #strings: ByteCountTable | undefined;
  readonly #stringsMemory: MemoryConsumer;
  #scratch = Buffer.allocUnsafe(256);

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
    this.#count = aggregator.kind === 'count';
    this.#memory = context.memory.manager.consumer(context.operatorName);
    this.#keys = context.memory.keySerializer();
    this.#values = context.memory.serializer();
    this.#strings = this.#count ? new ByteCountTable() : undefined;
    this.#stringsMemory = context.memory.manager.consumer(context.operatorName);
  }

  /** `count` of a string key in the byte table; false for a string with a lone surrogate (its UTF-8 would be U+FFFD's). */
  #countString(key: string): boolean {
    if (!(key as unknown as { isWellFormed(): boolean }).isWellFormed()) return false;
    const table = this.#strings as ByteCountTable;
    if (this.#scratch.length < key.length * 3) this.#scratch = Buffer.allocUnsafe(key.length * 3);
    const scratch = this.#scratch;
    const length = scratch.write(key, 0, 'utf8');
    const hash = hashBytes(scratch, 0, length);
    // a table at its budget is emptied (keeping what it allocated, still reserved) rather than grown
    const growth = table.growthFor(length);
    if (growth > 0 && !table.has(scratch, 0, length, hash)) {
      const memory = this.#stringsMemory as MemoryConsumer;
      const need = table.grownBytes + growth;
      if (need > memory.reservedBytes && !memory.tryReserve(need - memory.reservedBytes)) {
        if (table.size > 0) this.#spill();
        const left = table.growthFor(length);
        if (left > 0) {
          const again = table.grownBytes + left;
          memory.checkRecordSize(again);
          if (again > memory.reservedBytes && !memory.tryReserve(again - memory.reservedBytes)) memory.forceReserve(again - memory.reservedBytes);
        }
      }
    }
    const size = table.size;
    table.add(scratch, 0, length, hash, 1);
    if (table.size !== size && table.size + this.#table.size > this.maxKeys) this.#spill();
    return true;
  }

  /** A key entered the table with its first accumulator: count it; refused, emit everything. */
  #added(key: unknown, accumulator: unknown): void {
    const cost =
      (primitiveSerializedSize(key) ?? this.#keys.serialize(key).length) +
      (typeof accumulator === 'number' ? 9 : (primitiveSerializedSize(accumulator) ?? this.#values.serialize(accumulator).length)) +
      KEYED_ENTRY_OVERHEAD_BYTES;
    if (this.#memory.tryReserve(cost)) return;
    this.#memory.checkRecordSize(cost);
    this.#spill();
  }

  collect(value: unknown): void {
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
        if (typeof key === 'string' && this.#countString(key)) return;
        const count = map.get(key) as number | undefined;
        map.set(key, (count ?? 0) + 1);
        if (count === undefined) {
          if (map.size > this.maxKeys) this.#spill();
          else this.#added(key, 1);
        }
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
      if (previous === undefined) {
        if (map.size > this.maxKeys) this.#spill();
        else this.#added(key, next);
      }
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
    if (previous === undefined) {
      if (table.size > this.maxKeys) this.#spill();
      else this.#added(key, next);
    }
  }

  async finish(): Promise<void> {
    if (this.#strings !== undefined && this.#strings.size > 0) {
      await emitAll(this.#strings.entries(), this.output, this.context, (entry) => entry);
      this.#strings.release();
      this.#stringsMemory.releaseAll();
    }
    await emitAll(this.#table.entries(), this.output, this.context, (entry) => entry);
    this.#table.clear();
    this.#memory.releaseAll();
  }

  /** Emits everything it holds and starts afresh (not to disk: the reducer merges). */
  #spill(): void {
    if (this.#strings !== undefined) {
      for (const entry of this.#strings.entries()) this.output.collect(entry);
      // emptied, not shrunk: it fills the memory it holds (and keeps reserved) again
      this.#strings.clear();
    }
    for (const entry of this.#table.entries()) this.output.collect(entry);
    this.#table.clear();
    this.#memory.releaseAll();
  }

  close(): void {
    this.#strings?.release();
    this.#stringsMemory.releaseAll();
    this.#table.clear();
    this.#memory.releaseAll();
  }
}
