import { strict as assert } from 'node:assert';
import { describe, it } from 'node:test';
import { type ResultPartitionType, taskExecutorId } from '@weft/shuffle-api';
import { makeRecord, parseRecord, registerPartition } from '@weft/shuffle-api/testing';
import { createMemoryShuffleServiceFactory } from '@weft/shuffle-memory';
import { BlockingPartition } from '../src/blocking-partition.js';
import { BufferPool } from '../src/buffer-pool.js';

/**
 * Records every segment the shuffle allocates for a writer (pipelined types take them from the
 * partition's BufferPool, blocking ones from the BlockingPartition) while `body` runs.
 */
async function withAllocatedSegments(body: (segments: readonly Uint8Array[]) => Promise<void>): Promise<void> {
  const segments: Uint8Array[] = [];
  const poolAllocate = BufferPool.prototype.allocate;
  const blockingAllocate = BlockingPartition.prototype.allocate;
  BufferPool.prototype.allocate = function (this: BufferPool): Uint8Array {
    const segment = poolAllocate.call(this);
    segments.push(segment);
    return segment;
  };
  BlockingPartition.prototype.allocate = function (this: BlockingPartition): Uint8Array {
    const segment = blockingAllocate.call(this);
    segments.push(segment);
    return segment;
  };
  try {
    await body(segments);
  } finally {
    BufferPool.prototype.allocate = poolAllocate;
    BlockingPartition.prototype.allocate = blockingAllocate;
  }
}

/**
 * Writes 3 records, flush(), 2 more, finish() — so the consumer gets two partly filled buffers — and reads
 * them; for each record received, whether its bytes are a view into a segment the writer framed into.
 */
async function exchange(type: ResultPartitionType, segments: readonly Uint8Array[]): Promise<{ seq: number; inSegment: boolean; byteOffset: number }[]> {
  const factory = createMemoryShuffleServiceFactory();
  const master = factory.createShuffleMaster();
  await master.start();
  const env = factory.createShuffleEnvironment({ taskExecutorId: taskExecutorId('zero-copy') });
  try {
    const descriptor = await registerPartition(master, { jobId: `zero-copy-${type}`, resultId: 'zc', index: 0, type, subpartitions: 1 });
    const writer = await env.createResultPartitionWriter({ descriptor });
    const gate = await env.createInputGate({ jobId: descriptor.jobId, inputs: [descriptor], subpartitions: { start: 0, end: 0 } });
    try {
      for (let seq = 0; seq < 3; seq++) writer.emitRecord(makeRecord(0, 0, seq, 88), 0);
      writer.flush();
      for (let seq = 3; seq < 5; seq++) writer.emitRecord(makeRecord(0, 0, seq, 88), 0);
      await writer.finish();
      const out: { seq: number; inSegment: boolean; byteOffset: number }[] = [];
      for (let batch = await gate.readBatch(); batch !== null; batch = await gate.readBatch()) {
        if (batch.kind !== 'records') continue;
        // checked while the batch is current: views are valid until the next read
        for (const record of batch.records) {
          const parsed = parseRecord(record);
          assert.ok(parsed.intact);
          out.push({ seq: parsed.seq, inSegment: segments.some((s) => s.buffer === record.buffer), byteOffset: record.byteOffset });
        }
      }
      return out;
    } finally {
      await gate.close();
      await writer.close();
    }
  } finally {
    await env.close();
    await master.close();
  }
}

describe('zero copy in the in-memory shuffle', () => {
  for (const type of ['PIPELINED', 'PIPELINED_BOUNDED', 'BLOCKING', 'BLOCKING_PERSISTENT'] as const) {
    it(`hands a ${type} consumer views into the producer's own segments, flushed partial buffers included`, () =>
      withAllocatedSegments(async (segments) => {
        const received = await exchange(type, segments);
        assert.deepEqual(received.map((r) => r.seq), [0, 1, 2, 3, 4]);
        assert.deepEqual(
          received.map((r) => r.inSegment),
          [true, true, true, true, true],
          'every record must be a view into a segment the writer framed it into (same ArrayBuffer), not a copy',
        );
        // frames of 4 + 100 bytes from the start of each buffer: the views point into the frames themselves
        assert.deepEqual(received.map((r) => r.byteOffset), [4, 108, 212, 4, 108]);
      }),
    );
  }
});
