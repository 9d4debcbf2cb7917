import type { KeyValue } from '../api/functions.js';
import { compareKeys } from '../runtime/key-compare.js';
import type { RecordSerializer } from '../serialization/record-serializer.js';
import type { MemoryConsumer } from './memory-manager.js';
import { mergeRuns, reduceRunCount } from './merge-runs.js';
import { PagePool } from './page-pool.js';
import { sortIndices } from './sort-indices.js';
import { T_SHORT_STRING, T_STRING } from '../serialization/record-format.js';
import { compareUtf8AsUtf16 } from '../text/utf8-order.js';
import type { SpillDirectory } from './spill-directory.js';
import { type SpillRun, SpillRunWriter } from './spill-run-writer.js';

/**
 * What one buffered record costs beyond its serialized key and value: its length prefix in a page (4),
 * its key's and its position's array slots (8 + 8), its sort index and the merge sort's scratch (4 + 4),
 * its JS key's header beyond the key's serialized bytes (24: a string's, or a boxed number's), and room
 * for the arrays' spare capacity (they grow by doubling). Measured against the bench's sort (bench/README.md, spill.bench.ts):
 * at 24 a full buffer held ~20 MiB more than the budget.
 */
export const SORT_RECORD_OVERHEAD_BYTES = 64;

/** Bytes of the default serializer's header of a string of `utf8Length` UTF-8 bytes (tag, and a varint from 64 bytes on). */
function stringHeaderBytes(utf8Length: number): number {
  if (utf8Length < 64) return 1;
  let n = 2;
  for (let v = utf8Length; v >= 0x80; v = Math.floor(v / 128)) n++;
  return n;
}

/**
 * The smallest run the sorter spills, as a fraction of the task's budget (1/16): while its buffer holds
 * less, a refused reservation is forced instead (the task's other consumers hold the rest of the budget).
 */
const MIN_RUN_FRACTION = 16;

/** The sort buffer's page size for a task budget: a 64th of it, 4 KiB to 1 MiB. */
export function sortPageBytes(budgetBytes: number): number {
  return Math.min(1024 * 1024, Math.max(4096, Math.floor(budgetBytes / 64)));
}

export interface ExternalSorterOptions {
  readonly operator: string;
  readonly consumer: MemoryConsumer;
  readonly spill: SpillDirectory;
  /** The job's serializer, for values. */
  readonly values: RecordSerializer;
  /** The default serializer, for keys (it keeps -0, NaN and ±Infinity). */
  readonly keys: RecordSerializer;
  readonly descending: boolean;
  /** @defaultValue sortPageBytes(the task's budget) */
  readonly pageBytes?: number;
}

/**
 * Sorts (key, value) records by key (compareKeys, or its reverse), stable: equal keys keep their arrival
 * order. Values are kept serialized, length-prefixed, in fixed-size pages (a PagePool: taken as the
 * buffer fills, reused by the next run once it spilled — no arena doubling past what is reserved, no
 * dropped buffers waiting for a GC; a value larger than a page gets a page of its own size, not kept)
 * and counted against the operator's MemoryConsumer
 * (serialized key + value + SORT_RECORD_OVERHEAD_BYTES each); when a reservation is refused the buffer is
 * sorted and written as a run to the task's spill directory, and the memory released — once it holds at
 * least a sixteenth of the budget (MIN_RUN_FRACTION; below, the reservation is forced). `sorted()` then
 * yields the values in order: from memory when nothing spilled, else by a k-way merge of the runs (the
 * rest of the buffer spilled as the last run; more than the fan-in — the budget over two 32 KiB read
 * buffers, 2 to MAX_MERGE_FAN_IN — merged in passes first). `close()` removes every run file.
 */
export class ExternalSorter {
  readonly #o: ExternalSorterOptions;
  /**
   * The buffer's records: `#records` of them. The key array, the positions and the sort's index arrays keep
   * their capacity from one run to the next (a run's arrays dropped would be large-object garbage until a
   * full GC, one set per run); the stale keys past `#records` are overwritten by the next run.
   */
  #records = 0;
  /**
   * Byte keys: while every key of the buffer is a well-formed string (the common case), keys are kept
   * only as UTF-8 in `#keyArena` (offsets and lengths in typed arrays) and compared as bytes
   * (compareUtf8AsUtf16, the order of JS strings): no JS string per buffered record, which would live in
   * the old generation until a full GC after its run spilled. The first other key turns the buffer's keys
   * into JS values (`#keys`) until the next run.
   */
  #byteKeys = true;
  #keyArena = Buffer.allocUnsafe(0);
  #keyUsed = 0;
  #keyOffsets = new Float64Array(0);
  #keyLengths = new Uint32Array(0);
  /** The last key `#byteKeyOf` encoded. */
  #keyScratch = Buffer.allocUnsafe(256);
  /** A byte key framed as the default serializer's string, for a run file. */
  #runKey = Buffer.allocUnsafe(256);
  #keys: KeyValue[] = [];
  /** Each record's position: page index × pageBytes + offset of its length prefix. */
  #starts = new Float64Array(0);
  #order = new Uint32Array(0);
  #scratch = new Uint32Array(0);
  readonly #pool: PagePool;
  #pages: Buffer[] = [];
  /** Bytes used of the last page. */
  #used = 0;
  #allStrings = true;
  #allNumbers = true;
  #runs: SpillRun[] = [];
  /** Runs written so far (merge passes included). */
  runsSpilled = 0;
  bytesSpilled = 0;

