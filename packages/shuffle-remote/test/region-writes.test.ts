import { strict as assert } from 'node:assert';
import { randomFillSync } from 'node:crypto';
import { describe, it } from 'node:test';
import { RecordDeframer, RecordFramer, isShuffleError } from '@weft/shuffle-api';
import { BLOCK_KIND_DATA, LocalBlobStore, PartitionFileWriter, type Region, type RegionEntry, SubpartitionRangeReader } from '@weft/shuffle-remote';
import { createTempDir } from '@weft/testkit';

const KEY = 'job/edge%230/map%230%400.w1.wsm';
const BLOCK = 4096;

function regionOf(records: Uint8Array[][]): Region {
  const subpartitions = records.map((list) => {
    const entries: RegionEntry[] = [];
    const framer = new RecordFramer(BLOCK, () => new Uint8Array(BLOCK), (segment, length) => entries.push({ kind: BLOCK_KIND_DATA, bytes: segment.subarray(0, length) }));
    for (const record of list) framer.write(record);
    framer.flush();
    return entries;
  });
  const all = subpartitions.flat();
  return { subpartitions, rawBytes: all.reduce((n, e) => n + e.bytes.length, 0), blocks: all.length };
}

describe('regions written to a local file', () => {
  it('starts the write of a region without LZ4 before writeRegion returns, and regions handed over without waiting read back in order', async () => {
    await using dir = await createTempDir('weft-region-writes-');
    const store = new LocalBlobStore({ dir: dir.path });
    await store.start();
    const blob = await store.createWriter(KEY);
    assert.equal(blob.concurrentAppends, true);
    const writer = new PartitionFileWriter({ blob, numberOfSubpartitions: 2, compression: 'none' });
    const written: Uint8Array[][] = [[], []];
    const pending: Promise<void>[] = [];
    for (let r = 0; r < 5; r++) {
      const records = [0, 1].map((s) => Array.from({ length: 30 }, (_, i) => randomFillSync(new Uint8Array(200 + ((r * 30 + i + s) * 53) % 700))));
      records.forEach((list, s) => written[s]!.push(...list));
      const before = blob.bytesWritten;
      // not awaited: the next region is handed over while this one is being written
      pending.push(writer.writeRegion(regionOf(records)));
      assert.ok(blob.bytesWritten > before, `region ${r}: its bytes were handed to the file before writeRegion returned`);
    }
    await Promise.all(pending);
    const summary = await writer.finish();
    assert.equal(summary.objectBytes, blob.bytesWritten);
    const reader = await store.openReader(KEY);
    try {
      const range = await SubpartitionRangeReader.open({ reader, location: summary.location, start: 0, end: 1, readBufferBytes: 8192, partitionId: 'edge#0' });
      const got: Uint8Array[][] = [[], []];
      const deframers = [new RecordDeframer(1 << 20), new RecordDeframer(1 << 20)];
      for (let batch = await range.next(); batch !== null; batch = await range.next()) {
        for (const block of batch) {
          const out: Uint8Array[] = [];
          deframers[block.subpartition]!.push(block.payload, out);
          for (const record of out) got[block.subpartition]!.push(record.slice());
        }
      }
      assert.deepEqual(got, written);
    } finally {
      await reader.close();
    }
  });

  it('fails the object when one of the overlapping appends fails: complete() rejects with SHF_ERR_STORAGE_UNAVAILABLE', async () => {
    await using dir = await createTempDir('weft-region-writes-');
    const store = new LocalBlobStore({ dir: dir.path });
    await store.start();
    const blob = await store.createWriter(KEY);
    const good = blob.append([new Uint8Array(1000)]);
    // what is not a buffer cannot be written: this append fails while the first may still be in flight
    const bad = blob.append([new Uint8Array(10), 'not bytes' as unknown as Uint8Array]);
    await good;
    await bad.then(
      () => assert.fail('the append of something that is not a buffer should fail'),
      (error: unknown) => assert.ok(isShuffleError(error, 'SHF_ERR_STORAGE_UNAVAILABLE'), String(error)),
    );
    await assert.rejects(blob.complete(), (error: unknown) => isShuffleError(error, 'SHF_ERR_STORAGE_UNAVAILABLE'));
    await blob.abort();
    assert.deepEqual(await store.listKeys(), []);
  });
});
