import type { BlobReader } from '../storage/blob-store.js';
import { readAhead } from '../storage/read-ahead.js';
import { writeU32, writeU64 } from './block-codec.js';
import { crc32c, crc32cCombine } from './checksum.js';
import { type IndexLocation, PartitionIndexBuilder } from './partition-index.js';

/** Bytes of one read of the spill while the merged object is streamed out. */
export const MERGE_READ_BYTES = 1024 * 1024;

/**
 * What a writer learns of each subpartition while it spills regions, so that the merged object's index
 * can be made without reading the blocks again: the subpartition's bytes, and the CRC32C of its blocks'
 * CRCs (u32 LE, in order) — an index entry's checksum is CRC32C(offset, length, block CRCs), and the
 * offset is known only at the end, so the two parts are joined with `crc32cCombine`.
 */
export class SubpartitionChecksums {
  private readonly bytes: Float64Array;
  private readonly crcOfCrcs: Uint32Array;
  private readonly crcBytes: Float64Array;
  private readonly word = new Uint8Array(4);

  constructor(readonly numberOfSubpartitions: number) {
    this.bytes = new Float64Array(numberOfSubpartitions);
    this.crcOfCrcs = new Uint32Array(numberOfSubpartitions);
    this.crcBytes = new Float64Array(numberOfSubpartitions);
  }

  /** Adds one block of subpartition `s`: its encoded length (header included) and its CRC. */
  addBlock(s: number, encodedBytes: number, blockCrc: number): void {
    writeU32(this.word, 0, blockCrc);
    this.crcOfCrcs[s] = crc32c(this.word, this.crcOfCrcs[s]!);
    this.crcBytes[s]! += 4;
    this.bytes[s]! += encodedBytes;
  }

  subpartitionBytes(s: number): number {
    return this.bytes[s]!;
  }

  /** The checksum of subpartition `s`'s index entry once its blocks lie at `offset`. */
  entryChecksum(s: number, offset: number): number {
    const head = new Uint8Array(12);
    writeU64(head, 0, offset);
    writeU32(head, 8, this.bytes[s]!);
    return crc32cCombine(crc32c(head), this.crcOfCrcs[s]!, this.crcBytes[s]!);
  }
}

/** One subpartition's blocks of one region, in the spill. */
interface Segment {
  readonly spillOffset: number;
  readonly length: number;
  /** Where it goes in the merged object. */
  readonly offset: number;
}

/**
 * The final merge of sort-merge (Celeborn's, and Flink's file merge): the spill holds regions, each with
 * every subpartition's blocks; the merged object holds, subpartition after subpartition, its blocks from
 * every region — one region in index terms, so a consumer reads its subpartition as one contiguous range.
 * Then the index (one entry per subpartition) and the footer. Blocks are copied as they are (their CRCs
 * stay valid); index entry checksums come from SubpartitionChecksums.
 */
export class MergedLayout {
  readonly length: number;
  readonly location: IndexLocation;
  /** Data bytes (blocks with their headers). */
  readonly dataBytes: number;
  private readonly segments: Segment[] = [];
  private readonly tail: Uint8Array;

  constructor(spillIndex: PartitionIndexBuilder, checksums: SubpartitionChecksums) {
    const n = spillIndex.numberOfSubpartitions;
    const index = new PartitionIndexBuilder(n);
    const entries = [];
    let offset = 0;
    for (let s = 0; s < n; s++) {
      const start = offset;
      for (let region = 0; region < spillIndex.numberOfRegions; region++) {
        const entry = spillIndex.entry(region, s);
        if (entry.length === 0) continue;
        this.segments.push({ spillOffset: entry.offset, length: entry.length, offset });
        offset += entry.length;
      }
      entries.push({ offset: start, length: offset - start, checksum: checksums.entryChecksum(s, start) });
    }
    index.addRegion(entries);
    const encoded = index.encode(offset);
    this.dataBytes = offset;
    this.tail = encoded.index;
    this.location = encoded.location;
    this.length = offset + encoded.index.length;
  }

  /**
   * Bytes [start, end) of the merged object, read from the spill in pieces of MERGE_READ_BYTES (one read
   * ahead). Throws once `cancelled()` says so, which fails the upload reading it.
   */
  async *body(spill: BlobReader, start: number, end: number, cancelled: () => boolean = () => false): AsyncGenerator<Uint8Array> {
    for await (const bytes of readAhead(spill, this.reads(start, Math.min(end, this.dataBytes)))) {
      if (cancelled()) throw new Error('the upload of the merged object was cancelled: its writer was aborted');
      yield bytes;
    }
    if (end > this.dataBytes) yield this.tail.subarray(Math.max(0, start - this.dataBytes), end - this.dataBytes);
  }

  /** The spill reads that produce merged bytes [start, end) of the data part, in order. */
  private *reads(start: number, end: number): Generator<{ offset: number; length: number }> {
    for (const segment of this.segments) {
      const from = Math.max(start, segment.offset);
      const to = Math.min(end, segment.offset + segment.length);
      for (let at = from; at < to; at += MERGE_READ_BYTES) {
        yield { offset: segment.spillOffset + (at - segment.offset), length: Math.min(MERGE_READ_BYTES, to - at) };
      }
    }
  }
}
