// PIPELINED_APPROXIMATE's partial-record cleanup (Flink's PipelinedApproximateSubpartitionTest, on Weft's
// framing): records framed by the real RecordFramer into 16-byte buffers (a 4-byte length header each),
// a reader that goes away, and a new one that must get whole records only. The layouts are worked out
// by hand in each case.
import { strict as assert } from 'node:assert';
import { describe, it } from 'node:test';
import { END_OF_PARTITION, FloatingCredits, RecordDeframer, RecordFramer, taskExecutorId } from '@weft/shuffle-api';
import { drain, emitAll, makeRecord, parseRecord, registerPartition } from '@weft/shuffle-api/testing';
import { createMemoryShuffleServiceFactory } from '@weft/shuffle-memory';
import { BufferPool } from '../src/buffer-pool.js';
import { CreditedChannelReader } from '../src/credited-channel-reader.js';
import { PipelinedPartition } from '../src/pipelined-partition.js';
import { PipelinedSubpartition } from '../src/pipelined-subpartition.js';

const SIZE = 16;

function setUp(capacity = 64, replayBytes = 0) {
  const pool = new BufferPool(SIZE, capacity);
  const subpartition = new PipelinedSubpartition(pool, true, replayBytes);
  const framer = new RecordFramer(SIZE, () => pool.allocate(), (segment, length, partialRecordLength) => subpartition.add({ kind: 'data', segment, length, partialRecordLength }));
  const attach = (resumeFrom?: number) => {
    const reader = new CreditedChannelReader(subpartition, pool, 100, new FloatingCredits(0), () => {});
    assert.equal(subpartition.subscribe(reader, resumeFrom), true);
    const deframer = new RecordDeframer(1 << 20, 'p#0');
    /**
     * The whole records received so far (their first bytes, as numbers), whether the end came, and the
     * position a `channel-resumed` event gave (only a reader after one that went away gets one, first).
     */
    const drain = (): { records: number[]; ended: boolean; resumedAt?: number } => {
      const out: Uint8Array[] = [];
      let ended = false;
      let resumedAt: number | undefined;
      for (let e = reader.poll(); e !== undefined; e = reader.poll()) {
        if (e.kind === 'data') deframer.push(e.segment.subarray(0, e.length), out);
        if (e.kind === 'event' && e.event.type === 'end-of-partition') ended = true;
        if (e.kind === 'event' && e.event.type === 'channel-resumed') {
          assert.equal(out.length, 0, 'channel-resumed comes before any record');
          resumedAt = e.event.recordPosition;
        }
        reader.recycle(e);
      }
      return { records: out.map((r) => (r.length === 0 ? -1 : (r[0] as number))), ended, ...(resumedAt === undefined ? {} : { resumedAt }) };
    };
    return { reader, drain };
  };
  /** A record of `length` bytes, each `tag`. */
  const write = (tag: number, length: number): void => framer.write(new Uint8Array(length).fill(tag));
  return { pool, subpartition, framer, attach, write };
}

