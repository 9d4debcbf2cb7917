import { crc32c } from './checksum.js';
import { readU32, readU64, writeU32, writeU64 } from './block-codec.js';

/**
 * The index of a sort-merge partition data object, written after the last region: for every
 * subpartition (major) and region (minor) one 16-byte entry, so the entries of a subpartition range are
 * one contiguous ranged read.
 *
 * Index header (32 bytes): magic `WEFTIDX1`, numberOfSubpartitions u32, numberOfRegions u32,
 * entryBytes u32 (16), 8 reserved bytes, CRC32C of the first 28 bytes.
 *
 * Entry (16 bytes): offset u64 of the subpartition's first block in that region, length u32 of its
 * blocks, checksum u32 = CRC32C over the entry's first 12 bytes followed by the CRC32C of each block
 * (u32 LE, in order). An empty subpartition has length 0 and checksum CRC32C(offset, 0).
 *
 * Footer (48 bytes, the object's last): magic `WEFTSMF1`, version u32 (1), numberOfSubpartitions u32,
 * numberOfRegions u32, 4 reserved, indexOffset u64, indexLength u64, 4 reserved, CRC32C of the first 44.
 */
export const INDEX_HEADER_BYTES = 32;
export const INDEX_ENTRY_BYTES = 16;
export const FOOTER_BYTES = 48;
export const FORMAT_VERSION = 1;
const INDEX_MAGIC = 'WEFTIDX1';
const FOOTER_MAGIC = 'WEFTSMF1';

export interface IndexEntry {
  readonly offset: number;
  readonly length: number;
  readonly checksum: number;
}

/** Where an object's index lies, as the footer (and the commit record) say. */
export interface IndexLocation {
  readonly numberOfSubpartitions: number;
  readonly numberOfRegions: number;
  readonly indexOffset: number;
  readonly indexLength: number;
}

/** Computes an entry's checksum from its offset, length and its blocks' CRCs. */
export function entryChecksum(offset: number, length: number, blockChecksums: Uint32Array | readonly number[], count = blockChecksums.length): number {
  const head = new Uint8Array(12 + 4 * count);
  writeU64(head, 0, offset);
  writeU32(head, 8, length);
  for (let i = 0; i < count; i++) writeU32(head, 12 + 4 * i, blockChecksums[i]!);
  return crc32c(head);
}

/** Collects one entry per (region, subpartition) while regions are written; encodes index and footer. */
export class PartitionIndexBuilder {
  private readonly regions: Uint8Array[] = [];

  constructor(readonly numberOfSubpartitions: number) {}

  get numberOfRegions(): number {
    return this.regions.length;
  }

  /** Bytes the builder holds (its share of the writer's memory). */
  get bufferedBytes(): number {
    return this.regions.length * this.numberOfSubpartitions * INDEX_ENTRY_BYTES;
  }

  /** Adds a region: `entries[s]` for every subpartition s. */
  addRegion(entries: readonly IndexEntry[]): void {
    if (entries.length !== this.numberOfSubpartitions) throw new Error(`region with ${entries.length} entries, expected ${this.numberOfSubpartitions}`);
    const bytes = new Uint8Array(this.numberOfSubpartitions * INDEX_ENTRY_BYTES);
    entries.forEach((entry, s) => writeEntry(bytes, s * INDEX_ENTRY_BYTES, entry));
    this.regions.push(bytes);
  }

  /** The entry of subpartition `s` in `region`. */
  entry(region: number, s: number): IndexEntry {
    const bytes = this.regions[region]!;
    const at = s * INDEX_ENTRY_BYTES;
    return { offset: readU64(bytes, at), length: readU32(bytes, at + 8), checksum: readU32(bytes, at + 12) };
  }

