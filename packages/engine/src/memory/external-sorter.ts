import type { KeyValue } from '../api/functions.js';
import { compareKeys } from '../runtime/key-compare.js';
import type { RecordSerializer } from '../serialization/record-serializer.js';
import type { MemoryConsumer } from './memory-manager.js';
import { mergeRuns, reduceRunCount } from './merge-runs.js';
import type { SpillDirectory } from './spill-directory.js';
import { type SpillRun, SpillRunWriter } from './spill-run-writer.js';

/** What one buffered record costs beyond its serialized key and value: its key slot, offset and sort index. */
export const SORT_RECORD_OVERHEAD_BYTES = 24;

export interface ExternalSorterOptions {
  readonly operator: string;
  readonly consumer: MemoryConsumer;
  readonly spill: SpillDirectory;
  /** The job's serializer, for values. */
  readonly values: RecordSerializer;
  /** The default serializer, for keys (it keeps -0, NaN and ±Infinity). */
  readonly keys: RecordSerializer;
  readonly descending: boolean;
}

/**
 * Sorts (key, value) records by key (compareKeys, or its reverse), stable: equal keys keep their arrival
 * order. Values are kept serialized in one arena and counted against the operator's MemoryConsumer
 * (serialized key + value + SORT_RECORD_OVERHEAD_BYTES each); when a reservation is refused the buffer is
 * sorted and written as a run to the task's spill directory, and the memory released. `sorted()` then
 * yields the values in order: from memory when nothing spilled, else by a k-way merge of the runs (the
 * rest of the buffer spilled as the last run; more than the fan-in — the budget over two 32 KiB read
 * buffers, 2 to MAX_MERGE_FAN_IN — merged in passes first). `close()` removes every run file.
 */
export class ExternalSorter {
  readonly #o: ExternalSorterOptions;
  #keys: KeyValue[] = [];
  #starts: number[] = [];
  #arena: Buffer = Buffer.allocUnsafe(0);
  #used = 0;
  #allStrings = true;
  #allNumbers = true;
  #runs: SpillRun[] = [];
  /** Runs written so far (merge passes included). */
  runsSpilled = 0;
  bytesSpilled = 0;

  constructor(options: ExternalSorterOptions) {
    this.#o = options;
  }

  get size(): number {
    return this.#keys.length;
  }

  add(key: KeyValue, value: unknown): void {
    const o = this.#o;
    const keyBytes = o.keys.serialize(key).length;
    const bytes = o.values.serialize(value);
    const cost = keyBytes + bytes.length + SORT_RECORD_OVERHEAD_BYTES;
    o.consumer.checkRecordSize(cost);
    if (!o.consumer.tryReserve(cost)) {
      if (this.#keys.length > 0) {
        // `bytes` is a view into the serializer's scratch buffer: copy it before spilling reuses that
        const kept = Uint8Array.from(bytes);
        this.#spill();
        if (!o.consumer.tryReserve(cost)) o.consumer.forceReserve(cost);
        this.#append(key, kept);
        return;
      }
      o.consumer.forceReserve(cost);
    }
    this.#append(key, bytes);
  }

