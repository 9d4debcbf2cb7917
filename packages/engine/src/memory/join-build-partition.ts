import type { KeyValue } from '../api/functions.js';
import { KeyedTable } from '../operators/keyed-table.js';
import type { JoinPagePool } from './join-page-pool.js';
import type { MemoryConsumer } from './memory-manager.js';
import { KEYED_ENTRY_OVERHEAD_BYTES } from './spilling-aggregation-table.js';
import type { SpillRunWriter } from './spill-run-writer.js';

/** Bytes of the per-record index: page, offset and next-record (Int32 each) and the matched flag. */
const RECORD_INDEX_BYTES = 13;
const FIRST_CAPACITY = 16;

/**
 * The in-memory part of a hybrid hash join's build side for one hash partition (Flink's
 * MutableHashTable partition): records kept serialized in pages, framed exactly as SpillRunWriter writes
 * them (`varint keyLength, varint valueLength, key, value`), so spilling the partition writes its pages
 * as they are; an index from key (KeyedTable: `[NaN]`, `[null]`, `-0` and `0` stay apart) to its last
 * record, and per record the previous one of the same key. No JS value per record: build values are
 * deserialized when a probe record matches them.
 *
 * Memory: every page (taken from the JoinPagePool, not just filled), the index arrays as they grow, and
 * KEYED_ENTRY_OVERHEAD_BYTES + the serialized key per distinct key (its Map entry and JS key) are
 * reserved through the consumer before they are taken; `tryAdd` adds nothing when refused. `release()`
 * gives all of it back and empties the partition. Matched flags (for the build side of an outer join)
 * are kept on the key's last record.
 */
export class JoinBuildPartition {
  readonly #consumer: MemoryConsumer;
  readonly #pool: JoinPagePool;
  readonly #pageBytes: number;
  readonly #index = new KeyedTable<number>();
  #pages: Buffer[] = [];
  #pageUsed: number[] = [];
  #recordPage = new Int32Array(0);
  #recordOffset = new Int32Array(0);
  #previous = new Int32Array(0);
  #matched = new Uint8Array(0);
  records = 0;
  reservedBytes = 0;

  constructor(options: { readonly consumer: MemoryConsumer; readonly pool: JoinPagePool }) {
    this.#consumer = options.consumer;
    this.#pool = options.pool;
    this.#pageBytes = options.pool.pageBytes;
  }

  /** What adding this record to an empty partition would reserve at least (for WEFT_ERR_RECORD_TOO_LARGE). */
  static recordCost(keyBytes: Uint8Array, valueBytes: Uint8Array): number {
    return frameBytes(keyBytes.length, valueBytes.length) + RECORD_INDEX_BYTES + KEYED_ENTRY_OVERHEAD_BYTES + keyBytes.length;
  }

