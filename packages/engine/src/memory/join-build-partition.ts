import type { PagePool } from './page-pool.js';
import type { MemoryConsumer } from './memory-manager.js';
import type { SpillRunWriter } from './spill-run-writer.js';

/** Bytes of the per-record index: page, offset, previous record and key hash (Int32 each) and the matched flag. */
const RECORD_INDEX_BYTES = 17;
const FIRST_CAPACITY = 16;
const FIRST_SLOTS = 32;

/**
 * The in-memory part of a hybrid hash join's build side for one hash partition (Flink's
 * MutableHashTable partition): records kept serialized in pages, framed exactly as SpillRunWriter writes
 * them (`varint keyLength, varint valueLength, key, value`), so spilling the partition writes its pages
 * as they are; an open-addressing table (typed arrays, load ≤ 1/2) from a key's serialized bytes to its
 * last record, and per record the previous one of the same key. Keys compare by their bytes from the
 * default serializer, which writes equal keys alike and distinct ones differently (`[NaN]`, `[null]`,
 * `-0` and `0` apart; strings with unpaired surrogates are the exception: UTF-8 writes them as U+FFFD).
 * No JS object per record or key: build values are deserialized when a probe record matches them.
 *
 * Memory: every page (taken from the PagePool, not just filled), the index arrays and the slot table
 * as they grow are reserved through the consumer before they are taken; `tryAdd` adds nothing when
 * refused. `release()` gives all of it back and empties the partition. Matched flags (for the build side
 * of an outer join) are kept on the key's last record.
 */
export class JoinBuildPartition {
  readonly #consumer: MemoryConsumer;
  readonly #pool: PagePool;
  readonly #pageBytes: number;
  /** Open addressing: last record + 1 of a key, 0 for an empty slot. */
  #slots = new Int32Array(0);
  #keys = 0;
  #hash = new Int32Array(0);
  #pages: Buffer[] = [];
  #pageUsed: number[] = [];
  #recordPage = new Int32Array(0);
  #recordOffset = new Int32Array(0);
  #previous = new Int32Array(0);
  #matched = new Uint8Array(0);
  records = 0;
  reservedBytes = 0;

  readonly #firstCapacity: number;

  /** `expectedRecords`: how many records it will likely hold (a level below knows), to size its index once instead of doubling it. */
  constructor(options: { readonly consumer: MemoryConsumer; readonly pool: PagePool; readonly expectedRecords?: number }) {
    this.#consumer = options.consumer;
    this.#pool = options.pool;
    this.#pageBytes = options.pool.pageBytes;
    this.#firstCapacity = Math.min(1 << 20, Math.max(FIRST_CAPACITY, Math.ceil((options.expectedRecords ?? 0) * 1.1)));
  }

  /** What adding this record to an empty partition would reserve at least (for WEFT_ERR_RECORD_TOO_LARGE). */
  static recordCost(keyBytes: Uint8Array, valueBytes: Uint8Array): number {
    return frameBytes(keyBytes.length, valueBytes.length) + FIRST_CAPACITY * RECORD_INDEX_BYTES + FIRST_SLOTS * 4;
  }

