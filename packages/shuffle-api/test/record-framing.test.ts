import { strict as assert } from 'node:assert';
import { describe, it } from 'node:test';
import { RecordDeframer, RecordFramer, isShuffleError } from '@weft/shuffle-api';

/** Frames `records` into buffers of `size`; returns each buffer's valid bytes. */
function frame(records: readonly Uint8Array[], size: number, flushEvery = Infinity): Uint8Array[] {
  const out: Uint8Array[] = [];
  const framer = new RecordFramer(size, () => new Uint8Array(size), (segment, length) => out.push(segment.slice(0, length)));
  records.forEach((r, i) => {
    framer.write(r);
    if ((i + 1) % flushEvery === 0) framer.flush();
  });
  framer.flush();
  return out;
}

function deframe(buffers: readonly Uint8Array[], max = 1 << 30): Uint8Array[] {
  const deframer = new RecordDeframer(max, 'p#0');
  const out: Uint8Array[] = [];
  for (const b of buffers) deframer.push(b, out);
  deframer.checkComplete();
  return out.map((r) => r.slice());
}

function bytes(length: number, seed: number): Uint8Array {
  return Uint8Array.from({ length }, (_, i) => (i * 31 + seed) & 0xff);
}

describe('record framing', () => {
  it('writes the byte layout FRAMING.md documents', () => {
    const [buffer] = frame([new TextEncoder().encode('hi'), new Uint8Array(0)], 32);
    assert.deepEqual([...buffer!], [2, 0, 0, 0, 0x68, 0x69, 0, 0, 0, 0]);
  });

  it('round-trips records of every size around the buffer size, spanning as needed', () => {
    const size = 64;
    const records = [0, 1, 59, 60, 61, 63, 64, 65, 128, 129, 1000, 0, 3].map((n, i) => bytes(n, i));
    for (const flushEvery of [Infinity, 1, 3]) {
      const buffers = frame(records, size, flushEvery);
      for (const b of buffers) assert.ok(b.length <= size);
      assert.deepEqual(deframe(buffers), records);
    }
  });

  it("reports each buffer's partial record length: the tail of a record begun earlier", () => {
    const seen: [number, number][] = [];
    const framer = new RecordFramer(16, () => new Uint8Array(16), (_segment, length, partial) => seen.push([length, partial]));
    // by hand, buffers of 16: A (20 B) = header + 12 | 8 more; B (2 B) after A's tail; C (30 B) needs a new
    // buffer (2 B left < a header): header + 12 | 16 | 2
    for (const n of [20, 2, 30]) framer.write(bytes(n, n));
    framer.flush();
    assert.deepEqual(seen, [[16, 0], [14, 8], [16, 0], [16, 16], [2, 2]]);
  });

  it('skipping a buffer\'s partial record length always lands on a whole record', () => {
    const size = 64;
    const records = [0, 1, 59, 60, 61, 63, 64, 65, 128, 129, 1000, 0, 3, 200].map((n, i) => bytes(n, i));
    const buffers: { bytes: Uint8Array; partial: number }[] = [];
    const framer = new RecordFramer(size, () => new Uint8Array(size), (segment, length, partial) => buffers.push({ bytes: segment.slice(0, length), partial }));
    for (const r of records) framer.write(r);
    framer.flush();
    for (let i = 0; i < buffers.length; i++) {
      // Flink's cleanup: a buffer that is all tail is skipped whole, and the next one's tail too
      let j = i;
      while (j < buffers.length && buffers[j]!.partial === buffers[j]!.bytes.length) j++;
      const rest = j === buffers.length ? [] : [buffers[j]!.bytes.subarray(buffers[j]!.partial), ...buffers.slice(j + 1).map((b) => b.bytes)];
      const got = deframe(rest);
      assert.deepEqual(got, records.slice(records.length - got.length), `from buffer ${i}: a suffix of the records, each whole`);
    }
  });

  it('never lets a length header straddle two buffers', () => {
    // 62 bytes used by a 58-byte record leaves 2 bytes: the next header must start a new buffer.
    const buffers = frame([bytes(58, 1), bytes(5, 2)], 64);
    assert.equal(buffers[0]!.length, 62);
    assert.deepEqual([...buffers[1]!.subarray(0, 4)], [5, 0, 0, 0]);
  });

  it('fills a buffer exactly with a record of bufferSize - 4 bytes and spills one of bufferSize bytes', () => {
    assert.deepEqual(frame([bytes(60, 0)], 64).map((b) => b.length), [64]);
    assert.deepEqual(frame([bytes(64, 0)], 64).map((b) => b.length), [64, 4]);
  });

  it('reports stray bytes, oversized lengths and a channel ending inside a record as corruption', () => {
    const corrupt = (fn: () => unknown): void => {
      assert.throws(fn, (e: unknown) => isShuffleError(e, 'SHF_ERR_DATA_CORRUPTED') && e.context['partitionId'] === 'p#0');
    };
    corrupt(() => deframe([Uint8Array.of(1, 0, 0, 0, 9, 7, 7)]));
    corrupt(() => deframe([Uint8Array.of(0xff, 0xff, 0xff, 0x7f)], 1024));
    corrupt(() => deframe([Uint8Array.of(10, 0, 0, 0, 1, 2, 3)]));
  });
  it('returns whole records as views into the buffer at any byte offset; a Buffer\'s records are Buffers', () => {
    // two records framed by hand, at byte 3 of a larger array: a view must start at its own record
    const backing = new Uint8Array(3 + 4 + 2 + 4 + 3 + 5);
    backing.set([2, 0, 0, 0, 0xaa, 0xbb, 3, 0, 0, 0, 0xcc, 0xdd, 0xee], 3);
    const bytes = backing.subarray(3, 16);
    const views = (input: Uint8Array): Uint8Array[] => {
      const out: Uint8Array[] = [];
      new RecordDeframer(1024).push(input, out);
      return out;
    };
    const records = views(bytes);
    assert.deepEqual(records.map((r) => [...r]), [[0xaa, 0xbb], [0xcc, 0xdd, 0xee]]);
    assert.deepEqual(records.map((r) => [r.buffer === backing.buffer, r.byteOffset, Object.getPrototypeOf(r) === Uint8Array.prototype]), [[true, 7, true], [true, 13, true]]);
    const fromBuffer = views(Buffer.from(bytes));
    assert.ok(fromBuffer.every((r) => Buffer.isBuffer(r)));
    assert.deepEqual(fromBuffer.map((r) => [...r]), [[0xaa, 0xbb], [0xcc, 0xdd, 0xee]]);
    backing[8] = 0x11;
    assert.equal(records[0]![1], 0x11, 'a view, not a copy');
  });
});
