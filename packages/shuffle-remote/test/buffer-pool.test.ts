import { strict as assert } from 'node:assert';
import { randomFillSync } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { describe, it } from 'node:test';
import { RecordDeframer, RecordFramer } from '@weft/shuffle-api';
import { executionAttemptId, executionVertexId, intermediateResultId, jobId, resultPartitionId, taskExecutorId } from '@weft/shuffle-api';
import { BLOCK_KIND_DATA, LocalBlobStore, PartitionFileWriter, type RegionEntry, SubpartitionRangeReader, createRemoteShuffleServiceFactory } from '@weft/shuffle-remote';
import { createTempDir } from '@weft/testkit';
import { BufferPool, readBuffers, writeBlocks } from '../src/format/buffer-pool.js';
import { SortBuffer } from '../src/shuffle-core/sort-buffer.js';

const KEY = 'job/edge%230/map%230%400.w1.wsm';

describe('BufferPool', () => {
  it('hands a buffer given back to the next take of the same size and kind, and a new one otherwise', () => {
    const pool = new BufferPool(1 << 20, 60_000);
    const shared = pool.take(4096, true);
    assert.ok(shared.buffer instanceof SharedArrayBuffer);
    assert.equal(shared.length, 4096);
    pool.give(shared);
    assert.equal(pool.idleBytes, 4096);
    const plain = pool.take(4096, false);
    assert.notEqual(plain, shared, 'a plain take never gets shared memory');
    assert.ok(!(plain.buffer instanceof SharedArrayBuffer));
    assert.notEqual(pool.take(8192, true), shared, 'another size is another buffer');
    assert.equal(pool.take(4096, true), shared, 'the idle one is reused');
    assert.equal(pool.idleBytes, 0);
    pool.clear();
  });

  it('keeps at most maxIdleBytes idle and refuses a view of part of a buffer and a buffer given twice', () => {
    const pool = new BufferPool(8192, 60_000);
    const buffers = [pool.take(4096, false), pool.take(4096, false), pool.take(4096, false)];
    for (const buffer of buffers) pool.give(buffer);
    assert.equal(pool.idleBytes, 8192, 'the third is dropped');
    assert.throws(() => pool.give(new Uint8Array(8192).subarray(0, 4096)), /whole buffer/);
    assert.throws(() => pool.give(buffers[0]!), /given back already/, 'a buffer given twice would have two owners');
    pool.clear();
    assert.equal(pool.idleBytes, 0);
  });

  it('drops its idle buffers when none was taken for idleReleaseMs', async () => {
    const pool = new BufferPool(1 << 20, 30);
    pool.give(pool.take(4096, true));
    assert.equal(pool.idleBytes, 4096);
    await sleep(120);
    assert.equal(pool.idleBytes, 0);
  });
});

