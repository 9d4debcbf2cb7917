import { strict as assert } from 'node:assert';
import { readFile, readdir, writeFile } from 'node:fs/promises';
import { availableParallelism } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { describe, it } from 'node:test';
import { RecordFramer } from '@weft/shuffle-api';
import { type JobId, type ShuffleDescriptor, type ShuffleEnvironment, executionAttemptId, executionVertexId, intermediateResultId, jobId, resultPartitionId, taskExecutorId } from '@weft/shuffle-api';
import { BLOCK_KIND_DATA, LocalBlobStore, PartitionFileWriter, type RegionEntry, SubpartitionRangeReader, createRemoteShuffleServiceFactory } from '@weft/shuffle-remote';
import type { BlobReader } from '../src/storage/blob-store.js';
import { createTempDir } from '@weft/testkit';
import { readBuffers, writeBlocks } from '../src/format/buffer-pool.js';
import { ChecksumWorker } from '../src/format/checksum-worker.js';
import { SortBuffer } from '../src/shuffle-core/sort-buffer.js';

const KEY = 'job/edge%230/map%230%400.w1.wsm';

/** A record that checks itself: [index u32][index-derived bytes]. */
function record(index: number): Uint8Array {
  const r = new Uint8Array(40 + (index * 97) % 900);
  new DataView(r.buffer).setUint32(0, index, true);
  for (let i = 4; i < r.length; i++) r[i] = (index * 31 + i) & 0xff;
  return r;
}
function intact(r: Uint8Array): boolean {
  const index = new DataView(r.buffer, r.byteOffset, r.byteLength).getUint32(0, true);
  if (r.length !== 40 + (index * 97) % 900) return false;
  for (let i = 4; i < r.length; i++) if (r[i] !== ((index * 31 + i) & 0xff)) return false;
  return true;
}

/**
 * A local shuffle with small blocks and reads: `partitions` partitions of `subpartitions` written, partition p
 * with `count(p)` self-checking records round-robin; `body` reads them; the shuffle is closed after.
 */
async function withWrittenPartitions(
  dir: string,
  compression: 'none' | 'lz4',
  shape: { readonly partitions: number; readonly subpartitions: number; readonly count: (p: number) => number },
  body: (env: ShuffleEnvironment, job: JobId, descriptors: ShuffleDescriptor[]) => Promise<void>,
): Promise<void> {
  const factory = createRemoteShuffleServiceFactory({ store: `file://${dir}/data`, meta: `sqlite://${dir}/meta.db`, readBufferBytes: 16 * 1024, bufferSizeBytes: 8 * 1024, producerMemoryBytes: 256 * 1024, compression });
  const master = factory.createShuffleMaster();
  await master.start();
  const env = factory.createShuffleEnvironment({ taskExecutorId: taskExecutorId('t') });
  try {
    const job = jobId('ownership');
    await master.registerJob({ jobId: job });
    const descriptors: ShuffleDescriptor[] = [];
    for (let p = 0; p < shape.partitions; p++) {
      const descriptor = await master.registerPartitionWithProducer({
        jobId: job,
        partition: { resultId: intermediateResultId('r'), partitionId: resultPartitionId('r', p), partitionIndex: p, partitionType: 'BLOCKING', numberOfSubpartitions: shape.subpartitions },
        producer: { producerId: executionAttemptId(executionVertexId('v', p), 0), attempt: 0, taskExecutorId: taskExecutorId('t') },
      });
      const writer = await env.createResultPartitionWriter({ descriptor });
      for (let i = 0; i < shape.count(p); i++) if (!writer.emitRecord(record(p * 100_000 + i), i % shape.subpartitions)) await writer.ready();
      await writer.finish();
      await writer.close();
      descriptors.push(descriptor);
    }
    await body(env, job, descriptors);
  } finally {
    await env.close();
    await master.close();
  }
}