describe('PIPELINED_APPROXIMATE subpartition', () => {
  it('serves a new reader from the next buffer when it starts with a whole record', () => {
    const { subpartition, framer, attach, write } = setUp();
    const first = attach();
    write(1, 12); // header + 12 bytes: buffer 0 is full
    write(2, 4); // buffer 0 handed over; record 2 opens buffer 1
    assert.deepEqual(first.drain(), { records: [1], ended: false }, 'the first reader gets no channel-resumed');
    first.reader.release();
    const second = attach();
    framer.flush(); // buffer 1: record 2, no partial record
    assert.deepEqual(second.drain(), { records: [2], ended: false, resumedAt: 1 }, 'record 2 is record 1 of the subpartition (from 0)');
    assert.deepEqual(subpartition.approximateLosses, { reconnects: 1, buffersDropped: 0, recordsDropped: 0, partialRecordsSkipped: 0, recordsLost: 0 });
  });

  it('skips the tail of a record partly sent and delivers the rest of that buffer', () => {
    const { subpartition, framer, attach, write } = setUp();
    const first = attach();
    write(1, 20); // buffer 0: header + 12 bytes (handed over); buffer 1: 8 bytes of tail
    assert.deepEqual(first.drain().records, [], 'record 1 is incomplete at the first reader');
    first.reader.release();
    const second = attach();
    write(2, 2); // buffer 1 at byte 8: header + 2 bytes
    framer.flush(); // buffer 1: 14 bytes, the first 8 the tail of record 1
    assert.deepEqual(second.drain(), { records: [2], ended: false, resumedAt: 1 }, 'record 1 began in buffer 0: record 2 is the second');
    assert.equal(subpartition.approximateLosses.partialRecordsSkipped, 1);
    assert.equal(subpartition.approximateLosses.recordsLost, 1, 'record 1: its head went to the gone reader, its tail was skipped');
  });

  it('drops what is written while no reader is attached, without ever blocking the producer', () => {
    const { pool, subpartition, framer, attach, write } = setUp(3);
    const first = attach();
    first.reader.release();
    for (let i = 0; i < 100; i++) {
      write(i, 12); // one full buffer each: handed over (and dropped) by the next write
      assert.ok(!pool.exhausted, `the pool never fills (record ${i})`);
    }
    const second = attach();
    write(200, 3);
    framer.flush();
    assert.deepEqual(second.drain(), { records: [99, 200], ended: false, resumedAt: 99 }, 'record 99 was still in the framer when the reader came: 99 records (0-98) before it');
    assert.deepEqual(subpartition.approximateLosses, { reconnects: 1, buffersDropped: 99, recordsDropped: 99, partialRecordsSkipped: 0, recordsLost: 99 });
  });

  it('cuts a tail off a buffer that ends with the header of the next record', () => {
    const { subpartition, framer, attach, write } = setUp();
    const first = attach();
    first.reader.release();
    write(1, 40); // buffers 0 (header + 12) and 1 (16) dropped; buffer 2: 12 bytes of tail, in the framer
    const second = attach();
    write(2, 2); // buffer 2 at byte 12: record 2's header fills it; its 2 bytes open buffer 3
    framer.flush();
    assert.deepEqual(second.drain(), { records: [2], ended: false, resumedAt: 1 }, "record 2's header and body, across two buffers; record 1 began before");
    assert.deepEqual(subpartition.approximateLosses, { reconnects: 1, buffersDropped: 2, recordsDropped: 1, partialRecordsSkipped: 1, recordsLost: 1 });
  });

  it('skips a buffer that is all tail whole, then serves the next', () => {
    const { subpartition, framer, attach, write } = setUp();
    const first = attach();
    first.reader.release();
    write(1, 28); // buffer 0 (header + 12) dropped; buffer 1: 16 bytes, all of them record 1's tail
    const second = attach();
    write(2, 4); // buffer 1 is full: handed over (all tail: skipped); record 2 opens buffer 2
    framer.flush();
    assert.deepEqual(second.drain(), { records: [2], ended: false, resumedAt: 1 });
    assert.deepEqual(subpartition.approximateLosses, { reconnects: 1, buffersDropped: 2, recordsDropped: 1, partialRecordsSkipped: 1, recordsLost: 1 });
  });

  it('counts what was sent to a reader but never read as lost when it goes away, and a record whose head it read once', () => {
    const { pool, subpartition, framer, attach, write } = setUp();
    const first = attach();
    write(1, 4); // buffer 0: header + 4 bytes
    write(2, 20); // record 2 begins at byte 8: buffer 0 full (handed over); buffer 1: 16 bytes, all its tail
    assert.deepEqual(first.drain().records, [1], 'buffer 0 read: record 1 whole, record 2 begun');
    write(3, 4); // buffer 1 handed over (unread); buffer 2: record 3 whole
    write(4, 12); // buffer 2: record 4's header + 4 bytes fill it (handed over, unread); the rest in the framer
    const inUse = pool.buffersInUse;
    first.reader.release();
    assert.ok(pool.buffersInUse < inUse, 'the unread buffers went back to the pool');
    // unread: buffer 1 (record 2's tail: its head was read) and buffer 2 (records 3 and 4 start in it)
    assert.deepEqual(subpartition.approximateLosses, { reconnects: 0, buffersDropped: 2, recordsDropped: 2, partialRecordsSkipped: 0, recordsLost: 3 });
  });

  it('takes a third reader after a second went away, and a fourth after one that got the end: the end again, no record', () => {
    const { subpartition, framer, attach, write } = setUp();
    attach().reader.release();
    attach().reader.release();
    const third = attach();
    write(7, 1);
    framer.flush();
    subpartition.add({ kind: 'event', event: END_OF_PARTITION });
    assert.deepEqual(third.drain(), { records: [7], ended: true, resumedAt: 0 }, 'nothing was written before record 7');
    third.reader.release();
    assert.equal(subpartition.isReleased, false, 'an approximate subpartition waits for a restarted consumer after its end too');
    // a consumer attempt restarted from a checkpoint (no log here): told where it resumes — after record 7,
    // which its state lacks if it read up to 0 (the consumer counts the difference lost) — then the end
    const fourth = attach();
    assert.deepEqual(fourth.drain(), { records: [], ended: true, resumedAt: 1 });
    assert.equal(subpartition.approximateLosses.reconnects, 3);
    fourth.reader.release();
    subpartition.release();
    const late = new CreditedChannelReader(subpartition, new BufferPool(SIZE, 4), 1, new FloatingCredits(0), () => {});
    assert.equal(subpartition.subscribe(late), false, 'no reader once the partition was released');
  });

  it('replays a finished subpartition from a restarted reader\'s position, then the end (upstream backup)', () => {
    const { subpartition, framer, attach, write } = setUp(64, 1 << 20);
    const first = attach();
    write(1, 3);
    framer.flush();
    subpartition.add({ kind: 'event', event: { type: 'checkpoint-barrier', id: 1, timestampMs: 0 } });
    for (const tag of [2, 3, 4]) write(tag, 3);
    framer.flush();
    subpartition.add({ kind: 'event', event: END_OF_PARTITION });
    assert.deepEqual(first.drain(), { records: [1, 2, 3, 4], ended: true });
    first.reader.release();
    // restored from checkpoint 1, whose barrier came after record 0: records 1-3 again, then the end
    const restarted = attach(1);
    assert.deepEqual(restarted.drain(), { records: [2, 3, 4], ended: true, resumedAt: 1 });
    assert.equal(subpartition.approximateLosses.recordsLost, 0);
  });

  it('a finished partition whose every end went to a reader keeps no idle buffers while it waits for a restarted one', () => {
    const partition = new PipelinedPartition({ numberOfSubpartitions: 2, bufferSizeBytes: SIZE, buffersPerPartition: 8, approximate: true, onFullyConsumed: () => assert.fail('an approximate partition is never consumed') });
    const pool = (partition as unknown as { pool: BufferPool }).pool;
    const readers = [0, 1].map((s) => partition.openReader(s, 100, new FloatingCredits(0), () => {})!);
    for (const s of [0, 1]) partition.addData(s, partition.allocate().fill(s), SIZE);
    partition.finish();
    const readAll = (s: number): void => {
      const reader = readers[s]!;
      for (let e = reader.poll(); e !== undefined; e = reader.poll()) reader.recycle(e);
      reader.release();
    };
    readAll(0);
    assert.ok(pool.idleBuffers > 0, 'subpartition 1 still being read: the pool keeps its buffers');
    readAll(1);
    assert.equal(pool.idleBuffers, 0);
    // a restarted reader is still served its end
    const restarted = partition.openReader(1, 100, new FloatingCredits(0), () => {})!;
    const kinds: string[] = [];
    for (let e = restarted.poll(); e !== undefined; e = restarted.poll()) kinds.push(e.kind === 'event' ? e.event.type : e.kind);
    assert.deepEqual(kinds, ['channel-resumed', 'end-of-partition']);
  });

  it('a plain pipelined subpartition refuses a second reader after the first went away', () => {
    const pool = new BufferPool(SIZE, 8);
    const subpartition = new PipelinedSubpartition(pool);
    const reader = new CreditedChannelReader(subpartition, pool, 1, new FloatingCredits(0), () => {});
    subpartition.subscribe(reader);
    reader.release();
    assert.equal(subpartition.subscribe(new CreditedChannelReader(subpartition, pool, 1, new FloatingCredits(0), () => {})), false);
  });
});