describe('buffers shared between readers and between writers', () => {
  it('a range reader gives its read buffers back on release() and the next reader reads the same records with them', async () => {
    await using dir = await createTempDir('weft-buffer-pool-');
    const store = new LocalBlobStore({ dir: dir.path });
    await store.start();
    const writer = new PartitionFileWriter({ blob: await store.createWriter(KEY), numberOfSubpartitions: 1, compression: 'none' });
    const written: Uint8Array[] = [];
    for (let region = 0; region < 4; region++) {
      const entries: RegionEntry[] = [];
      const framer = new RecordFramer(16 * 1024, () => new Uint8Array(16 * 1024), (segment, length) => entries.push({ kind: BLOCK_KIND_DATA, bytes: segment.subarray(0, length) }));
      for (let i = 0; i < 200; i++) {
        const record = randomFillSync(new Uint8Array(50 + ((region * 200 + i) * 31) % 500));
        written.push(record);
        framer.write(record);
      }
      framer.flush();
      await writer.writeRegion({ subpartitions: [entries], rawBytes: entries.reduce((n, e) => n + e.bytes.length, 0), blocks: entries.length });
    }
    const { location } = await writer.finish();
    readBuffers.clear();
    const readOnce = async (): Promise<Uint8Array[]> => {
      const blob = await store.openReader(KEY);
      const reader = await SubpartitionRangeReader.open({ reader: blob, location, start: 0, end: 0, readBufferBytes: 64 * 1024, partitionId: 'edge#0' });
      const records: Uint8Array[] = [];
      const deframer = new RecordDeframer(1 << 20);
      for (let batch = await reader.next(); batch !== null; batch = await reader.next()) {
        for (const block of batch) {
          const out: Uint8Array[] = [];
          deframer.push(block.payload, out);
          for (const record of out) records.push(record.slice());
        }
      }
      await blob.close();
      await reader.release();
      return records;
    };
    assert.deepEqual(await readOnce(), written);
    const idle = readBuffers.idleBytes;
    assert.ok(idle >= 64 * 1024, `the reader's buffers are idle in the pool (${idle} bytes)`);
    assert.deepEqual(await readOnce(), written, 'read again through the pooled buffers');
    assert.equal(readBuffers.idleBytes, idle, 'the second reader took and gave back the same buffers');
    readBuffers.clear();
    await store.close();
  });

  it("a sort buffer's blocks go to writeBlocks when it drains or is discarded, and the next sort buffer fills those", () => {
    writeBlocks.clear();
    const first = new SortBuffer(2, 4096, 16 * 4096);
    for (let i = 0; i < 20; i++) first.write(new Uint8Array(1000).fill(i), i % 2);
    const region = first.takeRegion();
    const blocks = region.subpartitions.flatMap((entries) => entries ?? []).map((entry) => entry.buffer!);
    assert.ok(blocks.length >= 4);
    for (const block of blocks) first.recycle(block);
    first.drain();
    assert.equal(writeBlocks.idleBytes, blocks.length * 4096, 'pooled blocks handed over on drain');
    const second = new SortBuffer(2, 4096, 16 * 4096);
    second.write(new Uint8Array(10).fill(7), 0);
    second.write(new Uint8Array(10).fill(8), 1);
    assert.equal(writeBlocks.idleBytes, (blocks.length - 2) * 4096, 'a block for each subpartition taken from the pool');
    const reused = second.takeRegion().subpartitions.flatMap((entries) => entries ?? []);
    for (const entry of reused) assert.ok(blocks.includes(entry.buffer!), 'filled one of the first buffer\'s blocks');
    assert.deepEqual([...reused[0]!.bytes.subarray(4)], new Array(10).fill(7), 'its bytes are the new records');
    second.discard();
    for (const entry of reused) second.recycle(entry.buffer!);
    second.drain();
    assert.equal(writeBlocks.idleBytes, blocks.length * 4096);
    writeBlocks.clear();
  });

  it('an input gate gives its read buffers back when its input ends and when it is closed in the middle', async () => {
    await using dir = await createTempDir('weft-buffer-pool-gate-');
    const factory = createRemoteShuffleServiceFactory({ store: `file://${dir.path}/data`, meta: `sqlite://${dir.path}/meta.db`, readBufferBytes: 64 * 1024 });
    const master = factory.createShuffleMaster();
    await master.start();
    const env = factory.createShuffleEnvironment({ taskExecutorId: taskExecutorId('t') });
    try {
      const job = jobId('pool');
      await master.registerJob({ jobId: job });
      const descriptor = await master.registerPartitionWithProducer({
        jobId: job,
        partition: { resultId: intermediateResultId('r'), partitionId: resultPartitionId('r', 0), partitionIndex: 0, partitionType: 'BLOCKING', numberOfSubpartitions: 1 },
        producer: { producerId: executionAttemptId(executionVertexId('v', 0), 0), attempt: 0, taskExecutorId: taskExecutorId('t') },
      });
      const writer = await env.createResultPartitionWriter({ descriptor });
      for (let i = 0; i < 2000; i++) if (!writer.emitRecord(new Uint8Array(500).fill(i & 0xff), 0)) await writer.ready();
      await writer.finish();
      await writer.close();
      const read = async (stopAfter: number): Promise<number> => {
        const gate = await env.createInputGate({ jobId: job, inputs: [descriptor], subpartitions: { start: 0, end: 0 } });
        let records = 0;
        let batches = 0;
        for (let batch = await gate.readBatch(); batch !== null && batches < stopAfter; batch = await gate.readBatch(), batches++) {
          if (batch.kind === 'records') records += batch.records.length;
        }
        await gate.close();
        return records;
      };
      readBuffers.clear();
      assert.equal(await read(Infinity), 2000);
      const idle = readBuffers.idleBytes;
      assert.ok(idle > 0, 'buffers back in the pool once the input ended');
      readBuffers.clear();
      await read(1);
      assert.ok(readBuffers.idleBytes > 0, 'buffers back in the pool once the gate closed in the middle');
      assert.equal(await read(Infinity), 2000, 'a gate after them reads everything');
      readBuffers.clear();
    } finally {
      await env.close();
      await master.close();
    }
  });
});
