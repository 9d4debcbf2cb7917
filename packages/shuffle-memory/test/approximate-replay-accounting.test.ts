// The upstream backup's accounting and memory (an independent review's findings on 255e487/fff5424; each
// case failed there). Records are framed by the real RecordFramer into 16-byte buffers; each record
// carries its index in its first 4 bytes, so what a reader got whole is checked against an oracle
// independent of the counters.
import { strict as assert } from 'node:assert';
import { describe, it } from 'node:test';
import { FloatingCredits, RecordDeframer, RecordFramer, taskExecutorId } from '@weft/shuffle-api';
import { emitAll, makeRecord, registerPartition } from '@weft/shuffle-api/testing';
import { createMemoryShuffleServiceFactory } from '@weft/shuffle-memory';
import { BufferPool } from '../src/buffer-pool.js';
import { CreditedChannelReader } from '../src/credited-channel-reader.js';
import { PipelinedSubpartition } from '../src/pipelined-subpartition.js';

const SIZE = 16;

function setUp(replayBytes: number) {
  const pool = new BufferPool(SIZE, 1024);
  const sub = new PipelinedSubpartition(pool, true, replayBytes);
  const framer = new RecordFramer(SIZE, () => pool.allocate(), (segment, length, partialRecordLength) => sub.add({ kind: 'data', segment, length, partialRecordLength }));
  let written = 0;
  /** Record `written` with `length` bytes (>= 4). */
  const write = (length: number): void => {
    const r = new Uint8Array(length);
    new DataView(r.buffer).setUint32(0, written++, true);
    framer.write(r);
  };
  const gotWhole = new Set<number>();
  /** A reader with `credits` exclusive credits; `read()` polls everything it was sent and returns the record indexes. */
  const attach = (credits: number, resumeFrom?: number) => {
    const reader = new CreditedChannelReader(sub, pool, credits, new FloatingCredits(0), () => {});
    assert.equal(sub.subscribe(reader, resumeFrom), true);
    const deframer = new RecordDeframer(1 << 20);
    const read = (): { records: number[]; resumedAt?: number } => {
      const out: Uint8Array[] = [];
      let resumedAt: number | undefined;
      for (let e = reader.poll(); e !== undefined; e = reader.poll()) {
        if (e.kind === 'data') deframer.push(e.segment.subarray(0, e.length), out);
        if (e.kind === 'event' && e.event.type === 'channel-resumed') resumedAt = e.event.recordPosition;
        reader.recycle(e);
      }
      const records = out.map((r) => new DataView(r.buffer, r.byteOffset, r.byteLength).getUint32(0, true));
      for (const r of records) gotWhole.add(r);
      return { records, ...(resumedAt === undefined ? {} : { resumedAt }) };
    };
    return { reader, read };
  };
  const barrier = (id: number): void => {
    framer.flush();
    sub.add({ kind: 'event', event: { type: 'checkpoint-barrier', id, timestampMs: 0 } });
  };
  return { pool, sub, framer, write, attach, barrier, gotWhole, written: () => written };
}

/**
 * Reader A gets records 0..3 whole (checkpoint 1's barrier at 0) and leaves; records 4 and 5 are handed
 * over while no reader is attached (dropped); reader B, restored at 0, is queued the replay but has no
 * credit, and leaves before any of it was delivered. Record 6 is in the framer.
 */
function undeliveredReplay() {
  const fixture = setUp(1 << 20);
  const { write, attach, barrier } = fixture;
  const a = attach(100);
  barrier(1);
  for (let i = 0; i < 5; i++) write(12);
  assert.deepEqual(a.read().records, [0, 1, 2, 3]);
  a.reader.release();
  write(12);
  write(12);
  attach(0, 0).reader.release();
  return fixture;
}