describe('PIPELINED_APPROXIMATE through the memory shuffle environment', () => {
  it('a consumer that closes early is replaced by a new gate on the same subpartition, which reads whole records only', async () => {
    // no upstream backup: what is dropped while no gate is attached is lost (and counted at once)
    const factory = createMemoryShuffleServiceFactory({ bufferSizeBytes: 64, buffersPerPartition: 4, approximateReplayBytes: 0 });
    const master = factory.createShuffleMaster();
    await master.start();
    const env = factory.createShuffleEnvironment({ taskExecutorId: taskExecutorId('t') });
    try {
      const descriptor = await registerPartition(master, { jobId: 'approx', resultId: 'r', index: 0, type: 'PIPELINED_APPROXIMATE', subpartitions: 1 });
      const writer = await env.createResultPartitionWriter({ descriptor });
      const gateRequest = { jobId: descriptor.jobId, inputs: [descriptor], subpartitions: { start: 0, end: 0 } };
      // records of 62 bytes in 64-byte buffers: almost every record spans two buffers
      const emit = async (from: number, to: number): Promise<void> => emitAll(writer, Array.from({ length: to - from }, (_, i) => ({ subpartition: 0, record: makeRecord(0, 0, from + i, 50) })));
      const first = await env.createInputGate(gateRequest);
      // the pool holds 4 buffers: the writer waits for the first gate, which reads a batch and leaves
      const emitting = emit(0, 60);
      const seen: number[] = [];
      while (seen.length === 0) {
        const batch = await first.readBatch();
        if (batch?.kind === 'records') for (const r of batch.records) seen.push(parseRecord(r).seq);
      }
      await first.close();
      await emitting; // nobody reads: dropped, and the writer never waits for a gone consumer
      assert.ok(env.approximateLosses!(descriptor.jobId).recordsDropped > 0, 'counted while the partition is still produced');
      const second = await env.createInputGate(gateRequest);
      const draining = drain(second);
      await emit(60, 70);
      await writer.finish();
      const [channel] = await draining;
      const records = (channel ?? []).flatMap((item) => (item.kind === 'record' ? [parseRecord(item.record)] : []));
      assert.ok(records.every((r) => r.intact && r.payloadBytes === 50 && r.producer === 0), 'every record whole');
      const seqs = records.map((r) => r.seq);
      assert.deepEqual(seqs, [...seqs].sort((a, b) => a - b), 'in order, none twice');
      // the new gate is told first where it starts: the seq of its first record (records are numbered from 0 as written)
      const [head] = channel ?? [];
      assert.deepEqual(head?.kind === 'event' ? head.event : head, { type: 'channel-resumed', recordPosition: seqs[0] }, 'channel-resumed first, at the first record it got');
      for (let seq = 61; seq < 70; seq++) assert.ok(seqs.includes(seq), `record ${seq}, written after the new gate came, is there`);
      const losses = env.approximateLosses!(descriptor.jobId);
      assert.equal(losses.reconnects, 1);
      // records neither gate got: dropped by the subpartition (counted), or in the first gate's hands when it left (not)
      const lost = seqs[0]! - seen.length;
      assert.ok(losses.recordsDropped > 0 && losses.recordsDropped <= lost, `${JSON.stringify(losses)}, ${lost} records lost`);
      assert.ok(seqs.every((s) => s >= 59), `nothing written while no gate was attached (the writer went on: it never waits for a gone consumer) but the record still being framed: ${seqs.join(',')}`);
      await writer.close();
      await second.close();
    } finally {
      await env.close();
      await master.close();
    }
  });
});

