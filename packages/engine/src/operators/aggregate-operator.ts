import type { KeySelector, KeyValue } from '../api/functions.js';
import type { Aggregator } from '../api/logical-graph.js';
import { userFunctionError } from '../runtime/user-function-error.js';
import type { MemoryConsumer } from '../memory/memory-manager.js';
import { SpillingAggregationTable } from '../memory/spilling-aggregation-table.js';
import { T_SHORT_STRING, T_STRING } from '../serialization/record-format.js';
import { ByteCountTable, HASH_SEED, hashBytes, hashFinish } from '../text/byte-count-table.js';
import { emitAll, type OperatorContext, type Output, type StreamOperator } from './stream-operator.js';

/**
 * The reduce side of a keyed aggregation: merges the `[key, accumulator]` pairs combiners sent (or, with
 * `key`, folds raw values when combining is off) and emits `aggregator.result(key, accumulator)` per key
 * once its inputs end. Its table lives within the task's memory budget: full, it spills a run sorted by
 * key and starts afresh; at the end the runs are merged and equal keys' accumulators combined with
 * `aggregator.merge` (SpillingAggregationTable). Output order is not defined (key order once spilled).
 *
 * `count` with string keys (well-formed UTF-16) takes a binary path: the counts live in a ByteCountTable
 * keyed by the keys' UTF-8 bytes (typed arrays and one byte arena: no JS object or string per key),
 * counted against the budget at what it grew to (`grownBytes`: its allocation beyond a fixed initial 170 KiB); full, it is written as a
 * sorted run into the same merge. Other keys (numbers, arrays, …) stay in the JS table beside it.
 */
export class AggregateOperator implements StreamOperator {
  readonly #table: SpillingAggregationTable;
  /** The binary path of `count` for string keys (undefined for other aggregations). */
  readonly #strings: ByteCountTable | undefined;
  readonly #stringsMemory: MemoryConsumer | undefined;
  #scratch = Buffer.allocUnsafe(256);

