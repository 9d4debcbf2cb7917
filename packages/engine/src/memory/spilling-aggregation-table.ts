import type { KeyValue } from '../api/functions.js';
import { KeyedTable } from '../operators/keyed-table.js';
import { compareKeys } from '../runtime/key-compare.js';
import { primitiveSerializedSize } from '../serialization/primitive-size.js';
import type { RecordSerializer } from '../serialization/record-serializer.js';
import type { MemoryConsumer } from './memory-manager.js';
import { mergeRuns, reduceRunCount } from './merge-runs.js';
import type { SpillDirectory } from './spill-directory.js';
import { type SpillRun, SpillRunWriter } from './spill-run-writer.js';

/** What one key costs in a JS hash table beyond its serialized key and accumulator (the Map entry, the key's string or array header). */
export const KEYED_ENTRY_OVERHEAD_BYTES = 64;

/** A non-number accumulator, with the serialized size it was counted at. */
interface Slot {
  acc: unknown;
  bytes: number;
}

export interface SpillingAggregationTableOptions {
  readonly operator: string;
  readonly consumer: MemoryConsumer;
  readonly spill: SpillDirectory;
  /** The job's serializer, for accumulators. */
  readonly values: RecordSerializer;
  /** The default serializer, for keys. */
  readonly keys: RecordSerializer;
  /** Merges two accumulators of one key (Aggregator.merge; the earlier one first). */
  readonly merge: (a: unknown, b: unknown) => unknown;
}

/**
 * The keyed state of a reduce-side aggregation within the task's memory budget: key → accumulator in a
 * KeyedTable (so `[NaN]`, `[null]`, `-0` and `0` stay apart), each key counted at its serialized key +
 * accumulator + KEYED_ENTRY_OVERHEAD_BYTES (number accumulators at 9 bytes; others re-measured, by
 * serializing them, whenever they change). When a reservation is refused the table is written as a
 * run sorted by key (compareKeys) to the spill directory and emptied. `entries()` yields every key once:
 * straight from the table when nothing spilled, else from a k-way merge of the runs (the table's rest
 * spilled last) that merges the accumulators of equal keys in run order. `close()` removes the runs.
 */
export class SpillingAggregationTable {
  readonly #o: SpillingAggregationTableOptions;
  readonly #table = new KeyedTable<unknown>();
  #runs: SpillRun[] = [];
  /** The last `get`: `set` of the same key right after it skips a second lookup. */
  #lastKey: unknown = undefined;
  #lastRaw: unknown = undefined;
  #lastValid = false;
  runsSpilled = 0;
  bytesSpilled = 0;

  constructor(options: SpillingAggregationTableOptions) {
    this.#o = options;
  }

  get size(): number {
    return this.#table.size;
  }

  /** The accumulator of `key`, or undefined. Throws a TypeError for a value that is not a key. */
  get(key: unknown): unknown {
    const raw = this.#table.get(key);
    this.#lastKey = key;
    this.#lastRaw = raw;
    this.#lastValid = true;
    return raw === undefined || typeof raw === 'number' ? raw : (raw as Slot).acc;
  }