describe('PIPELINED_APPROXIMATE: the upstream backup (approximateReplayBytes)', () => {
  /**
   * A first gate reads records past checkpoint 1's barrier (after record 20) and leaves; the producer
   * learns checkpoint 1 completed and writes on while no gate is attached; a second gate asks to resume
   * from `resumeFrom`. Returns what the second gate got and what the subpartition counted lost.
   */
  async function resumeAfterLeaving(resumeFrom: number, replayBytes?: number) {
    const factory = createMemoryShuffleServiceFactory({ bufferSizeBytes: 64, buffersPerPartition: 4, ...(replayBytes === undefined ? {} : { approximateReplayBytes: replayBytes }) });
    const master = factory.createShuffleMaster();
    await master.start();
    const env = factory.createShuffleEnvironment({ taskExecutorId: taskExecutorId('t') });
    try {
      const descriptor = await registerPartition(master, { jobId: 'replay', resultId: 'r', index: 0, type: 'PIPELINED_APPROXIMATE', subpartitions: 1 });
      const writer = await env.createResultPartitionWriter({ descriptor });
      const gateRequest = { jobId: descriptor.jobId, inputs: [descriptor], subpartitions: { start: 0, end: 0 } };
      const emit = (from: number, to: number): Promise<void> => emitAll(writer, Array.from({ length: to - from }, (_, i) => ({ subpartition: 0, record: makeRecord(0, 0, from + i, 50) })));
      const first = await env.createInputGate(gateRequest);
      const emitting = (async () => {
        await emit(0, 20);
        writer.broadcastEvent({ type: 'checkpoint-barrier', id: 1, timestampMs: 0 });
        await emit(20, 60);
      })();
      const seen: number[] = [];
      while (seen.length < 25) {
        const batch = await first.readBatch();
        if (batch?.kind === 'records') for (const r of batch.records) seen.push(parseRecord(r).seq);
      }
      await first.close();
      writer.checkpointCompleted?.(1);
      await emitting;
      const second = await env.createInputGate({ ...gateRequest, resumeFrom: [resumeFrom] });
      const draining = drain(second);
      await emit(60, 70);
      await writer.finish();
      const [channel] = await draining;
      await writer.close();
      await second.close();
      const records = (channel ?? []).flatMap((item) => (item.kind === 'record' ? [parseRecord(item.record)] : []));
      assert.ok(records.every((r) => r.intact && r.payloadBytes === 50), 'every record whole');
      const [head] = channel ?? [];
      return { seen, seqs: records.map((r) => r.seq), head: head?.kind === 'event' ? head.event : head, losses: env.approximateLosses!(descriptor.jobId) };
    } finally {
      await env.close();
      await master.close();
    }
  }

  it('a new gate that resumes from a record the log holds gets every record from it on, in order, once; nothing counts as dropped', async () => {
    const { seen, seqs, head, losses } = await resumeAfterLeaving(22);
    assert.ok(seen.length >= 25 && seen.every((s, i) => s === i), 'the first gate read records 0.. in order');
    assert.deepEqual(head, { type: 'channel-resumed', recordPosition: 22 });
    assert.deepEqual(seqs, Array.from({ length: 70 - 22 }, (_, i) => 22 + i), 'records 22..69, the ones the first gate read after 22 included, and what was written while no gate was attached');
    assert.deepEqual(losses, { reconnects: 1, buffersDropped: 0, recordsDropped: 0, partialRecordsSkipped: 0, recordsLost: 0 });
  });

  it('a position before the completed checkpoint\'s barrier is no longer held: the new gate gets the next whole record written, and the drops count', async () => {
    const { seqs, head, losses } = await resumeAfterLeaving(5);
    assert.ok(seqs[0]! >= 59, `served from the live stream: ${seqs.join(',')}`);
    assert.deepEqual(head, { type: 'channel-resumed', recordPosition: seqs[0] });
    assert.ok(losses.recordsDropped > 0 && losses.recordsLost > 0, JSON.stringify(losses));
  });

  it('a log smaller than what was written since the barrier drops its oldest copies: the position went with them', async () => {
    const { seqs, losses } = await resumeAfterLeaving(22, 256);
    assert.ok(seqs[0]! >= 59, `served from the live stream: ${seqs.join(',')}`);
    assert.ok(losses.recordsLost > 0, JSON.stringify(losses));
  });
});

