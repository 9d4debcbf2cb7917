import { strict as assert } from 'node:assert';
import { randomFillSync } from 'node:crypto';
import { describe, it } from 'node:test';
import { RecordDeframer, RecordFramer, ShuffleError, decodeEvent, encodeEvent, isShuffleError } from '@weft/shuffle-api';
import {
  BLOCK_KIND_DATA,
  BLOCK_KIND_EVENT,
  FOOTER_BYTES,
  PartitionFileWriter,
  type Region,
  type RegionEntry,
  SubpartitionRangeReader,
  decodeFooter,
} from '@weft/shuffle-remote';
import { rawBlockChecksum } from '../src/format/block-codec.js';
import { crc32c, crc32cCombine } from '../src/format/checksum.js';
import { SortBuffer } from '../src/shuffle-core/sort-buffer.js';
import { ChecksumWorker } from '../src/format/checksum-worker.js';
import { MemoryBlob } from './helpers/memory-blob.js';

const BUFFER = 4096;

/** Frames `records[s]` of each subpartition into regions of `perRegion` records per subpartition. */
function regionsOf(records: Uint8Array[][], perRegion: number, events: Map<string, Uint8Array> = new Map()): Region[] {
  const regions: Region[] = [];
  const longest = Math.max(...records.map((r) => r.length));
  for (let from = 0; from < Math.max(longest, 1); from += perRegion) {
    const subpartitions: RegionEntry[][] = records.map((list, s) => {
      const entries: RegionEntry[] = [];
      const framer = new RecordFramer(BUFFER, () => new Uint8Array(BUFFER), (segment, length) => entries.push({ kind: BLOCK_KIND_DATA, bytes: segment.subarray(0, length) }));
      for (const record of list.slice(from, from + perRegion)) framer.write(record);
      framer.flush();
      const event = events.get(`${from}:${s}`);
      if (event !== undefined) entries.push({ kind: BLOCK_KIND_EVENT, bytes: event });
      return entries;
    });
    const all = subpartitions.flat();
    regions.push({ subpartitions, rawBytes: all.reduce((n, e) => n + e.bytes.length, 0), blocks: all.length });
  }
  return regions;
}

async function write(
  records: Uint8Array[][],
  options: { perRegion: number; compression: 'lz4' | 'none'; events?: Map<string, Uint8Array>; spill?: MemoryBlob; partBytes?: number },
) {
  const blob = new MemoryBlob(options.partBytes);
  const writer = new PartitionFileWriter({
    blob,
    numberOfSubpartitions: records.length,
    compression: options.compression,
    ...(options.spill === undefined ? {} : { spill: options.spill }),
  });
  for (const region of regionsOf(records, options.perRegion, options.events)) await writer.writeRegion(region);
  const summary = await writer.finish();
  return { blob, summary };
}

async function readRange(blob: MemoryBlob, summary: Awaited<ReturnType<typeof write>>['summary'], start: number, end: number, readBufferBytes = 1500, sharedTargets = false) {
  const reader = await SubpartitionRangeReader.open({ reader: blob.reader({ sharedTargets }), location: summary.location, start, end, readBufferBytes, partitionId: 'edge#3' });
  const out = new Map<number, { records: Uint8Array[]; events: unknown[] }>();
  const deframers = new Map<number, RecordDeframer>();
  for (let blocks = await reader.next(); blocks !== null; blocks = await reader.next()) {
    for (const block of blocks) {
      const slot = out.get(block.subpartition) ?? { records: [], events: [] };
      out.set(block.subpartition, slot);
      if (block.kind === BLOCK_KIND_DATA) {
        const deframer = deframers.get(block.subpartition) ?? new RecordDeframer(1 << 30);
        deframers.set(block.subpartition, deframer);
        // views are valid until the next call of next(): copy, as a consumer keeping records must
        const records: Uint8Array[] = [];
        deframer.push(block.payload, records);
        for (const record of records) slot.records.push(record.slice());
      } else {
        slot.events.push(decodeEvent(block.payload));
      }
    }
  }
  for (const d of deframers.values()) d.checkComplete();
  return out;
}

function textRecord(s: number, i: number, size: number): Uint8Array {
  return new TextEncoder().encode(`s${s}-r${i}-`.padEnd(size, 'abcabc'));
}