  /**
   * Adds a record (`hash`: its key's joinKeyHash) when its memory can be reserved (or, with `force`, anyway: the one record a block of a
   * nested-loop join must hold); false, with nothing added, when refused.
   */
  tryAdd(keyBytes: Uint8Array, valueBytes: Uint8Array, hash: number, force = false): boolean {
    const frame = frameBytes(keyBytes.length, valueBytes.length);
    const last = this.#pages.length - 1;
    const pageRoom = last < 0 ? 0 : (this.#pages[last] as Buffer).length - (this.#pageUsed[last] as number);
    const newPage = frame > pageRoom ? Math.max(this.#pageBytes, frame) : 0;
    const capacity = this.#previous.length;
    const grow = this.records === capacity ? Math.max(this.#firstCapacity, capacity * 2) : 0;
    const slot = this.#find(keyBytes, hash);
    const previous = slot < 0 ? -1 : (this.#slots[slot] as number) - 1;
    const slots = this.#slots.length;
    const rehash = previous < 0 && (this.#keys + 1) * 2 > slots ? Math.max(FIRST_SLOTS, slots === 0 ? nextPowerOfTwo(2 * this.#firstCapacity) : slots * 2) : 0;
    const cost = newPage + (grow === 0 ? 0 : grow - capacity) * RECORD_INDEX_BYTES + (rehash === 0 ? 0 : rehash - slots) * 4;
    if (force) this.#consumer.forceReserve(cost);
    else if (cost > 0 && !this.#consumer.tryReserve(cost)) return false;
    this.reservedBytes += cost;
    if (newPage > 0) {
      this.#pages.push(this.#pool.take(newPage));
      this.#pageUsed.push(0);
    }
    if (grow > 0) this.#grow(grow);
    if (rehash > 0) this.#rehash(rehash);
    const page = this.#pages.length - 1;
    const buffer = this.#pages[page] as Buffer;
    let at = this.#pageUsed[page] as number;
    const r = this.records++;
    this.#recordPage[r] = page;
    this.#recordOffset[r] = at;
    this.#previous[r] = previous;
    this.#hash[r] = hash;
    at = writeVarint(buffer, at, keyBytes.length);
    at = writeVarint(buffer, at, valueBytes.length);
    buffer.set(keyBytes, at);
    buffer.set(valueBytes, at + keyBytes.length);
    this.#pageUsed[page] = at + keyBytes.length + valueBytes.length;
    if (previous >= 0 && rehash === 0) this.#slots[slot] = r + 1;
    else this.#insert(hash, r);
    if (previous < 0) this.#keys++;
    return true;
  }

  /** The last record of the key serialized as `keyBytes` (its joinKeyHash `hash`), or -1; walk the others with `previous`. */
  last(keyBytes: Uint8Array, hash: number): number {
    const slot = this.#find(keyBytes, hash);
    return slot < 0 ? -1 : (this.#slots[slot] as number) - 1;
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
    const slots = this.#slots;
    for (let i = 0; i < slots.length; i++) {
      const last = (slots[i] as number) - 1;
      if (last < 0 || this.#matched[last] === 1) continue;
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
    this.#slots = new Int32Array(0);
    this.#keys = 0;
    this.#hash = new Int32Array(0);
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
    this.#recordPage = grown(this.#recordPage, new Int32Array(capacity));
    this.#recordOffset = grown(this.#recordOffset, new Int32Array(capacity));
    this.#previous = grown(this.#previous, new Int32Array(capacity));
    this.#matched = grown(this.#matched, new Uint8Array(capacity));
    this.#hash = grown(this.#hash, new Int32Array(capacity));
  }

  /** The slot holding the key serialized as `keyBytes` (hash `hash`), or -1. */
  #find(keyBytes: Uint8Array, hash: number): number {
    const slots = this.#slots;
    if (slots.length === 0) return -1;
    const mask = slots.length - 1;
    for (let i = hash & mask; ; i = (i + 1) & mask) {
      const r = (slots[i] as number) - 1;
      if (r < 0) return -1;
      if (this.#hash[r] === hash && this.#keyEquals(r, keyBytes)) return i;
    }
  }

  #insert(hash: number, record: number): void {
    const slots = this.#slots;
    const mask = slots.length - 1;
    let i = hash & mask;
    while (slots[i] !== 0) i = (i + 1) & mask;
    slots[i] = record + 1;
  }

  #rehash(size: number): void {
    const old = this.#slots;
    this.#slots = new Int32Array(size);
    for (let i = 0; i < old.length; i++) {
      const r = (old[i] as number) - 1;
      if (r >= 0) this.#insert(this.#hash[r] as number, r);
    }
  }

  #keyEquals(record: number, keyBytes: Uint8Array): boolean {
    const buffer = this.#pages[this.#recordPage[record] as number] as Buffer;
    let at = this.#recordOffset[record] as number;
    let keyLength = 0;
    for (let shift = 0; ; shift += 7) {
      const b = buffer[at++] as number;
      keyLength += (b & 0x7f) * 2 ** shift;
      if (b < 0x80) break;
    }
    if (keyLength !== keyBytes.length) return false;
    while ((buffer[at++] as number) >= 0x80); // the value's length
    for (let i = 0; i < keyLength; i++) if (buffer[at + i] !== keyBytes[i]) return false;
    return true;
  }
}

function nextPowerOfTwo(n: number): number {
  let p = 1;
  while (p < n) p *= 2;
  return p;
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

/** `into` (a larger, zeroed array) holding `from`'s values at its start. */
function grown<T extends Int32Array | Uint8Array>(from: T, into: T): T {
  into.set(from);
  return into;
}