  constructor(
    private readonly aggregator: Aggregator,
    private readonly key: KeySelector<unknown, KeyValue> | undefined,
    private readonly output: Output,
    private readonly context: OperatorContext,
  ) {
    const name = context.operatorName;
    const merge = aggregator.merge;
    this.#table = new SpillingAggregationTable({
      operator: name,
      consumer: context.memory.manager.consumer(name),
      spill: context.memory.spill,
      values: context.memory.serializer(),
      keys: context.memory.keySerializer(),
      merge: (a, b) => {
        try {
          return merge(a, b);
        } catch (error) {
          throw userFunctionError(context, error, 'aggregate function');
        }
      },
    });
    if (aggregator.kind === 'count') {
      this.#strings = new ByteCountTable({ sortable: true });
      this.#stringsMemory = context.memory.manager.consumer(name);
    }
  }

  /** Counts `count` for string `key` in the byte table; false when it cannot (a lone surrogate: its UTF-8 would merge it with U+FFFD). */
  #countString(key: string, count: number): boolean {
    const table = this.#strings as ByteCountTable;
    if (this.#scratch.length < key.length * 3) this.#scratch = Buffer.allocUnsafe(key.length * 3);
    const scratch = this.#scratch;
    // ASCII (the common case) is encoded and hashed in one loop; anything else through Buffer.write
    let length = key.length;
    let h = HASH_SEED;
    let ascii = true;
    for (let i = 0; i < length; i++) {
      const c = key.charCodeAt(i);
      if (c >= 0x80) {
        ascii = false;
        break;
      }
      scratch[i] = c;
      h = Math.imul(h ^ c, 0x01000193);
    }
    let hash: number;
    if (!ascii) {
      if (!(key as unknown as { isWellFormed(): boolean }).isWellFormed()) return false;
      length = scratch.write(key, 0, 'utf8');
      hash = hashBytes(scratch, 0, length);
    } else {
      hash = hashFinish(h);
    }
    // a table at its budget is emptied (keeping what it allocated, still reserved) rather than grown
    const growth = table.growthFor(length);
    if (growth > 0 && !table.has(scratch, 0, length, hash)) {
      const memory = this.#stringsMemory as MemoryConsumer;
      const need = table.grownBytes + growth;
      if (need > memory.reservedBytes && !memory.tryReserve(need - memory.reservedBytes)) {
        if (table.size > 0) this.#spillStrings();
        const left = table.growthFor(length);
        if (left > 0) {
          const again = table.grownBytes + left;
          memory.checkRecordSize(again);
          if (again > memory.reservedBytes && !memory.tryReserve(again - memory.reservedBytes)) memory.forceReserve(again - memory.reservedBytes);
        }
      }
    }
    table.add(scratch, 0, length, hash, count);
    return true;
  }

  /** Writes the byte table as a run in key order — no string made: the keys go out as the default serializer's string records. */
  #spillStrings(): void {
    const table = this.#strings as ByteCountTable;
    const order = table.sortedOrder();
    let scratch = Buffer.allocUnsafe(256);
    this.#table.spillSortedEncoded(
      (function* () {
        for (let j = 0; j < order.length; j++) {
          const e = order[j] as number;
          const bytes = table.keyOf(e);
          const length = bytes.length;
          if (scratch.length < length + 6) scratch = Buffer.allocUnsafe(length * 2 + 6);
          let p = 0;
          if (length < 64) scratch[p++] = T_SHORT_STRING | length;
          else {
            scratch[p++] = T_STRING;
            let n = length;
            while (n >= 0x80) {
              scratch[p++] = (n & 0x7f) | 0x80;
              n = Math.floor(n / 128);
            }
            scratch[p++] = n;
          }
          scratch.set(bytes, p);
          yield [scratch.subarray(0, p + length), table.countOf(e)] as const;
        }
      })(),
    );
    // emptied, not shrunk: it fills the memory it holds (and keeps reserved) again, with nothing to collect
    table.clear();
  }

  /** Runs spilled so far. */
  get runsSpilled(): number {
    return this.#table.runsSpilled;
  }

  collect(value: unknown): void {
    const table = this.#table;
    let key: unknown;
    let incoming: unknown;
    if (this.key === undefined) {
      const pair = value as [KeyValue, unknown];
      key = pair[0];
      incoming = pair[1];
    } else {
      try {
        key = this.key(value);
      } catch (error) {
        throw userFunctionError(this.context, error, 'key selector');
      }
      incoming = value;
    }
    if (this.#strings !== undefined && typeof key === 'string') {
      const count = this.key === undefined ? incoming : 1;
      if (typeof count === 'number' && this.#countString(key, count)) return;
    }
    let previous: unknown;
    try {
      previous = table.get(key);
    } catch (error) {
      throw userFunctionError(this.context, error, 'key selector');
    }
    let next: unknown;
    try {
      if (this.key === undefined) next = previous === undefined ? incoming : this.aggregator.merge(previous, incoming);
      else next = this.aggregator.add(previous === undefined ? this.aggregator.create() : previous, incoming);
    } catch (error) {
      throw userFunctionError(this.context, error, 'aggregate function');
    }
    table.set(key, next);
  }

  async finish(): Promise<void> {
    const result = this.aggregator.result;
    const strings = this.#strings;
    if (strings !== undefined && strings.size > 0) {
      if (this.#table.spilled) this.#spillStrings();
      else {
        // nothing spilled: the byte table's keys are emitted straight, the JS table's after them
        await emitAll(strings.entries(), this.output, this.context, ([key, count]) => {
          try {
            return result(key, count);
          } catch (error) {
            throw userFunctionError(this.context, error, 'aggregate result');
          }
        });
        strings.release();
        this.#stringsMemory?.releaseAll();
      }
    }
    await emitAll(this.#table.entries(), this.output, this.context, ([key, accumulator]) => {
      try {
        return result(key, accumulator);
      } catch (error) {
        throw userFunctionError(this.context, error, 'aggregate result');
      }
    });
  }

  close(): void {
    this.#strings?.release();
    this.#stringsMemory?.releaseAll();
    this.#table.close();
  }
}