function corruptionOf(promise: Promise<unknown>): Promise<ShuffleError> {
  return promise.then(
    () => assert.fail('expected SHF_ERR_DATA_CORRUPTED'),
    (error: unknown) => {
      assert.ok(isShuffleError(error, 'SHF_ERR_DATA_CORRUPTED'), `expected SHF_ERR_DATA_CORRUPTED, got ${String(error)}`);
      return error;
    },
  );
}

/** `regions` with each data entry's rawChecksum set to `checksum(entry)`. */
function withRawChecksums(regions: Region[], checksum: (entry: RegionEntry) => number): Region[] {
  return regions.map((region) => ({
    ...region,
    subpartitions: region.subpartitions.map((list) => list?.map((entry) => (entry.kind === BLOCK_KIND_DATA ? { ...entry, rawChecksum: checksum(entry) } : entry))),
  }));
}

async function writeRegions(regions: Region[], numberOfSubpartitions: number, compression: 'lz4' | 'none') {
  const blob = new MemoryBlob();
  const writer = new PartitionFileWriter({ blob, numberOfSubpartitions, compression });
  for (const region of regions) await writer.writeRegion(region);
  return { blob, summary: await writer.finish() };
}

describe('block checksums computed when a block is filled', () => {
  const records = [0, 1, 2].map((s) => Array.from({ length: 60 }, (_, i) => textRecord(s, i, 300 + ((i * 53) % 700))));
  const events = new Map([['0:1', encodeEvent({ type: 'user', name: 'marker', payload: { n: 1 } })]]);

  it('writes the same object whether the producer checksummed its raw blocks or not, and it reads back', async () => {
    const plain = await writeRegions(regionsOf(records, 25, events), 3, 'none');
    const precomputed = await writeRegions(withRawChecksums(regionsOf(records, 25, events), (e) => rawBlockChecksum(BLOCK_KIND_DATA, e.bytes)), 3, 'none');
    assert.ok(Buffer.from(precomputed.blob.bytes).equals(Buffer.from(plain.blob.bytes)), 'identical bytes');
    const got = await readRange(precomputed.blob, precomputed.summary, 0, 2);
    for (let s = 0; s < 3; s++) assert.equal(got.get(s)!.records.length, 60);
  });

  it("stores a raw block's precomputed checksum as given (a wrong one is caught by the reader) and ignores it for a block stored compressed", async () => {
    const wrong = withRawChecksums(regionsOf(records, 25), (e) => (rawBlockChecksum(BLOCK_KIND_DATA, e.bytes) ^ 1) >>> 0);
    const raw = await writeRegions(wrong, 3, 'none');
    const error = await corruptionOf(readRange(raw.blob, raw.summary, 0, 0));
    assert.match(error.message, /checksum mismatch/);
    // text compresses: every block is stored LZ4, whose checksum the writer computes over what it stores
    const lz4 = await writeRegions(wrong, 3, 'lz4');
    assert.equal((await readRange(lz4.blob, lz4.summary, 0, 2)).get(1)!.records.length, 60);
  });

  it("has the sort buffer checksum each data block as it fills it when asked, as the file writer would", () => {
    const sort = new SortBuffer(2, 4096, 1 << 20, true);
    for (let i = 0; i < 50; i++) sort.write(textRecord(i % 2, i, 500), i % 2);
    const region = sort.takeRegion();
    const entries = region.subpartitions.flatMap((list) => list ?? []);
    assert.ok(entries.length > 4);
    for (const entry of entries) assert.equal(entry.rawChecksum, rawBlockChecksum(BLOCK_KIND_DATA, entry.bytes.slice()));
    // blocks larger than the checksum step, records of all sizes: pieces checksummed as the block fills, records across blocks, one larger than a block
    const big = new SortBuffer(3, 256 * 1024, 8 << 20, true);
    for (let i = 0; i < 400; i++) big.write(randomFillSync(new Uint8Array(i === 7 ? 600_000 : (i * 7919) % 40_000)), i % 3);
    const bigEntries = big.takeRegion().subpartitions.flatMap((list) => list ?? []);
    assert.ok(bigEntries.length > 20 && bigEntries.some((e) => e.bytes.length === 256 * 1024));
    for (const entry of bigEntries) assert.equal(entry.rawChecksum, rawBlockChecksum(BLOCK_KIND_DATA, entry.bytes.slice()));
    const unchecked = new SortBuffer(2, 4096, 1 << 20);
    unchecked.write(textRecord(0, 0, 500), 0);
    assert.equal(unchecked.takeRegion().subpartitions[0]![0]!.rawChecksum, undefined);
  });
});

