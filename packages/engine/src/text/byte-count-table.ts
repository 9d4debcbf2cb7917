import { sortIndices } from '../memory/sort-indices.js';
import { compareUtf8AsUtf16 } from './utf8-order.js';

const EMPTY = -1;
const INITIAL_SLOTS = 1 << 12;
const INITIAL_ARENA_BYTES = 1 << 16;

/**
 * Counts per byte string (a word's UTF-8 bytes) in an open-addressing hash table (linear probing, at most
 * half full) whose keys live in one byte arena: per distinct key it keeps an offset, a length, a hash and
 * a count in typed arrays — no JS string or object per key. Strings are made only by `entries()`, for the
 * output. `size` is the number of distinct keys; the owner bounds it (a combiner emits and `clear()`s).
 *
 * Not in the contract: iteration order (insertion order, but callers must not rely on it), and any limit
 * of its own — it grows until its owner clears it.
 */
export class ByteCountTable {
  #slots = new Int32Array(INITIAL_SLOTS * 4).fill(EMPTY);
  #mask = INITIAL_SLOTS - 1;
  #hashes = new Int32Array(INITIAL_SLOTS / 2);
  #offsets = new Int32Array(INITIAL_SLOTS / 2);
  #lengths = new Int32Array(INITIAL_SLOTS / 2);
  #counts = new Float64Array(INITIAL_SLOTS / 2);
  #arena = Buffer.allocUnsafe(INITIAL_ARENA_BYTES);
  #arenaUsed = 0;
  #size = 0;
  /**
   * sortedOrder's index and scratch arrays, at the entries' capacity, kept (and counted in
   * allocatedBytes): from the start in a `sortable` table, else made by the first sortedOrder.
   */
  #order = new Uint32Array(0);
  #scratch = new Uint32Array(0);
  readonly #sortable: boolean;

  /**
   * `sortable`: the owner will call sortedOrder (a table that spills): its index arrays then grow with
   * the entries and count in `grownBytes` before the first sort, rather than appear at it, past what
   * the owner reserved. @defaultValue false
   */
  constructor(options: { readonly sortable?: boolean } = {}) {
    this.#sortable = options.sortable ?? false;
    if (this.#sortable) this.#makeOrder(INITIAL_SLOTS / 2);
  }

  #makeOrder(capacity: number): void {
    this.#order = new Uint32Array(capacity);
    this.#scratch = new Uint32Array(capacity);
  }

  get size(): number {
    return this.#size;
  }

  /** Bytes of keys held (the arena's used part). */
  get keyBytes(): number {
    return this.#arenaUsed;
  }