  /** The index (header + subpartition-major entries) followed by the footer, for an index at `indexOffset`. */
  encode(indexOffset: number): { readonly index: Uint8Array; readonly location: IndexLocation } {
    const n = this.numberOfSubpartitions;
    const r = this.regions.length;
    const indexLength = INDEX_HEADER_BYTES + n * r * INDEX_ENTRY_BYTES;
    const out = new Uint8Array(indexLength + FOOTER_BYTES);
    writeAscii(out, 0, INDEX_MAGIC);
    writeU32(out, 8, n);
    writeU32(out, 12, r);
    writeU32(out, 16, INDEX_ENTRY_BYTES);
    writeU32(out, 28, crc32c(out.subarray(0, 28)));
    for (let s = 0; s < n; s++) {
      for (let region = 0; region < r; region++) {
        const from = s * INDEX_ENTRY_BYTES;
        out.set(this.regions[region]!.subarray(from, from + INDEX_ENTRY_BYTES), INDEX_HEADER_BYTES + (s * r + region) * INDEX_ENTRY_BYTES);
      }
    }
    const location: IndexLocation = { numberOfSubpartitions: n, numberOfRegions: r, indexOffset, indexLength };
    out.set(encodeFooter(location), indexLength);
    return { index: out, location };
  }
}

function writeEntry(out: Uint8Array, at: number, entry: IndexEntry): void {
  writeU64(out, at, entry.offset);
  writeU32(out, at + 8, entry.length);
  writeU32(out, at + 12, entry.checksum);
}

export function encodeFooter(location: IndexLocation): Uint8Array {
  const out = new Uint8Array(FOOTER_BYTES);
  writeAscii(out, 0, FOOTER_MAGIC);
  writeU32(out, 8, FORMAT_VERSION);
  writeU32(out, 12, location.numberOfSubpartitions);
  writeU32(out, 16, location.numberOfRegions);
  writeU64(out, 24, location.indexOffset);
  writeU64(out, 32, location.indexLength);
  writeU32(out, 44, crc32c(out.subarray(0, 44)));
  return out;
}

/** Decodes a footer; returns undefined when it is not one (bad magic, version or checksum). */
export function decodeFooter(bytes: Uint8Array): IndexLocation | undefined {
  if (bytes.length !== FOOTER_BYTES || readAscii(bytes, 0, 8) !== FOOTER_MAGIC) return undefined;
  if (readU32(bytes, 44) !== crc32c(bytes.subarray(0, 44)) || readU32(bytes, 8) !== FORMAT_VERSION) return undefined;
  return {
    numberOfSubpartitions: readU32(bytes, 12),
    numberOfRegions: readU32(bytes, 16),
    indexOffset: readU64(bytes, 24),
    indexLength: readU64(bytes, 32),
  };
}

/** Checks an index header against what the caller expects; returns a problem, or undefined when it is sound. */
export function checkIndexHeader(bytes: Uint8Array, location: IndexLocation): string | undefined {
  if (bytes.length < INDEX_HEADER_BYTES || readAscii(bytes, 0, 8) !== INDEX_MAGIC) return 'bad index magic';
  if (readU32(bytes, 28) !== crc32c(bytes.subarray(0, 28))) return 'index header checksum mismatch';
  if (readU32(bytes, 8) !== location.numberOfSubpartitions || readU32(bytes, 12) !== location.numberOfRegions) {
    return 'index header does not match the commit record';
  }
  return undefined;
}

/** The byte range of the index entries of subpartitions [start, end] (inclusive). */
export function indexEntriesRange(location: IndexLocation, start: number, end: number): { readonly offset: number; readonly length: number } {
  const perSubpartition = location.numberOfRegions * INDEX_ENTRY_BYTES;
  return {
    offset: location.indexOffset + INDEX_HEADER_BYTES + start * perSubpartition,
    length: (end - start + 1) * perSubpartition,
  };
}

/** Decodes entries read with `indexEntriesRange`: `result[s - start][region]`. */
export function decodeIndexEntries(bytes: Uint8Array, location: IndexLocation, start: number, end: number): IndexEntry[][] {
  const r = location.numberOfRegions;
  const out: IndexEntry[][] = [];
  for (let s = 0; s <= end - start; s++) {
    const row: IndexEntry[] = [];
    for (let region = 0; region < r; region++) {
      const at = (s * r + region) * INDEX_ENTRY_BYTES;
      row.push({ offset: readU64(bytes, at), length: readU32(bytes, at + 8), checksum: readU32(bytes, at + 12) });
    }
    out.push(row);
  }
  return out;
}

function writeAscii(out: Uint8Array, at: number, text: string): void {
  for (let i = 0; i < text.length; i++) out[at + i] = text.charCodeAt(i);
}

function readAscii(bytes: Uint8Array, at: number, length: number): string {
  return String.fromCharCode(...bytes.subarray(at, at + length));
}