describe('buffer pool: who owns a buffer, under failure and concurrency', () => {
  it('SubpartitionRangeReader.release() while next() awaits its read does not hand that read\'s buffer to another owner', async () => {
    await using dir = await createTempDir('weft-review-pool-');
    const store = new LocalBlobStore({ dir: dir.path });
    await store.start();
    const writer = new PartitionFileWriter({ blob: await store.createWriter(KEY), numberOfSubpartitions: 1, compression: 'none' });
    const entries: RegionEntry[] = [];
    const framer = new RecordFramer(16 * 1024, () => new Uint8Array(16 * 1024), (segment, length) => entries.push({ kind: BLOCK_KIND_DATA, bytes: segment.subarray(0, length) }));
    for (let i = 0; i < 200; i++) framer.write(record(i));
    framer.flush();
    await writer.writeRegion({ subpartitions: [entries], rawBytes: entries.reduce((n, e) => n + e.bytes.length, 0), blocks: entries.length });
    const { location } = await writer.finish();
    const blob = await store.openReader(KEY);
    // a reader that copies in JavaScript (as S3 or HTTP do), whose data reads wait for `land`
    let land!: () => void;
    const landed = new Promise<void>((resolve) => (land = resolve));
    let asked!: () => void;
    const readAsked = new Promise<void>((resolve) => (asked = resolve));
    const slow: BlobReader = {
      async read(offset, length, into) {
        if (into === undefined) return blob.read(offset, length);
        asked();
        await landed;
        const bytes = await blob.read(offset, length);
        into.set(bytes);
        return into.subarray(0, length);
      },
      close: () => blob.close(),
    };
    readBuffers.clear();
    const reader = await SubpartitionRangeReader.open({ reader: slow, location, start: 0, end: 0, readBufferBytes: 64 * 1024, partitionId: 'edge#0' });
    const next = reader.next();
    next.catch(() => undefined);
    await readAsked;
    // released while the read next() waits for is still in flight: it lands after release() was called
    const released = reader.release();
    land();
    await released;
    // someone else takes a read buffer of that size from the process's pool, and owns it
    const capacity = (reader as unknown as { readCapacity: number }).readCapacity;
    const other = readBuffers.take(capacity, false);
    other.fill(0);
    await next.catch(() => undefined);
    await sleep(10);
    assert.ok(other.every((b) => b === 0), 'a buffer another owner took was written by the released reader\'s read in flight');
    await blob.close();
    readBuffers.clear();
    await store.close();
  });

  it('a SortBuffer discarded with regions in flight hands their blocks to writeBlocks when they come back (and stops counting them)', () => {
    writeBlocks.clear();
    const sort = new SortBuffer(2, 4096, 16 * 4096);
    for (let i = 0; i < 20; i++) sort.write(new Uint8Array(1000).fill(i), i % 2);
    const inFlight = sort.takeRegion().subpartitions.flatMap((e) => e ?? []).map((e) => e.buffer!);
    // the writer fails (abort: discard) while that region is being written; its blocks come back afterwards
    sort.discard();
    for (const block of inFlight) sort.recycle(block);
    assert.equal(sort.allocatedBytes, 0, 'a failed writer still counts blocks it no longer holds');
    assert.equal(writeBlocks.idleBytes, inFlight.length * 4096, 'the blocks went to the dead sort buffer\'s own pool, not to writeBlocks');
    writeBlocks.clear();
  });

  it('leastBusy never sends a read to a worker that cannot read files while another can', { skip: availableParallelism() < 2 ? 'one read worker' : false }, async () => {
    const a = ChecksumWorker.forStream(0);
    const b = ChecksumWorker.forStream(1);
    const broken = b as unknown as { broken: boolean };
    const before = broken.broken;
    broken.broken = true;
    const pending = a.compute([{ bytes: new Uint8Array(new SharedArrayBuffer(32 * 1024 * 1024)) }]);
    try {
      const picks = [ChecksumWorker.leastBusy(), ChecksumWorker.leastBusy(), ChecksumWorker.leastBusy()];
      assert.ok(picks.every((w) => w.readsFiles), 'a fresh read went to the broken worker (read and verified on the main thread) while a working one was there');
    } finally {
      await pending;
      broken.broken = before;
    }
  });

  it('records of every batch stay intact until the next readBatch: several gates at once, several inputs each, lz4 and raw, small reads', async () => {
    for (const compression of ['none', 'lz4'] as const) {
      await using dir = await createTempDir('weft-pool-gates-');
      await withWrittenPartitions(dir.path, compression, { partitions: 4, subpartitions: 3, count: (p) => 1500 + p * 300 }, async (env, job, descriptors) => {
        readBuffers.clear();
        const readGate = async (start: number, end: number, inputs: ShuffleDescriptor[]): Promise<number> => {
          const gate = await env.createInputGate({ jobId: job, inputs, subpartitions: { start, end } });
          let n = 0;
          try {
            for (let batch = await gate.readBatch(); batch !== null; batch = await gate.readBatch()) {
              if (batch.kind !== 'records') continue;
              // the consumer works a while (other gates read meanwhile), then checks what it was given
              await sleep(0);
              await new Promise((resolve) => setImmediate(resolve));
              for (const r of batch.records) assert.ok(intact(r), `a record of a batch changed before the next readBatch (${compression})`);
              n += batch.records.length;
            }
          } finally {
            await gate.close();
          }
          return n;
        };
        const counts = await Promise.all([readGate(0, 0, descriptors), readGate(1, 2, descriptors), readGate(0, 2, [...descriptors].reverse()), readGate(2, 2, descriptors)]);
        const total = descriptors.reduce((n, _, p) => n + 1500 + p * 300, 0);
        assert.equal(counts[2], total);
      });
    }
  });

  it('gates closed mid-read and gates failing on a corrupt block leave no write into idle pooled buffers', async () => {
    // every buffer given back is filled with 0xa5; a take finds the pattern intact, or something wrote into it while idle
    const pool = readBuffers as unknown as { give: (b: Uint8Array) => void; take: (n: number, shared: boolean) => Uint8Array };
    const give = pool.give.bind(readBuffers);
    const take = pool.take.bind(readBuffers);
    const writtenWhileIdle: number[] = [];
    pool.give = (b) => {
      b.fill(0xa5);
      give(b);
    };
    pool.take = (n, shared) => {
      const b = take(n, shared);
      if (!b.every((x) => x === 0xa5 || x === 0)) writtenWhileIdle.push(b.length);
      return b;
    };
    try {
      for (const compression of ['none', 'lz4'] as const) {
        await using dir = await createTempDir('weft-pool-close-');
        await withWrittenPartitions(dir.path, compression, { partitions: 3, subpartitions: 2, count: () => 2000 }, async (env, job, descriptors) => {
          readBuffers.clear();
          const failures: string[] = [];
          const readGate = async (stopAfter: number, inputs: ShuffleDescriptor[]): Promise<void> => {
            const gate = await env.createInputGate({ jobId: job, inputs, subpartitions: { start: 0, end: 1 } });
            let batches = 0;
            try {
              for (let batch = await gate.readBatch(); batch !== null && batches < stopAfter; batch = await gate.readBatch(), batches++) {
                if (batch.kind === 'records') for (const r of batch.records) assert.ok(intact(r));
              }
            } catch (error) {
              // a corrupt input
              failures.push((error as { code?: string }).code ?? String(error));
            } finally {
              // closed while its read ahead is in flight
              await gate.close();
            }
          };
          await Promise.all([1, 2, 3, 5, 8, 13, 40, Infinity].map((k, i) => readGate(k, i % 2 === 0 ? descriptors : [...descriptors].reverse())));
          // corrupt one byte in the middle of each data object, and read again
          const files: string[] = [];
          const walk = async (d: string): Promise<void> => {
            for (const e of await readdir(d, { withFileTypes: true })) {
              if (e.isDirectory()) await walk(join(d, e.name));
              else files.push(join(d, e.name));
            }
          };
          await walk(join(dir.path, 'data'));
          for (const f of files) {
            const bytes = await readFile(f);
            bytes[Math.floor(bytes.length / 3)]! ^= 0x40;
            await writeFile(f, bytes);
          }
          assert.deepEqual(failures, []);
          await Promise.all([2, 5, Infinity, Infinity].map((k) => readGate(k, descriptors)));
          assert.ok(failures.length >= 2 && failures.every((c) => c === 'SHF_ERR_DATA_CORRUPTED'), String(failures));
          await sleep(50);
          const idle = (readBuffers as unknown as { idle: Map<string, Uint8Array[]> }).idle;
          for (const [size, list] of idle) for (const b of list) assert.ok(b.every((x) => x === 0xa5), `an idle read buffer (${size}) was written while in the pool (${compression})`);
          assert.deepEqual(writtenWhileIdle, [], `buffers taken after being written while idle (${compression})`);
        });
      }
    } finally {
      delete (readBuffers as unknown as Record<string, unknown>)['give'];
      delete (readBuffers as unknown as Record<string, unknown>)['take'];
      readBuffers.clear();
    }
  });
});