  /**
   * Adds `count` to the key `bytes[start, end)`, whose hash (any well-mixed 32-bit value, the same for the
   * same bytes: `hashBytes`) the caller computed while scanning it.
   */
  add(bytes: Uint8Array, start: number, end: number, hash: number, count = 1): void {
    const length = end - start;
    // a slot is [hash, entry, offset, length]: a probe reads one slot and the arena, nothing else
    const slots = this.#slots;
    const wrap = (this.#mask << 2) | 3;
    let slot = (hash & this.#mask) << 2;
    for (;;) {
      const entry = slots[slot + 1] as number;
      if (entry === EMPTY) break;
      if (slots[slot] === hash && slots[slot + 3] === length) {
        const arena = this.#arena;
        let offset = slots[slot + 2] as number;
        let i = start;
        while (i < end && arena[offset] === bytes[i]) {
          i++;
          offset++;
        }
        if (i === end) {
          (this.#counts[entry] as number) += count;
          return;
        }
      }
      slot = (slot + 4) & wrap;
    }
    this.#insert(slot, bytes, start, length, hash, count);
  }

  /** Whether the key `bytes[start, end)` (hash as for `add`) is in the table. */
  has(bytes: Uint8Array, start: number, end: number, hash: number): boolean {
    const length = end - start;
    const slots = this.#slots;
    const wrap = (this.#mask << 2) | 3;
    let slot = (hash & this.#mask) << 2;
    for (;;) {
      if (slots[slot + 1] === EMPTY) return false;
      if (slots[slot] === hash && slots[slot + 3] === length) {
        const arena = this.#arena;
        let offset = slots[slot + 2] as number;
        let i = start;
        while (i < end && arena[offset] === bytes[i]) {
          i++;
          offset++;
        }
        if (i === end) return true;
      }
      slot = (slot + 4) & wrap;
    }
  }

  /** The keys as strings (UTF-8 decoded) with their counts. */
  *entries(): IterableIterator<[string, number]> {
    const arena = this.#arena;
    for (let e = 0; e < this.#size; e++) {
      const offset = this.#offsets[e] as number;
      yield [arena.toString('utf8', offset, offset + (this.#lengths[e] as number)), this.#counts[e] as number];
    }
  }

  /** Entry `e`'s key bytes (a view into the arena, valid until the next `add` or `clear`) — `e` below `size`. */
  keyOf(e: number): Uint8Array {
    const offset = this.#offsets[e] as number;
    return this.#arena.subarray(offset, offset + (this.#lengths[e] as number));
  }

  /** Entry `e`'s count. */
  countOf(e: number): number {
    return this.#counts[e] as number;
  }

  /**
   * The entries in the order of their keys as UTF-16 strings compare (`<`, compareKeys' order for strings),
   * computed on the UTF-8 bytes without decoding them: byte order is code point order, which UTF-16
   * order follows except that U+E000–U+FFFF (lead bytes 0xEE, 0xEF) sort after the supplementary planes
   * (0xF0–0xF4, surrogate pairs in UTF-16) — so those two lead bytes are ranked above them. Sorted by
   * sortIndices through two index arrays the table keeps from its first call on (8 bytes per entry of
   * capacity, in `allocatedBytes` from then on): no work arrays per call. The result is a view into them,
   * valid until the next `sortedOrder`, `add` or `release`.
   */
  sortedOrder(): Uint32Array {
    const n = this.#size;
    if (this.#order.length < n) this.#makeOrder(this.#hashes.length);
    const order = this.#order;
    for (let i = 0; i < n; i++) order[i] = i;
    const arena = this.#arena;
    const offsets = this.#offsets;
    const lengths = this.#lengths;
    return sortIndices(order, this.#scratch, n, (a, b) => compareUtf8AsUtf16(arena, offsets[a] as number, lengths[a] as number, offsets[b] as number, lengths[b] as number)).subarray(0, n);
  }

  /** What a fresh (or released) table allocates: its fixed cost (about 170 KiB). */
  static readonly INITIAL_ALLOCATED_BYTES = INITIAL_SLOTS * 4 * 4 + (INITIAL_SLOTS / 2) * (4 + 4 + 4 + 8) + INITIAL_ARENA_BYTES;

  /** Bytes the table has allocated (probe slots, entry arrays, arena): what it costs in memory, used or not. */
  get allocatedBytes(): number {
    return this.#slots.byteLength + this.#hashes.byteLength + this.#offsets.byteLength + this.#lengths.byteLength + this.#counts.byteLength + this.#arena.length + this.#order.byteLength + this.#scratch.byteLength;
  }

  /** What the table grew to beyond its fixed initial size: what a memory budget counts. */
  get grownBytes(): number {
    return this.allocatedBytes - ByteCountTable.INITIAL_ALLOCATED_BYTES;
  }

  /**
   * The bytes inserting one new key of `length` bytes would add to `allocatedBytes` (0 when it fits):
   * what an owner with a memory budget checks before `add`, to empty the table rather than grow it.
   */
  growthFor(length: number): number {
    let growth = 0;
    if (this.#size === this.#hashes.length) growth += this.#hashes.byteLength + this.#offsets.byteLength + this.#lengths.byteLength + this.#counts.byteLength + this.#order.byteLength + this.#scratch.byteLength;
    if (this.#arenaUsed + length > this.#arena.length) {
      let n = this.#arena.length * 2;
      while (n < this.#arenaUsed + length) n *= 2;
      growth += n - this.#arena.length;
    }
    if ((this.#size + 1) * 2 > this.#mask + 1) growth += this.#slots.byteLength;
    return growth;
  }

  /** Forgets every key and gives back what it grew to (back to its initial size). */
  release(): void {
    this.#slots = new Int32Array(INITIAL_SLOTS * 4).fill(EMPTY);
    this.#mask = INITIAL_SLOTS - 1;
    this.#hashes = new Int32Array(INITIAL_SLOTS / 2);
    this.#offsets = new Int32Array(INITIAL_SLOTS / 2);
    this.#lengths = new Int32Array(INITIAL_SLOTS / 2);
    this.#counts = new Float64Array(INITIAL_SLOTS / 2);
    this.#arena = Buffer.allocUnsafe(INITIAL_ARENA_BYTES);
    this.#arenaUsed = 0;
    this.#size = 0;
    this.#makeOrder(this.#sortable ? INITIAL_SLOTS / 2 : 0);
  }

  /** Forgets every key (keeps the allocated memory for the next round). */
  clear(): void {
    this.#slots.fill(EMPTY);
    this.#size = 0;
    this.#arenaUsed = 0;
  }

  #insert(slot: number, bytes: Uint8Array, start: number, length: number, hash: number, count: number): void {
    const entry = this.#size;
    if (entry === this.#hashes.length) this.#growEntries();
    if (this.#arenaUsed + length > this.#arena.length) this.#growArena(length);
    const offset = this.#arenaUsed;
    const arena = this.#arena;
    for (let i = 0; i < length; i++) arena[offset + i] = bytes[start + i] as number;
    this.#arenaUsed = offset + length;
    this.#hashes[entry] = hash;
    this.#offsets[entry] = offset;
    this.#lengths[entry] = length;
    this.#counts[entry] = count;
    this.#slots[slot] = hash;
    this.#slots[slot + 1] = entry;
    this.#slots[slot + 2] = offset;
    this.#slots[slot + 3] = length;
    this.#size = entry + 1;
    if (this.#size * 2 > this.#mask + 1) this.#rehash();
  }

  #growEntries(): void {
    const n = this.#hashes.length * 2;
    const grow = <A extends Int32Array | Float64Array>(a: A, make: (n: number) => A): A => {
      const b = make(n);
      b.set(a);
      return b;
    };
    this.#hashes = grow(this.#hashes, (k) => new Int32Array(k));
    this.#offsets = grow(this.#offsets, (k) => new Int32Array(k));
    this.#lengths = grow(this.#lengths, (k) => new Int32Array(k));
    this.#counts = grow(this.#counts, (k) => new Float64Array(k));
    if (this.#order.length > 0) this.#makeOrder(n);
  }

  #growArena(needed: number): void {
    let n = this.#arena.length * 2;
    while (n < this.#arenaUsed + needed) n *= 2;
    const grown = Buffer.allocUnsafe(n);
    this.#arena.copy(grown, 0, 0, this.#arenaUsed);
    this.#arena = grown;
  }

  #rehash(): void {
    const n = (this.#mask + 1) * 2;
    const slots = new Int32Array(n * 4).fill(EMPTY);
    const mask = n - 1;
    const wrap = (mask << 2) | 3;
    for (let e = 0; e < this.#size; e++) {
      const hash = this.#hashes[e] as number;
      let slot = (hash & mask) << 2;
      while (slots[slot + 1] !== EMPTY) slot = (slot + 4) & wrap;
      slots[slot] = hash;
      slots[slot + 1] = e;
      slots[slot + 2] = this.#offsets[e] as number;
      slots[slot + 3] = this.#lengths[e] as number;
    }
    this.#slots = slots;
    this.#mask = mask;
  }
}

/** FNV-1a's start value; `hashStep` folds one byte, `hashFinish` mixes (murmur3's fmix32) for the table. */
export const HASH_SEED = 0x811c9dc5 | 0;

export function hashFinish(h: number): number {
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  return h ^ (h >>> 16);
}

/** The hash `ByteCountTable.add` expects for `bytes[start, end)` (what the word scanner computes inline). */
export function hashBytes(bytes: Uint8Array, start: number, end: number): number {
  let h = HASH_SEED;
  for (let i = start; i < end; i++) h = Math.imul(h ^ (bytes[i] as number), 0x01000193);
  return hashFinish(h);
}