  constructor(options: ExternalSorterOptions) {
    this.#o = options;
    this.#pool = new PagePool(options.pageBytes ?? sortPageBytes(options.consumer.manager.budgetBytes));
  }

  get size(): number {
    return this.#records;
  }

  /** Pages the buffer allocated so far, and their size: reused run after run, they stay within the budget. */
  get pages(): { readonly allocated: number; readonly pageBytes: number } {
    return { allocated: this.#pool.allocated, pageBytes: this.#pool.pageBytes };
  }

  add(key: KeyValue, value: unknown): void {
    const o = this.#o;
    const utf8 = this.#byteKeys ? this.#byteKeyOf(key) : -1;
    const keyBytes = utf8 >= 0 ? utf8 + stringHeaderBytes(utf8) : o.keys.serialize(key).length;
    const bytes = o.values.serialize(value);
    const cost = keyBytes + bytes.length + SORT_RECORD_OVERHEAD_BYTES;
    o.consumer.checkRecordSize(cost);
    if (!o.consumer.tryReserve(cost)) {
      // a run is at least a sixteenth of the budget: below it the task's other consumers hold the budget,
      // and spilling would write a run per record; the overshoot is bounded by that sixteenth
      if (this.#records > 0 && o.consumer.reservedBytes >= o.consumer.manager.budgetBytes / MIN_RUN_FRACTION) {
        // `bytes` is a view into the serializer's scratch buffer: copy it before spilling reuses that
        const kept = Uint8Array.from(bytes);
        this.#spill();
        if (!o.consumer.tryReserve(cost)) o.consumer.forceReserve(cost);
        this.#append(key, kept, utf8);
        return;
      }
      o.consumer.forceReserve(cost);
    }
    this.#append(key, bytes, utf8);
  }

  /** The values in key order. Runs are read (and removed) as it goes; call once. */
  *sorted(): Generator<unknown, void, undefined> {
    const o = this.#o;
    if (this.#runs.length === 0) {
      const order = this.#sortedOrder();
      const n = this.#records;
      for (let j = 0; j < n; j++) yield o.values.deserialize(this.#value(order[j] as number));
      this.#reset();
      return;
    }
    if (this.#records > 0) this.#spill();
    // the merge reads the runs through its own buffers: the idle pages and arrays would only be uncounted memory now
    this.#reset();
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
    for (const run of this.#runs) this.#o.spill.remove(run.path);
    this.#runs = [];
  }

  /** `utf8`: the byte length of `key` encoded in `#keyScratch`, or -1 (not encoded). */
  #append(key: KeyValue, bytes: Uint8Array, utf8: number): void {
    if (typeof key !== 'string') this.#allStrings = false;
    if (typeof key !== 'number') this.#allNumbers = false;
    const i = this.#records;
    if (i === this.#starts.length) this.#grow();
    if (this.#byteKeys) {
      // a spill since `add` made the buffer byte-keyed again: `key` may not have been encoded for it
      if (utf8 < 0) utf8 = this.#byteKeyOf(key);
      if (utf8 < 0) this.#toJsKeys();
    }
    if (this.#byteKeys) {
      if (this.#keyUsed + utf8 > this.#keyArena.length) {
        const grown = Buffer.allocUnsafe(Math.max(4096, this.#keyArena.length * 2, this.#keyUsed + utf8));
        this.#keyArena.copy(grown, 0, 0, this.#keyUsed);
        this.#keyArena = grown;
      }
      this.#keyScratch.copy(this.#keyArena, this.#keyUsed, 0, utf8);
      this.#keyOffsets[i] = this.#keyUsed;
      this.#keyLengths[i] = utf8;
      this.#keyUsed += utf8;
    } else {
      this.#keys[i] = key;
    }
    const need = bytes.length + 4;
    let page = this.#pages[this.#pages.length - 1];
    if (page === undefined || this.#used + need > page.length) {
      page = this.#pool.take(need);
      this.#pages.push(page);
      this.#used = 0;
    }
    page.writeUInt32LE(bytes.length, this.#used);
    page.set(bytes, this.#used + 4);
    (this.#starts as Float64Array)[i] = (this.#pages.length - 1) * this.#pool.pageBytes + this.#used;
    this.#records = i + 1;
    this.#used += need;
  }

  /** Doubles the positions' and the sort's index arrays (the key array grows by itself). */
  #grow(): void {
    const capacity = Math.max(1024, this.#starts.length * 2);
    const starts = new Float64Array(capacity);
    starts.set(this.#starts);
    this.#starts = starts;
    this.#order = new Uint32Array(capacity);
    this.#scratch = new Uint32Array(capacity);
    const offsets = new Float64Array(capacity);
    offsets.set(this.#keyOffsets);
    this.#keyOffsets = offsets;
    const lengths = new Uint32Array(capacity);
    lengths.set(this.#keyLengths);
    this.#keyLengths = lengths;
  }

  /**
   * Encodes `key` as UTF-8 into `#keyScratch` and returns its byte length — or -1 when it is not a
   * well-formed string (a byte key cannot stand for it).
   */
  #byteKeyOf(key: KeyValue): number {
    if (typeof key !== 'string') return -1;
    const length = key.length;
    if (this.#keyScratch.length < length * 3) this.#keyScratch = Buffer.allocUnsafe(length * 3);
    const scratch = this.#keyScratch;
    for (let i = 0; i < length; i++) {
      const c = key.charCodeAt(i);
      if (c >= 0x80) {
        if (!(key as unknown as { isWellFormed(): boolean }).isWellFormed()) return -1;
        return scratch.write(key, 0, 'utf8');
      }
      scratch[i] = c;
    }
    return length;
  }

  /** Turns the buffer's byte keys into JS strings: from now until the next run its keys are JS values. */
  #toJsKeys(): void {
    for (let i = 0; i < this.#records; i++) {
      const offset = this.#keyOffsets[i] as number;
      this.#keys[i] = this.#keyArena.toString('utf8', offset, offset + (this.#keyLengths[i] as number));
    }
    this.#byteKeys = false;
  }

  /** Record `i`'s byte key framed as the default serializer frames a string (a view into `#runKey`). */
  #runKeyOf(i: number): Uint8Array {
    const length = this.#keyLengths[i] as number;
    const offset = this.#keyOffsets[i] as number;
    if (this.#runKey.length < length + 6) this.#runKey = Buffer.allocUnsafe(length * 2 + 6);
    const out = this.#runKey;
    let p = 0;
    if (length < 64) {
      out[p++] = T_SHORT_STRING | length;
    } else {
      out[p++] = T_STRING;
      let n = length;
      while (n >= 0x80) {
        out[p++] = (n & 0x7f) | 0x80;
        n = Math.floor(n / 128);
      }
      out[p++] = n;
    }
    this.#keyArena.copy(out, p, offset, offset + length);
    return out.subarray(0, p + length);
  }

  /** Record `i`'s serialized value: a view into its page. */
  #value(i: number): Uint8Array {
    const start = this.#starts[i] as number;
    const pageBytes = this.#pool.pageBytes;
    const index = Math.floor(start / pageBytes);
    const page = this.#pages[index] as Buffer;
    const offset = start - index * pageBytes;
    return page.subarray(offset + 4, offset + 4 + page.readUInt32LE(offset));
  }

  /**
   * Today's in-memory order of the `#records` records: by key (fast paths for all-string and all-number
   * keys), ties by arrival. The first `#records` entries of the returned array.
   */
  #sortedOrder(): Uint32Array {
    const keys = this.#keys;
    const n = this.#records;
    const order = this.#order;
    for (let i = 0; i < n; i++) order[i] = i;
    const sign = this.#o.descending ? -1 : 1;
    let compare: (a: number, b: number) => number;
    if (this.#byteKeys) {
      const arena = this.#keyArena;
      const offsets = this.#keyOffsets;
      const lengths = this.#keyLengths;
      compare = (a, b) => sign * compareUtf8AsUtf16(arena, offsets[a] as number, lengths[a] as number, offsets[b] as number, lengths[b] as number) || a - b;
    } else if (this.#allStrings) {
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
    return sortIndices(order, this.#scratch, n, compare);
  }

  #spill(): void {
    const o = this.#o;
    const order = this.#sortedOrder();
    const n = this.#records;
    const path = o.spill.newFile(o.operator);
    const writer = new SpillRunWriter(path, o.operator);
    try {
      const keys = this.#keys;
      for (let j = 0; j < n; j++) {
        const i = order[j] as number;
        writer.write(this.#byteKeys ? this.#runKeyOf(i) : o.keys.serialize(keys[i] as KeyValue), this.#value(i));
      }
      const run = writer.finish();
      this.#runs.push(run);
      this.#count(run);
    } catch (error) {
      writer.abort();
      o.spill.remove(path);
      throw error;
    }
    // the pages go back to the pool (they held at most the budget): the next run fills them, nothing to collect
    this.#reset(true);
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

  /** Empties the buffer; `keep`: its pages and arrays stay for the next run, else they are dropped. */
  #reset(keep = false): void {
    this.#o.consumer.releaseAll();
    this.#records = 0;
    this.#used = 0;
    this.#byteKeys = true;
    this.#keyUsed = 0;
    if (keep) {
      for (const page of this.#pages) this.#pool.give(page);
    } else {
      this.#pool.clear();
      this.#keys = [];
      this.#keyArena = Buffer.allocUnsafe(0);
      this.#keyOffsets = new Float64Array(0);
      this.#keyLengths = new Uint32Array(0);
      this.#starts = new Float64Array(0);
      this.#order = new Uint32Array(0);
      this.#scratch = new Uint32Array(0);
    }
    this.#pages = [];
    this.#allStrings = true;
    this.#allNumbers = true;
  }
}
