import { strict as assert } from 'node:assert';
import { randomFillSync } from 'node:crypto';
import { readFile, truncate, writeFile } from 'node:fs/promises';
import { availableParallelism } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { RecordDeframer, RecordFramer, isShuffleError } from '@weft/shuffle-api';
import { BLOCK_KIND_DATA, BLOCK_KIND_EVENT, LocalBlobStore, PartitionFileWriter, type RegionEntry, SubpartitionRangeReader } from '@weft/shuffle-remote';
import { createTempDir } from '@weft/testkit';
import { crc32cImplementation } from '../src/format/checksum.js';
import { ChecksumWorker } from '../src/format/checksum-worker.js';

const KEY = 'job/edge%230/map%230%400.w1.wsm';
const BLOCK = 4096;

/** Two subpartitions of random records (and an event in subpartition 1), in `regions` regions, written to a local file. */
async function writeLocal(dir: string, regions: number) {
  const store = new LocalBlobStore({ dir });
  await store.start();
  const writer = new PartitionFileWriter({ blob: await store.createWriter(KEY), numberOfSubpartitions: 2, compression: 'none' });
  const written: Uint8Array[][] = [[], []];
  for (let r = 0; r < regions; r++) {
    const subpartitions = [0, 1].map((s) => {
      const entries: RegionEntry[] = [];
      const framer = new RecordFramer(BLOCK, () => new Uint8Array(BLOCK), (segment, length) => entries.push({ kind: BLOCK_KIND_DATA, bytes: segment.subarray(0, length) }));
      for (let i = 0; i < 40; i++) {
        // sizes that make records, block headers and blocks straddle the reads below
        const record = randomFillSync(new Uint8Array(100 + ((r * 40 + i) * 37) % 900));
        written[s]!.push(record);
        framer.write(record);
      }
      framer.flush();
      if (s === 1) entries.push({ kind: BLOCK_KIND_EVENT, bytes: new Uint8Array([1, 2, 3]) });
      return entries;
    });
    await writer.writeRegion({ subpartitions, rawBytes: subpartitions.flat().reduce((n, e) => n + e.bytes.length, 0), blocks: subpartitions.flat().length });
  }
  const summary = await writer.finish();
  return { store, summary, written, path: join(dir, ...KEY.split('/')) };
}

async function readAll(store: LocalBlobStore, location: Awaited<ReturnType<typeof writeLocal>>['summary']['location'], readBufferBytes: number) {
  const blob = await store.openReader(KEY);
  try {
    const reader = await SubpartitionRangeReader.open({ reader: blob, location, start: 0, end: 1, readBufferBytes, partitionId: 'edge#0' });
    const records: Uint8Array[][] = [[], []];
    const deframers = [new RecordDeframer(1 << 20), new RecordDeframer(1 << 20)];
    let blocks = 0;
    for (let batch = await reader.next(); batch !== null; batch = await reader.next()) {
      for (const block of batch) {
        blocks++;
        if (block.kind !== BLOCK_KIND_DATA) continue;
        const out: Uint8Array[] = [];
        deframers[block.subpartition]!.push(block.payload, out);
        for (const record of out) records[block.subpartition]!.push(record.slice());
      }
    }
    return { records, blocks, checkedWhenRead: reader.blocksCheckedWhenRead };
  } finally {
    await blob.close();
  }
}

function corruptionOf(promise: Promise<unknown>) {
  return promise.then(
    () => assert.fail('expected SHF_ERR_DATA_CORRUPTED'),
    (error: unknown) => {
      assert.ok(isShuffleError(error, 'SHF_ERR_DATA_CORRUPTED'), `expected SHF_ERR_DATA_CORRUPTED, got ${String(error)}`);
      return error;
    },
  );
}