describe('PIPELINED_APPROXIMATE: the consumer side', () => {
  it('a failed producer: its channel gets channel-unavailable, drops its partial record, the other channel reads on, and a new attempt is picked up', async () => {
    const factory = createMemoryShuffleServiceFactory({ bufferSizeBytes: 64, buffersPerPartition: 8 });
    const master = factory.createShuffleMaster();
    await master.start();
    const env = factory.createShuffleEnvironment({ taskExecutorId: taskExecutorId('t') });
    try {
      const a = await registerPartition(master, { jobId: 'approx-down', resultId: 'a', index: 0, type: 'PIPELINED_APPROXIMATE', subpartitions: 1 });
      const b = await registerPartition(master, { jobId: 'approx-down', resultId: 'b', index: 0, type: 'PIPELINED_APPROXIMATE', subpartitions: 1 });
      const gate = await env.createInputGate({ jobId: a.jobId, inputs: [a, b], subpartitions: { start: 0, end: 0 } });
      const draining = drain(gate);
      const writerA = await env.createResultPartitionWriter({ descriptor: a });
      const writerB = await env.createResultPartitionWriter({ descriptor: b });
      // 62-byte records in 64-byte buffers: record 5's head is handed over when its tail opens the next buffer
      await emitAll(writerA, Array.from({ length: 6 }, (_, i) => ({ subpartition: 0, record: makeRecord(0, 0, i, 50) })));
      await writerA.fail(new Error('producer a failed'));
      await emitAll(writerB, Array.from({ length: 4 }, (_, i) => ({ subpartition: 0, record: makeRecord(1, 0, i, 50) })));
      await writerB.finish();
      // the producer's new attempt: a new registration of the same partition, found by the waiting channel
      const a2 = await registerPartition(master, { jobId: 'approx-down', resultId: 'a', index: 0, type: 'PIPELINED_APPROXIMATE', subpartitions: 1, attempt: 1 });
      const writerA2 = await env.createResultPartitionWriter({ descriptor: a2 });
      await emitAll(writerA2, Array.from({ length: 3 }, (_, i) => ({ subpartition: 0, record: makeRecord(0, 0, 100 + i, 50) })));
      await writerA2.finish();
      const [fromA, fromB] = await draining;
      const show = (items: typeof fromA) =>
        (items ?? []).map((item) => (item.kind === 'record' ? `${parseRecord(item.record).seq}${parseRecord(item.record).intact ? '' : '!'}` : item.event.type === 'channel-unavailable' ? `unavailable:${item.event.partialRecordBytes}` : item.event.type));
      // each 66-byte frame (header + 62) pushes the next one 2 bytes further into its buffer: record 5's
      // header starts at byte 10 of a buffer, so 64 - 14 = 50 of its bytes had arrived when a failed
      assert.deepEqual(show(fromA), ['0', '1', '2', '3', '4', 'unavailable:50', '100', '101', '102', 'end-of-partition']);
      assert.deepEqual(show(fromB), ['0', '1', '2', '3', 'end-of-partition'], 'the other channel is untouched');
      assert.deepEqual(gate.approximateLosses, { channelsUnavailable: 1, partialRecordsDiscarded: 1, partialRecordBytesDiscarded: 50, reconnects: 1 });
      await Promise.all([writerA.close(), writerB.close(), writerA2.close(), gate.close()]);
    } finally {
      await env.close();
      await master.close();
    }
  });
});