  /** The values in key order. Runs are read (and removed) as it goes; call once. */
  *sorted(): Generator<unknown, void, undefined> {
    const o = this.#o;
    if (this.#runs.length === 0) {
      const order = this.#order();
      const arena = this.#arena;
      const starts = this.#starts;
      const used = this.#used;
      this.#keys = [];
      for (let j = 0; j < order.length; j++) {
        const i = order[j] as number;
        const end = i + 1 < starts.length ? (starts[i + 1] as number) : used;
        yield o.values.deserialize(arena.subarray(starts[i] as number, end));
      }
      this.#reset();
      return;
    }
    if (this.#keys.length > 0) this.#spill();
    this.#runs = reduceRunCount(this.#runs, { ...this.#mergeOptions(), consumer: o.consumer, spill: o.spill, onRun: (run) => this.#count(run) });
    const runs = this.#runs;
    try {
      for (const cursor of mergeRuns(runs, this.#mergeOptions())) yield o.values.deserialize(cursor.reader.value);
    } finally {
      for (const run of runs) o.spill.remove(run.path);
      this.#runs = [];
    }
  }

  /** Drops what is buffered and removes every run file. Idempotent. */
  close(): void {
    this.#reset();
    this.#keys = [];
    for (const run of this.#runs) this.#o.spill.remove(run.path);
    this.#runs = [];
  }

  #append(key: KeyValue, bytes: Uint8Array): void {
    if (typeof key !== 'string') this.#allStrings = false;
    if (typeof key !== 'number') this.#allNumbers = false;
    const need = this.#used + bytes.length;
    if (need > this.#arena.length) {
      const grown = Buffer.allocUnsafe(Math.max(need, Math.min(this.#arena.length * 2, this.#o.consumer.manager.budgetBytes), 4096));
      this.#arena.copy(grown, 0, 0, this.#used);
      this.#arena = grown;
    }
    this.#arena.set(bytes, this.#used);
    this.#keys.push(key);
    this.#starts.push(this.#used);
    this.#used = need;
  }

  /** Today's in-memory order: by key (fast paths for all-string and all-number keys), ties by arrival. */
  #order(): Uint32Array {
    const keys = this.#keys;
    const order = new Uint32Array(keys.length);
    for (let i = 0; i < order.length; i++) order[i] = i;
    const sign = this.#o.descending ? -1 : 1;
    let compare: (a: number, b: number) => number;
    if (this.#allStrings) {
      const k = keys as string[];
      compare = (a, b) => {
        const x = k[a] as string;
        const y = k[b] as string;
        return x < y ? -sign : x > y ? sign : a - b;
      };
    } else if (this.#allNumbers) {
      const k = keys as number[];
      compare = (a, b) => sign * compareKeys(k[a] as number, k[b] as number) || a - b;
    } else {
      compare = (a, b) => sign * compareKeys(keys[a] as KeyValue, keys[b] as KeyValue) || a - b;
    }
    order.sort(compare);
    return order;
  }

  #spill(): void {
    const o = this.#o;
    const order = this.#order();
    const path = o.spill.newFile(o.operator);
    const writer = new SpillRunWriter(path, o.operator);
    try {
      const keys = this.#keys;
      const starts = this.#starts;
      for (let j = 0; j < order.length; j++) {
        const i = order[j] as number;
        const end = i + 1 < starts.length ? (starts[i + 1] as number) : this.#used;
        writer.write(o.keys.serialize(keys[i] as KeyValue), this.#arena.subarray(starts[i] as number, end));
      }
      const run = writer.finish();
      this.#runs.push(run);
      this.#count(run);
    } catch (error) {
      writer.abort();
      o.spill.remove(path);
      throw error;
    }
    // the arena stays (it is at most the budget): the next run fills it in place, nothing to collect
    this.#reset(true);
    this.#keys = [];
  }

  #mergeOptions(): { operator: string; compare: (a: KeyValue, b: KeyValue) => number; decodeKey: (bytes: Uint8Array) => KeyValue } {
    const o = this.#o;
    const compare = o.descending ? (a: KeyValue, b: KeyValue) => compareKeys(b, a) : compareKeys;
    return { operator: o.operator, compare, decodeKey: (bytes) => o.keys.deserialize(bytes) as KeyValue };
  }

  #count(run: SpillRun): void {
    this.runsSpilled++;
    this.bytesSpilled += run.bytes;
  }

  #reset(keepArena = false): void {
    this.#o.consumer.releaseAll();
    this.#starts = [];
    this.#used = 0;
    if (!keepArena) this.#arena = Buffer.allocUnsafe(0);
    this.#allStrings = true;
    this.#allNumbers = true;
  }
}