describe('upstream backup: accounting', () => {
  it('replayed copies a reader left unread are not counted as lost when an earlier reader got those records whole', () => {
    // log of 6 buffers; every record is 12 bytes framed + 4 = one full 16-byte buffer
    const { sub, write, attach, barrier, gotWhole, written } = setUp(6 * SIZE);
    const a = attach(100);
    barrier(1); // checkpoint 1 at position 0; the consumer's restored state read up to 0
    for (let i = 0; i < 4; i++) write(12);
    write(12); // hands record 3's buffer over
    assert.deepEqual(a.read().records, [0, 1, 2, 3], 'reader A got records 0..3 whole');
    a.reader.release(); // record 4 is not handed over yet (in the framer)
    // attempt B restores checkpoint 1 (position 0): replayed 0..3, queued (no credit yet), then it fails too
    const b = attach(0, 0);
    b.reader.release();
    // the producer writes on while no reader is attached: the log overflows, position 0 goes
    for (let i = 0; i < 6; i++) write(12);
    // attempt C restores checkpoint 1 again: position 0 is no longer held, it is served from the next record written
    const c = attach(100, 0);
    write(12);
    const got = c.read();
    assert.equal(got.resumedAt, 10, 'served from the live stream: record 10 (record 11 is still in the framer)');
    assert.deepEqual(got.records, [10]);
    const neverWhole = written() - 1 - gotWhole.size;
    // records 4..9 went to no reader: 6. Records 0..3 went to reader A whole; B's replayed copies of them are no loss.
    assert.equal(neverWhole, 6);
    assert.equal(sub.approximateLosses.recordsLost, neverWhole, `recordsLost counts records a reader got whole: ${JSON.stringify(sub.approximateLosses)}`);
    assert.equal(sub.approximateLosses.recordsDropped, neverWhole, 'recordsDropped: records whose first byte was in a buffer no reader got — replay copies counted again');
  });

  it('drops undone by a replay stay counted while that replay was never delivered, and are undone by the next one that is', () => {
    const { sub, write, attach, gotWhole, written } = undeliveredReplay();
    assert.equal(sub.approximateLosses.recordsLost, 0, 'undecided while a replay may come');
    const c = attach(100, 0);
    assert.deepEqual(c.read().records, [0, 1, 2, 3, 4, 5], 'the replay from 0: every record up to the live one');
    assert.equal(written() - 1 - gotWhole.size, 0, 'every record handed over reached a reader whole');
    assert.deepEqual([sub.approximateLosses.recordsLost, sub.approximateLosses.recordsDropped], [0, 0], JSON.stringify(sub.approximateLosses));
  });

  it('drops since a reader went away are lost when the replay meant for the next one was never delivered and the one after falls back', () => {
    const { sub, write, attach, gotWhole, written } = undeliveredReplay();
    const c = attach(100); // no position to resume from: served from the next whole record
    write(12);
    assert.deepEqual(c.read().records, [6]);
    assert.equal(written() - 1 - gotWhole.size, 2, 'records 4 and 5');
    assert.equal(sub.approximateLosses.recordsLost, 2, JSON.stringify(sub.approximateLosses));
  });

  it('two readers leaving in a row count a skipped tail once (also with approximateReplayBytes 0)', () => {
    const { sub, write, attach, gotWhole, written } = setUp(0);
    const a = attach(100);
    write(10); // record 0: 14 bytes of buffer 0
    write(15); // record 1: buffer 0 handed over (no room for a header); record 1 fills buffer 1 (handed over), 3-byte tail in buffer 2
    a.reader.release(); // A read nothing: buffers 0 and 1 (records 0 and 1 start there) are dropped and counted
    const b = attach(100);
    b.reader.release(); // B leaves before any data came
    const c = attach(100);
    write(7);
    write(7); // buffer 2 handed over: record 1's tail, skipped for C, then record 2
    c.read();
    const neverWhole = written() - 1 - gotWhole.size; // record 3 is still in the framer
    assert.equal(neverWhole, 2, 'records 0 and 1');
    assert.equal(sub.approximateLosses.recordsLost, neverWhole, `record 1 is counted with its dropped buffer and again as a skipped tail: ${JSON.stringify(sub.approximateLosses)}`);
  });
});

describe('upstream backup: memory', () => {
  it("a replay is copied into the partition's pool only as it is sent: at most one buffer over the pool, and the writer flows again once it is read", async () => {
    const factory = createMemoryShuffleServiceFactory({ bufferSizeBytes: 64, buffersPerPartition: 4, flushTimeoutMs: 0 });
    const master = factory.createShuffleMaster();
    await master.start();
    const env = factory.createShuffleEnvironment({ taskExecutorId: taskExecutorId('t') });
    try {
      const descriptor = await registerPartition(master, { jobId: 'pool', resultId: 'r', index: 0, type: 'PIPELINED_APPROXIMATE', subpartitions: 2 });
      const writer = await env.createResultPartitionWriter({ descriptor });
      const gate0 = { jobId: descriptor.jobId, inputs: [descriptor], subpartitions: { start: 0, end: 0 } };
      const healthy = await env.createInputGate({ jobId: descriptor.jobId, inputs: [descriptor], subpartitions: { start: 1, end: 1 } });
      const first = await env.createInputGate(gate0);
      writer.broadcastEvent({ type: 'checkpoint-barrier', id: 1, timestampMs: 0 });
      // 200 records of 50 bytes (one 64-byte buffer each) to subpartition 0, read by the first gate
      const reading = (async () => {
        let n = 0;
        while (n < 200) {
          const batch = await first.readBatch();
          if (batch?.kind === 'records') n += batch.records.length;
        }
      })();
      await emitAll(writer, Array.from({ length: 200 }, (_, i) => ({ subpartition: 0, record: makeRecord(0, 0, i, 50) })));
      await reading;
      await first.close();
      assert.ok(writer.metrics.bufferedBytes <= writer.metrics.memoryLimitBytes, 'before: within the pool');
      // the restarted consumer resumes from checkpoint 1 (position 0): 200 buffers replayed
      const second = await env.createInputGate({ ...gate0, resumeFrom: [0] });
      const { bufferedBytes, memoryLimitBytes } = writer.metrics;
      assert.ok(bufferedBytes <= memoryLimitBytes + 64, `after the replay's subscribe the pool holds ${bufferedBytes} bytes, its limit is ${memoryLimitBytes} (+ one buffer)`);
      const replayed: Uint8Array[] = [];
      while (replayed.length < 200) {
        const batch = await second.readBatch();
        if (batch?.kind === 'records') replayed.push(...batch.records.map((r) => r.slice()));
        assert.ok(writer.metrics.bufferedBytes <= memoryLimitBytes + 64, 'while the replay is read');
      }
      assert.deepEqual(replayed, Array.from({ length: 200 }, (_, i) => makeRecord(0, 0, i, 50)), 'the replay: records 0..199 in order, whole');
      assert.equal(writer.emitRecord(makeRecord(0, 1, 0, 50), 1), true, 'the healthy subpartition 1 is writable once the replay was read');
      await second.close();
      await healthy.close();
      await writer.close();
    } finally {
      await env.close();
      await master.close();
    }
  });
});