describe('sort-merge partition data object', () => {
  it('reads back every subpartition and every range of several regions, with LZ4 and without', async () => {
    const records = [0, 1, 2, 3].map((s) => Array.from({ length: 40 + 25 * s }, (_, i) => textRecord(s, i, (i * 37 + s * 11) % 900)));
    records[2] = []; // an empty subpartition
    for (const compression of ['lz4', 'none'] as const) {
      const { blob, summary } = await write(records, { perRegion: 17, compression });
      assert.equal(summary.location.numberOfRegions, 7);
      for (const [start, end] of [[0, 0], [1, 1], [2, 2], [3, 3], [0, 3], [1, 2]] as const) {
        const got = await readRange(blob, summary, start, end);
        for (let s = start; s <= end; s++) {
          const expected = records[s]!;
          const actual = got.get(s)?.records ?? [];
          assert.equal(actual.length, expected.length, `${compression} range [${start},${end}] subpartition ${s}`);
          actual.forEach((record, i) => assert.ok(Buffer.from(record).equals(Buffer.from(expected[i]!)), `record ${i} of subpartition ${s} differs`));
        }
        for (const s of got.keys()) assert.ok(s >= start && s <= end, `subpartition ${s} is outside the range read`);
      }
    }
  });

  it('compresses text blocks with LZ4 and keeps random blocks raw, smaller than the framed bytes either way', async () => {
    const text = [Array.from({ length: 400 }, (_, i) => textRecord(0, i, 1000))];
    const random = [Array.from({ length: 400 }, () => randomFillSync(new Uint8Array(1000)))];
    const framed = 400 * 1004;
    const t = await write(text, { perRegion: 400, compression: 'lz4' });
    const r = await write(random, { perRegion: 400, compression: 'lz4' });
    assert.ok(t.summary.storedBytes < framed / 2, `text stored in ${t.summary.storedBytes} bytes, framed ${framed}`);
    // raw blocks cost a 16-byte header each, never more
    assert.ok(r.summary.storedBytes <= framed + 16 * Math.ceil(framed / BUFFER) + 16, `random stored in ${r.summary.storedBytes}`);
    assert.deepEqual((await readRange(r.blob, r.summary, 0, 0)).get(0)!.records.map((x) => Buffer.from(x).toString('hex')), random[0]!.map((x) => Buffer.from(x).toString('hex')));
  });

  it('reads only the bytes of the requested subpartitions (index entries, then one extent per region)', async () => {
    const records = [0, 1, 2, 3, 4, 5, 6, 7].map((s) => Array.from({ length: 100 }, (_, i) => textRecord(s, i, 500)));
    const { blob, summary } = await write(records, { perRegion: 50, compression: 'none' });
    blob.reads = [];
    await readRange(blob, summary, 5, 5, 1 << 20);
    const read = blob.reads.reduce((n, r) => n + r.length, 0);
    const dataBytes = summary.location.indexOffset;
    assert.ok(read < dataBytes / 6, `read ${read} of ${dataBytes} data bytes for one subpartition of eight`);
    assert.equal(blob.reads.length, 1 + summary.location.numberOfRegions, 'one read of index entries, one per region');
  });

  it('keeps events in order with the records around them', async () => {
    const records = [[textRecord(0, 0, 10)], [textRecord(1, 0, 10), textRecord(1, 1, 10)]];
    const barrier = encodeEvent({ type: 'checkpoint-barrier', id: 3, timestampMs: 99 });
    const { blob, summary } = await write(records, { perRegion: 1, compression: 'lz4', events: new Map([['1:1', barrier]]) });
    const got = await readRange(blob, summary, 0, 1);
    assert.equal(got.get(1)!.records.length, 2);
    assert.deepEqual(got.get(1)!.events, [{ type: 'checkpoint-barrier', id: 3, timestampMs: 99 }]);
    assert.deepEqual(got.get(0)!.events, []);
  });

  it('ends the object with a footer that locates the index', async () => {
    const { blob, summary } = await write([[textRecord(0, 1, 100)], []], { perRegion: 10, compression: 'lz4' });
    assert.ok(blob.completed);
    assert.equal(summary.objectBytes, blob.bytes.length);
    assert.deepEqual(decodeFooter(blob.bytes.subarray(blob.bytes.length - FOOTER_BYTES)), summary.location);
    assert.equal(decodeFooter(new Uint8Array(FOOTER_BYTES)), undefined);
  });

  it('reports one flipped payload byte as SHF_ERR_DATA_CORRUPTED naming the partition and the block', async () => {
    const records = [Array.from({ length: 200 }, (_, i) => textRecord(0, i, 300))];
    for (const compression of ['lz4', 'none'] as const) {
      const { blob, summary } = await write(records, { perRegion: 100, compression });
      const target = Math.floor(summary.location.indexOffset * 0.7);
      blob.bytes[target]! ^= 0x20;
      const error = await corruptionOf(readRange(blob, summary, 0, 0));
      assert.equal(error.context['partitionId'], 'edge#3');
      const block = error.context['block'] as number;
      assert.ok(block <= target && target < block + BUFFER + 16, `block ${block} should hold the flipped byte ${target}`);
      assert.match(error.message, /partition edge#3: block at byte \d+ \(region \d+, subpartition 0\) is corrupt: checksum mismatch/);
    }
  });

  it('reports a corrupted block header and a wrong index entry as SHF_ERR_DATA_CORRUPTED', async () => {
    const records = [Array.from({ length: 50 }, (_, i) => textRecord(0, i, 300)), Array.from({ length: 50 }, (_, i) => textRecord(1, i, 300))];
    const header = await write(records, { perRegion: 50, compression: 'none' });
    header.blob.bytes[12]! ^= 0x01; // storedLength of the first block
    await corruptionOf(readRange(header.blob, header.summary, 0, 1));

    const entry = await write(records, { perRegion: 50, compression: 'none' });
    const indexStart = entry.summary.location.indexOffset + 32;
    entry.blob.bytes[indexStart + 12]! ^= 0xff; // checksum of subpartition 0's entry
    const error = await corruptionOf(readRange(entry.blob, entry.summary, 0, 0));
    assert.match(error.message, /index entry of subpartition 0 in region 0 does not match its blocks/);

  });

  it('reads an empty partition as no blocks', async () => {
    const { blob, summary } = await write([[], [], []], { perRegion: 10, compression: 'lz4' });
    const got = await readRange(blob, summary, 0, 2);
    for (const slot of got.values()) assert.deepEqual(slot.records, []);
  });
});

describe('merged layout (a spilled partition written in one go)', () => {
  const records = [0, 1, 2, 3].map((s) => Array.from({ length: 60 + 30 * s }, (_, i) => textRecord(s, i, (i * 53 + s * 7) % 700)));
  records[1] = []; // an empty subpartition

  it('writes the object once, subpartition after subpartition as one region, and a subpartition reads as one extent', async () => {
    for (const compression of ['lz4', 'none'] as const) {
      const spill = new MemoryBlob();
      const { blob, summary } = await write(records, { perRegion: 13, compression, spill });
      assert.equal(blob.wholeWrites, 1);
      assert.equal(blob.bytesWritten, summary.objectBytes);
      assert.equal(summary.location.numberOfRegions, 1);
      assert.ok(spill.closed, 'the spill is closed once the object is written');
      assert.deepEqual(decodeFooter(blob.bytes.subarray(blob.bytes.length - FOOTER_BYTES)), summary.location);
      for (const [start, end] of [[0, 0], [1, 1], [2, 2], [3, 3], [0, 3], [1, 2]] as const) {
        blob.reads = [];
        const got = await readRange(blob, summary, start, end, 1 << 20);
        // one read of the index entries, one of the range's bytes
        assert.equal(blob.reads.length, start === 1 && end === 1 ? 1 : 2, `${compression} [${start},${end}]: ${JSON.stringify(blob.reads)}`);
        for (let s = start; s <= end; s++) {
          const actual = got.get(s)?.records ?? [];
          assert.equal(actual.length, records[s]!.length);
          actual.forEach((record, i) => assert.ok(Buffer.from(record).equals(Buffer.from(records[s]![i]!)), `record ${i} of subpartition ${s} differs`));
        }
      }
    }
  });

  it('gives the same bytes whether the object is asked for whole or in parts', async () => {
    const whole = await write(records, { perRegion: 13, compression: 'none', spill: new MemoryBlob() });
    const parts = await write(records, { perRegion: 13, compression: 'none', spill: new MemoryBlob(), partBytes: 777 });
    assert.ok(Buffer.from(parts.blob.bytes).equals(Buffer.from(whole.blob.bytes)));
  });

  it('cuts an upload of the merged object short when the writer is aborted, and drops the object and the spill', async () => {
    let started!: () => void;
    const uploading = new Promise<void>((resolve) => (started = resolve));
    let proceed!: () => void;
    const aborted = new Promise<void>((resolve) => (proceed = resolve));
    /** A blob that takes one piece of the body, then asks for more only once the writer is being aborted. */
    class StalledBlob extends MemoryBlob {
      override async writeWhole(length: number, body: (start: number, end: number) => AsyncIterable<Uint8Array>): Promise<void> {
        for await (const piece of body(0, length)) {
          void piece;
          started();
          await aborted;
        }
      }
    }
    const blob = new StalledBlob();
    const spill = new MemoryBlob();
    const bigRecords = [0, 1].map((s) => Array.from({ length: 3000 }, (_, i) => textRecord(s, i, 900)));
    const writer = new PartitionFileWriter({ blob, numberOfSubpartitions: 2, compression: 'none', spill });
    for (const region of regionsOf(bigRecords, 1000)) await writer.writeRegion(region);
    const finishing = writer.finish();
    finishing.catch(() => undefined);
    await uploading;
    const aborting = writer.abort();
    proceed();
    await aborting;
    await assert.rejects(finishing, /cancelled: its writer was aborted/);
    assert.ok(blob.aborted, 'the object is dropped');
    assert.ok(spill.closed, 'the spill is closed');
  });

  it('detects a flipped byte of a merged object as SHF_ERR_DATA_CORRUPTED naming the partition', async () => {
    const { blob, summary } = await write(records, { perRegion: 13, compression: 'none', spill: new MemoryBlob() });
    blob.bytes[Math.floor(summary.location.indexOffset / 2)]! ^= 0x40;
    const error = await corruptionOf(readRange(blob, summary, 0, 3));
    assert.equal(error.context['partitionId'], 'edge#3');
  });

  it('combines CRC32Cs of two pieces into the CRC32C of both', () => {
    for (const [a, b] of [[0, 1], [5, 4], [1000, 4096], [3, 70_001], [12, 262_140], [0, 0], [70_000, 1 << 20]] as const) {
      const first = randomFillSync(new Uint8Array(a));
      const second = randomFillSync(new Uint8Array(b));
      const both = new Uint8Array(a + b);
      both.set(first, 0);
      both.set(second, a);
      assert.equal(crc32cCombine(crc32c(first), crc32c(second), b), crc32c(both), `${a} + ${b} bytes`);
    }
  });
});

describe('checksum worker', () => {
  it('checks CRC32Cs of shared read buffers off the calling thread and names the first that fails', async () => {
    const shared = new Uint8Array(new SharedArrayBuffer(1024 * 1024));
    randomFillSync(shared);
    const pieces = [0, 1, 2, 3].map((i) => shared.subarray(i * 262_144, (i + 1) * 262_144));
    const checks = pieces.map((bytes) => ({ bytes, expected: crc32c(bytes) }));
    assert.equal(await ChecksumWorker.shared().check(checks), undefined);
    const wrong = checks.map((c, i) => (i === 2 ? { ...c, expected: (c.expected ^ 1) >>> 0 } : c));
    assert.deepEqual(await ChecksumWorker.shared().check(wrong), { index: 2, actual: checks[2]!.expected });
  });

  it('reads a large object through shared buffers when its reader fills them cheaply, verified on the worker, and names a corrupt block', async () => {
    const records = [0, 1].map(() => Array.from({ length: 3000 }, () => randomFillSync(new Uint8Array(700))));
    const { blob, summary } = await write(records, { perRegion: 1000, compression: 'none' });
    for (const sharedTargets of [true, false]) {
      const reader = await SubpartitionRangeReader.open({ reader: blob.reader({ sharedTargets }), location: summary.location, start: 0, end: 1, readBufferBytes: 1 << 20, partitionId: 'edge#3' });
      let blocks = 0;
      for (let batch = await reader.next(); batch !== null; batch = await reader.next()) {
        for (const block of batch) assert.equal(block.payload.buffer instanceof SharedArrayBuffer, sharedTargets, 'raw payloads are views of the read buffers');
        blocks += batch.length;
      }
      assert.ok(blocks > 0);
    }
    const target = Math.floor(summary.location.indexOffset * 0.6);
    blob.bytes[target]! ^= 0x04;
    const error = await corruptionOf(readRange(blob, summary, 0, 1, 1 << 20, true));
    const block = error.context['block'] as number;
    assert.ok(block <= target && target < block + BUFFER + 16, `block ${block} should hold the flipped byte ${target}`);
    assert.match(error.message, /is corrupt: checksum mismatch/);
  });
});