  /** Sets `key`'s accumulator (after `get`), counting what it costs; may spill the whole table. */
  set(key: unknown, acc: unknown): void {
    const table = this.#table;
    const raw = this.#lastValid && Object.is(this.#lastKey, key) ? this.#lastRaw : table.get(key);
    this.#lastValid = false;
    this.#lastKey = undefined;
    let delta: number;
    if (raw === undefined) {
      const size = this.#size(acc);
      delta = keySize(this.#o.keys, key) + size + KEYED_ENTRY_OVERHEAD_BYTES;
      table.set(key, typeof acc === 'number' ? acc : { acc, bytes: size });
    } else if (typeof raw === 'number') {
      if (typeof acc === 'number') {
        table.set(key, acc);
        return;
      }
      const size = this.#size(acc);
      delta = size - 9;
      table.set(key, { acc, bytes: size });
    } else {
      const slot = raw as Slot;
      if (typeof acc === 'number') {
        delta = 9 - slot.bytes;
        table.set(key, acc);
      } else {
        const size = this.#size(acc);
        delta = size - slot.bytes;
        slot.acc = acc;
        slot.bytes = size;
      }
    }
    if (delta <= 0) {
      this.#o.consumer.release(-delta);
      return;
    }
    const consumer = this.#o.consumer;
    if (consumer.tryReserve(delta)) return;
    // full: everything (this key included) goes to a run
    this.#spill();
  }

  /** Every key once with its accumulator; call once (runs are read and removed as it goes). */
  *entries(): Generator<[KeyValue, unknown], void, undefined> {
    if (this.#runs.length === 0) {
      for (const [key, raw] of this.#table.entries()) yield [key, typeof raw === 'number' ? raw : (raw as Slot).acc];
      this.#clear();
      return;
    }
    if (this.#table.size > 0) this.#spill();
    const o = this.#o;
    const options = { operator: o.operator, compare: compareKeys, decodeKey: (bytes: Uint8Array) => o.keys.deserialize(bytes) as KeyValue };
    this.#runs = reduceRunCount(this.#runs, { ...options, consumer: o.consumer, spill: o.spill, onRun: (run) => this.#count(run) });
    const runs = this.#runs;
    try {
      let key: KeyValue | undefined;
      let acc: unknown;
      let have = false;
      for (const cursor of mergeRuns(runs, options)) {
        const next = o.values.deserialize(cursor.reader.value);
        if (have && compareKeys(key as KeyValue, cursor.key) === 0) {
          acc = o.merge(acc, next);
          continue;
        }
        if (have) yield [key as KeyValue, acc];
        key = cursor.key;
        acc = next;
        have = true;
      }
      if (have) yield [key as KeyValue, acc];
    } finally {
      for (const run of runs) o.spill.remove(run.path);
      this.#runs = [];
    }
  }

  /**
   * Writes `entries` — sorted by key (compareKeys), each key once — as one more run (another table of the
   * same operator spilling into this one's merge; its memory is its own). Empty: nothing.
   */
  spillSorted(entries: Iterable<readonly [KeyValue, unknown]>): void {
    const keys = this.#o.keys;
    this.spillSortedEncoded((function* () {
      for (const [key, acc] of entries) yield [keys.serialize(key), acc] as const;
    })());
  }

  /** `spillSorted` with each key already in the key serializer's bytes (valid until the next item). */
  spillSortedEncoded(entries: Iterable<readonly [Uint8Array, unknown]>): void {
    const o = this.#o;
    let writer: SpillRunWriter | undefined;
    let path = '';
    try {
      for (const [key, acc] of entries) {
        if (writer === undefined) {
          path = o.spill.newFile(o.operator);
          writer = new SpillRunWriter(path, o.operator);
        }
        writer.write(key, o.values.serialize(acc));
      }
      if (writer === undefined) return;
      const run = writer.finish();
      this.#runs.push(run);
      this.#count(run);
    } catch (error) {
      writer?.abort();
      if (writer !== undefined) o.spill.remove(path);
      throw error;
    }
  }

  /** Whether anything was spilled (then `entries()` merges runs). */
  get spilled(): boolean {
    return this.#runs.length > 0;
  }

  /** Drops the table and removes every run. Idempotent. */
  close(): void {
    this.#clear();
    for (const run of this.#runs) this.#o.spill.remove(run.path);
    this.#runs = [];
  }

  /** The accumulator's serialized size (9 for every number, so a number's updates cost nothing); WEFT_ERR_RECORD_TOO_LARGE past the budget. */
  #size(acc: unknown): number {
    if (typeof acc === 'number') return 9;
    const size = primitiveSerializedSize(acc) ?? this.#o.values.serialize(acc).length;
    this.#o.consumer.checkRecordSize(size + KEYED_ENTRY_OVERHEAD_BYTES);
    return size;
  }

  #spill(): void {
    const o = this.#o;
    const entries = Array.from(this.#table.entries());
    entries.sort((a, b) => compareKeys(a[0], b[0]));
    const path = o.spill.newFile(o.operator);
    const writer = new SpillRunWriter(path, o.operator);
    try {
      for (const [key, raw] of entries) {
        const acc = typeof raw === 'number' ? raw : (raw as Slot).acc;
        const keyBytes = o.keys.serialize(key);
        const size = keyBytes.length;
        const value = o.values.serialize(acc);
        o.consumer.checkRecordSize(size + value.length + KEYED_ENTRY_OVERHEAD_BYTES);
        writer.write(keyBytes, value);
      }
      const run = writer.finish();
      this.#runs.push(run);
      this.#count(run);
    } catch (error) {
      writer.abort();
      o.spill.remove(path);
      throw error;
    }
    this.#clear();
  }

  #count(run: SpillRun): void {
    this.runsSpilled++;
    this.bytesSpilled += run.bytes;
  }

  #clear(): void {
    this.#table.clear();
    this.#o.consumer.releaseAll();
  }
}

function keySize(keys: RecordSerializer, key: unknown): number {
  return primitiveSerializedSize(key) ?? keys.serialize(key).length;
}