describe('local file reads made by the checksum worker', { skip: crc32cImplementation() === 'js' ? 'no native CRC32C: no worker' : false }, () => {
  it('reads every record back and has the worker checksum every block as it reads it, whatever the read size', async () => {
    await using dir = await createTempDir('weft-worker-reads-');
    const { store, summary, written } = await writeLocal(dir.path, 6);
    for (const readBufferBytes of [1000, 3000, 4096 + 16, 64 * 1024]) {
      const { records, blocks, checkedWhenRead } = await readAll(store, summary.location, readBufferBytes);
      assert.deepEqual(records, written, `read buffers of ${readBufferBytes} bytes`);
      assert.equal(checkedWhenRead, blocks, `every block checked by the worker as read (read buffers of ${readBufferBytes} bytes)`);
    }
  });

  it('spreads readers over two workers where there are two cores, each reader on one worker: every block of four readers at once checked as read', async () => {
    const first = ChecksumWorker.shared().newStream();
    assert.equal(ChecksumWorker.forStream(first), ChecksumWorker.forStream(first + 2), 'a stream and the one two later share a worker');
    if (availableParallelism() >= 2) assert.notEqual(ChecksumWorker.forStream(first), ChecksumWorker.forStream(first + 1), 'consecutive streams on two workers');
    await using dir = await createTempDir('weft-worker-reads-');
    const { store, summary, written } = await writeLocal(dir.path, 6);
    const reads = await Promise.all([1000, 3000, 4096 + 16, 5000].map((readBufferBytes) => readAll(store, summary.location, readBufferBytes)));
    for (const { records, blocks, checkedWhenRead } of reads) {
      assert.deepEqual(records, written);
      assert.equal(checkedWhenRead, blocks, 'every block checked by the worker that read it');
    }
  });

  it('sends a read that starts at a block boundary to the read worker with fewer requests in flight', { skip: availableParallelism() < 2 ? 'one core: one read worker' : false }, async () => {
    const busy = ChecksumWorker.forStream(0);
    const other = ChecksumWorker.forStream(1);
    assert.notEqual(busy, other);
    // a CRC of 64 MiB keeps the first worker busy for milliseconds; reads go to the other one meanwhile
    const pending = busy.compute([{ bytes: new Uint8Array(new SharedArrayBuffer(64 * 1024 * 1024)) }]);
    try {
      assert.deepEqual([ChecksumWorker.leastBusy(), ChecksumWorker.leastBusy(), ChecksumWorker.leastBusy()], [other, other, other]);
    } finally {
      await pending;
    }
    // idle, they take turns
    const turns = [ChecksumWorker.leastBusy(), ChecksumWorker.leastBusy()];
    assert.notEqual(turns[0], turns[1]);
  });

  it('reports a flipped payload byte of the file as SHF_ERR_DATA_CORRUPTED naming the block, and a corrupted header too', async () => {
    await using dir = await createTempDir('weft-worker-reads-');
    const { store, summary, path } = await writeLocal(dir.path, 3);
    const original = await readFile(path);
    const target = Math.floor(summary.location.indexOffset * 0.6);
    const flipped = Buffer.from(original);
    flipped[target]! ^= 0x10;
    await writeFile(path, flipped);
    for (const readBufferBytes of [3000, 64 * 1024]) {
      const error = await corruptionOf(readAll(store, summary.location, readBufferBytes));
      const block = error.context['block'] as number;
      assert.ok(block <= target && target < block + BLOCK + 16, `block ${block} should hold the flipped byte ${target}`);
      assert.match(error.message, /partition edge#0: block at byte \d+ \(region \d+, subpartition \d\) is corrupt: checksum mismatch/);
    }
    const header = Buffer.from(original);
    header[12]! ^= 0x01; // storedLength of the first block
    await writeFile(path, header);
    await corruptionOf(readAll(store, summary.location, 3000));
  });

  it('reports a file cut short as SHF_ERR_DATA_CORRUPTED (truncated), as a read on the calling thread would', async () => {
    await using dir = await createTempDir('weft-worker-reads-');
    const { store, summary } = await writeLocal(dir.path, 3);
    const blob = await store.openReader(KEY);
    const reader = await SubpartitionRangeReader.open({ reader: blob, location: summary.location, start: 0, end: 1, readBufferBytes: 3000, partitionId: 'edge#0' });
    await truncate(join(dir.path, ...KEY.split('/')), Math.floor(summary.location.indexOffset / 2));
    const error = await corruptionOf(
      (async () => {
        while ((await reader.next()) !== null);
      })(),
    );
    assert.match(error.message, /is truncated/);
    await blob.close();
  });
});