  /**
   * Adds a record when its memory can be reserved (or, with `force`, anyway: the one record a block of a
   * nested-loop join must hold); false, with nothing added, when refused.
   */
  tryAdd(key: KeyValue, keyBytes: Uint8Array, valueBytes: Uint8Array, force = false): boolean {
    const frame = frameBytes(keyBytes.length, valueBytes.length);
    const last = this.#pages.length - 1;
    const pageRoom = last < 0 ? 0 : (this.#pages[last] as Buffer).length - (this.#pageUsed[last] as number);
    const newPage = frame > pageRoom ? Math.max(this.#pageBytes, frame) : 0;
    const capacity = this.#previous.length;
    const grow = this.records === capacity ? Math.max(FIRST_CAPACITY, capacity * 2) : 0;
    const previous = this.#index.get(key);
    const cost = newPage + (grow - (grow === 0 ? 0 : capacity)) * RECORD_INDEX_BYTES + (previous === undefined ? KEYED_ENTRY_OVERHEAD_BYTES + keyBytes.length : 0);
    if (force) this.#consumer.forceReserve(cost);
    else if (!this.#consumer.tryReserve(cost)) return false;
    this.reservedBytes += cost;
    if (newPage > 0) {
      this.#pages.push(this.#pool.take(newPage));
      this.#pageUsed.push(0);
    }
    if (grow > 0) this.#grow(grow);
    const page = this.#pages.length - 1;
    const buffer = this.#pages[page] as Buffer;
    let at = this.#pageUsed[page] as number;
    const r = this.records++;
    this.#recordPage[r] = page;
    this.#recordOffset[r] = at;
    this.#previous[r] = previous ?? -1;
    at = writeVarint(buffer, at, keyBytes.length);
    at = writeVarint(buffer, at, valueBytes.length);
    buffer.set(keyBytes, at);
    buffer.set(valueBytes, at + keyBytes.length);
    this.#pageUsed[page] = at + keyBytes.length + valueBytes.length;
    this.#index.set(key, r);
    return true;
  }

  /** The last record of `key`, or -1; walk the others with `previous`. Throws a TypeError for a value that is not a key. */
  last(key: unknown): number {
    return this.#index.get(key) ?? -1;
  }

  previous(record: number): number {
    return this.#previous[record] as number;
  }

  /** Record `record`'s serialized value (a view, valid until `release()`). */
  valueAt(record: number): Uint8Array {
    const buffer = this.#pages[this.#recordPage[record] as number] as Buffer;
    let at = this.#recordOffset[record] as number;
    let keyLength = 0;
    for (let shift = 0; ; shift += 7) {
      const b = buffer[at++] as number;
      keyLength += (b & 0x7f) * 2 ** shift;
      if (b < 0x80) break;
    }
    let valueLength = 0;
    for (let shift = 0; ; shift += 7) {
      const b = buffer[at++] as number;
      valueLength += (b & 0x7f) * 2 ** shift;
      if (b < 0x80) break;
    }
    at += keyLength;
    return buffer.subarray(at, at + valueLength);
  }

  /** Marks the key whose last record is `last` as matched by a probe record. */
  markMatched(last: number): void {
    this.#matched[last] = 1;
  }

  /** The records of every key no probe record matched (after the probe side). */
  *unmatched(): Generator<number, void, undefined> {
    for (const [, last] of this.#index.entries()) {
      if (this.#matched[last] === 1) continue;
      for (let r = last; r >= 0; r = this.#previous[r] as number) yield r;
    }
  }

  /** Writes every record to `writer`, as they are. */
  writeTo(writer: SpillRunWriter): void {
    for (let p = 0; p < this.#pages.length; p++) {
      const used = this.#pageUsed[p] as number;
      // records are counted once, with the last page
      writer.writeFramed((this.#pages[p] as Buffer).subarray(0, used), p === this.#pages.length - 1 ? this.records : 0);
    }
  }

  /** Empties the partition and gives its memory back (its pages to the pool). */
  release(): void {
    this.#consumer.release(this.reservedBytes);
    this.reservedBytes = 0;
    this.#index.clear();
    for (const page of this.#pages) this.#pool.give(page);
    this.#pages = [];
    this.#pageUsed = [];
    this.#recordPage = new Int32Array(0);
    this.#recordOffset = new Int32Array(0);
    this.#previous = new Int32Array(0);
    this.#matched = new Uint8Array(0);
    this.records = 0;
  }

  #grow(capacity: number): void {
    const page = new Int32Array(capacity);
    page.set(this.#recordPage);
    this.#recordPage = page;
    const offset = new Int32Array(capacity);
    offset.set(this.#recordOffset);
    this.#recordOffset = offset;
    const previous = new Int32Array(capacity);
    previous.set(this.#previous);
    this.#previous = previous;
    const matched = new Uint8Array(capacity);
    matched.set(this.#matched);
    this.#matched = matched;
  }
}

function frameBytes(keyLength: number, valueLength: number): number {
  return varintBytes(keyLength) + varintBytes(valueLength) + keyLength + valueLength;
}

function varintBytes(n: number): number {
  let width = 1;
  while (n > 0x7f) {
    n = Math.floor(n / 128);
    width++;
  }
  return width;
}

function writeVarint(buffer: Buffer, at: number, n: number): number {
  while (n > 0x7f) {
    buffer[at++] = (n & 0x7f) | 0x80;
    n >>>= 7;
  }
  buffer[at++] = n;
  return at;
}
