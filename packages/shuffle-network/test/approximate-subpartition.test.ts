// PIPELINED_APPROXIMATE's partial-record cleanup on the network shuffle's producer side (Flink's
// PipelinedApproximateSubpartitionTest, on Weft's framing, as shuffle-memory's test does for its
// subpartition): records framed by the real RecordFramer into 16-byte buffers (a 4-byte length header
// each) go to a view standing for a consumer's connection; the view goes away (its connection closed), a
// new one subscribes and must get whole records only. The layouts are worked out by hand in each case.
import { strict as assert } from 'node:assert';
import { describe, it } from 'node:test';
import { END_OF_PARTITION, RecordDeframer, RecordFramer } from '@weft/shuffle-api';
import { BufferPool } from '../src/server/buffer-pool.js';
import { ProducedPartition } from '../src/server/produced-partition.js';
import { ProducedSubpartition, type SubpartitionEntry, type SubpartitionView } from '../src/server/produced-subpartition.js';

const SIZE = 16;

function setUp(capacity = 64, replayBytes = 0) {
  const pool = new BufferPool(SIZE, capacity);
  const subpartition = new ProducedSubpartition(pool, () => {}, true, replayBytes);
  const framer = new RecordFramer(SIZE, () => pool.allocate(), (segment, length, partialRecordLength) => subpartition.add({ kind: 'data', segment, length, partialRecordLength }));
  /** A consumer's view with plenty of credit; what it receives is deframed as a consumer would. */
  const attach = (resumeFrom?: number) => {
    const received: SubpartitionEntry[] = [];
    const view: SubpartitionView = {
      credit: 100,
      transmit(entry) {
        // a sent buffer's bytes are copied at once (the socket's write), and its segment goes back to the pool
        if (entry.kind === 'data') {
          received.push({ kind: 'data', segment: entry.segment.slice(0, entry.length), length: entry.length });
          pool.recycle(entry.segment);
        } else received.push(entry);
      },
    };
    assert.equal(subpartition.subscribe(view, resumeFrom), true);
    const deframer = new RecordDeframer(1 << 20, 'p#0');
    /**
     * The whole records received so far (their first bytes, as numbers), whether the end came, and the
     * position a `channel-resumed` event gave (only a consumer after one that went away gets one, first).
     */
    const drain = (): { records: number[]; ended: boolean; resumedAt?: number } => {
      const out: Uint8Array[] = [];
      let ended = false;
      let resumedAt: number | undefined;
      for (const e of received.splice(0)) {
        if (e.kind === 'data') deframer.push(e.segment.subarray(0, e.length), out);
        if (e.kind === 'event' && e.event.type === 'end-of-partition') ended = true;
        if (e.kind === 'event' && e.event.type === 'channel-resumed') {
          assert.equal(out.length, 0, 'channel-resumed comes before any record');
          resumedAt = e.event.recordPosition;
        }
      }
      return { records: out.map((r) => (r.length === 0 ? -1 : (r[0] as number))), ended, ...(resumedAt === undefined ? {} : { resumedAt }) };
    };
    return { view, drain, gone: () => subpartition.viewGone(view) };
  };
  /** A record of `length` bytes, each `tag`. */
  const write = (tag: number, length: number): void => framer.write(new Uint8Array(length).fill(tag));
  return { pool, subpartition, framer, attach, write };
}

describe('PIPELINED_APPROXIMATE network subpartition', () => {
  it('serves a new consumer from the next buffer when it starts with a whole record', () => {
    const { subpartition, framer, attach, write } = setUp();
    const first = attach();
    write(1, 12); // header + 12 bytes: buffer 0 is full
    write(2, 4); // buffer 0 handed over; record 2 opens buffer 1
    assert.deepEqual(first.drain(), { records: [1], ended: false }, 'the first consumer gets no channel-resumed');
    first.gone();
    const second = attach();
    framer.flush(); // buffer 1: record 2, no partial record
    assert.deepEqual(second.drain(), { records: [2], ended: false, resumedAt: 1 }, 'record 2 is record 1 of the subpartition (from 0)');
    assert.deepEqual(subpartition.approximateLosses, { reconnects: 1, buffersDropped: 0, recordsDropped: 0, partialRecordsSkipped: 0, recordsLost: 0 });
  });

  it('skips the tail of a record partly sent and delivers the rest of that buffer', () => {
    const { subpartition, framer, attach, write } = setUp();
    const first = attach();
    write(1, 20); // buffer 0: header + 12 bytes (sent); buffer 1: 8 bytes of tail
    assert.deepEqual(first.drain().records, [], 'record 1 is incomplete at the first consumer');
    first.gone();
    const second = attach();
    write(2, 2); // buffer 1 at byte 8: header + 2 bytes
    framer.flush(); // buffer 1: 14 bytes, the first 8 the tail of record 1
    assert.deepEqual(second.drain(), { records: [2], ended: false, resumedAt: 1 }, 'record 1 began in buffer 0: record 2 is the second');
    assert.equal(subpartition.approximateLosses.partialRecordsSkipped, 1);
    assert.equal(subpartition.approximateLosses.recordsLost, 1, 'record 1: its head went to the gone consumer, its tail was skipped');
  });

  it('drops what is queued and what is written while no consumer is attached, never filling the pool', () => {
    const { pool, subpartition, framer, attach, write } = setUp(3);
    const first = attach();
    first.view.credit = 0; // a slow consumer: buffers queue for credit
    write(50, 12);
    write(51, 12); // buffer of record 50 queued
    assert.equal(subpartition.backlogSize, 1);
    first.gone(); // its connection closed: the queued buffer is dropped
    assert.equal(subpartition.backlogSize, 0);
    for (let i = 0; i < 100; i++) {
      write(i, 12); // one full buffer each: handed over (and dropped) by the next write
      assert.ok(!pool.exhausted, `the pool never fills (record ${i})`);
    }
    const second = attach();
    write(200, 3);
    framer.flush();
    assert.deepEqual(second.drain(), { records: [99, 200], ended: false, resumedAt: 101 }, 'record 99 was still in the framer when the consumer came: 50, 51 and 0-98 before it');
    // queued at the gone view: record 50; written while none was attached: 51, 0..98
    assert.deepEqual(subpartition.approximateLosses, { reconnects: 1, buffersDropped: 101, recordsDropped: 101, partialRecordsSkipped: 0, recordsLost: 101 });
  });

  it('cuts a tail off a buffer that ends with the header of the next record', () => {
    const { subpartition, framer, attach, write } = setUp();
    attach().gone();
    write(1, 40); // buffers 0 (header + 12) and 1 (16) dropped; buffer 2: 12 bytes of tail, in the framer
    const second = attach();
    write(2, 2); // buffer 2 at byte 12: record 2's header fills it; its 2 bytes open buffer 3
    framer.flush();
    assert.deepEqual(second.drain(), { records: [2], ended: false, resumedAt: 1 }, "record 2's header and body, across two buffers; record 1 began before");
    assert.deepEqual(subpartition.approximateLosses, { reconnects: 1, buffersDropped: 2, recordsDropped: 1, partialRecordsSkipped: 1, recordsLost: 1 });
  });

  it('skips a buffer that is all tail whole, then serves the next', () => {
    const { subpartition, framer, attach, write } = setUp();
    attach().gone();
    write(1, 28); // buffer 0 (header + 12) dropped; buffer 1: 16 bytes, all of them record 1's tail
    const second = attach();
    write(2, 4); // buffer 1 is full: handed over (all tail: skipped); record 2 opens buffer 2
    framer.flush();
    assert.deepEqual(second.drain(), { records: [2], ended: false, resumedAt: 1 });
    assert.deepEqual(subpartition.approximateLosses, { reconnects: 1, buffersDropped: 2, recordsDropped: 1, partialRecordsSkipped: 1, recordsLost: 1 });
  });

  it('a new consumer replaces one whose connection was not seen to close yet; the old one going later changes nothing', () => {
    const { subpartition, framer, attach, write } = setUp();
    const first = attach();
    write(1, 20); // buffer 0 sent to the first consumer; 8 bytes of tail in the framer
    first.drain();
    const second = attach(); // the consumer's new attempt: replaces the first view
    first.gone(); // the old connection's close arrives after
    write(2, 2);
    framer.flush();
    assert.deepEqual(second.drain(), { records: [2], ended: false, resumedAt: 1 }, 'record 1 went to the replaced view');
    assert.deepEqual(first.drain().records, [], 'nothing more to the replaced view');
    assert.deepEqual(subpartition.approximateLosses, { reconnects: 1, buffersDropped: 0, recordsDropped: 0, partialRecordsSkipped: 1, recordsLost: 1 });
  });

  it('takes a third consumer after a second went away, and a fourth after one that got the end: the end again, no record', () => {
    const { subpartition, framer, attach, write } = setUp();
    attach().gone();
    attach().gone();
    const third = attach();
    write(7, 1);
    framer.flush();
    subpartition.add({ kind: 'event', event: END_OF_PARTITION });
    assert.deepEqual(third.drain(), { records: [7], ended: true, resumedAt: 0 }, 'nothing was written before record 7');
    assert.equal(subpartition.released, false, 'an approximate subpartition waits for a restarted consumer after its end too');
    third.gone();
    // a consumer attempt restarted from a checkpoint (no log here): told where it resumes (after record 7,
    // which the consumer counts lost if its state read up to 0), then the end
    const fourth = attach();
    assert.deepEqual(fourth.drain(), { records: [], ended: true, resumedAt: 1 });
    assert.equal(subpartition.approximateLosses.reconnects, 3);
    // one that subscribes while the view that got the end is still attached replaces it
    const fifth = attach();
    assert.deepEqual(fifth.drain(), { records: [], ended: true, resumedAt: 1 });
    subpartition.release();
    assert.equal(subpartition.subscribe({ credit: 1, transmit() {} }), false, 'no consumer once the partition was released');
  });

  it('replays a finished subpartition from a restarted consumer\'s position, then the end (upstream backup)', () => {
    const { subpartition, framer, attach, write } = setUp(64, 1 << 20);
    const first = attach();
    write(1, 3);
    framer.flush();
    subpartition.add({ kind: 'event', event: { type: 'checkpoint-barrier', id: 1, timestampMs: 0 } });
    for (const tag of [2, 3, 4]) write(tag, 3);
    framer.flush();
    subpartition.add({ kind: 'event', event: END_OF_PARTITION });
    assert.deepEqual(first.drain(), { records: [1, 2, 3, 4], ended: true });
    first.gone();
    // restored from checkpoint 1, whose barrier came after record 0: records 1-3 again, then the end
    const restarted = attach(1);
    assert.deepEqual(restarted.drain(), { records: [2, 3, 4], ended: true, resumedAt: 1 });
    assert.equal(subpartition.approximateLosses.recordsLost, 0);
  });

  it('replays a restored producer attempt from its first record, before any barrier (restored)', () => {
    const { subpartition, framer, attach, write } = setUp(64, 1 << 20);
    subpartition.restored();
    const first = attach();
    for (const tag of [1, 2, 3]) write(tag, 3);
    framer.flush();
    subpartition.add({ kind: 'event', event: END_OF_PARTITION });
    assert.deepEqual(first.drain(), { records: [1, 2, 3], ended: true });
    first.gone();
    // a consumer restored from the checkpoint this attempt restored resumes it at 0
    assert.deepEqual(attach(0).drain(), { records: [1, 2, 3], ended: true, resumedAt: 0 });
    assert.equal(subpartition.approximateLosses.recordsLost, 0);
  });

  it('a finished partition whose every end went to a consumer keeps no idle buffers while it waits for a restarted one', () => {
    const partition = new ProducedPartition({ numberOfSubpartitions: 2, bufferSizeBytes: SIZE, buffers: 8, approximate: true, onFullyConsumed: () => assert.fail('an approximate partition is never consumed') });
    const views = [0, 1].map((s) => {
      const view: SubpartitionView = { credit: 100, transmit: (entry) => void (entry.kind === 'data' && partition.pool.returnSegment(entry.segment)) };
      partition.subpartition(s).subscribe(view);
      return view;
    });
    partition.addData(0, partition.allocate().fill(1), SIZE);
    partition.subpartition(0).add({ kind: 'event', event: END_OF_PARTITION });
    assert.ok(partition.pool.idleBuffers > 0, 'subpartition 1 not ended: the pool keeps its buffers');
    partition.subpartition(1).add({ kind: 'event', event: END_OF_PARTITION });
    assert.equal(partition.pool.idleBuffers, 0);
    partition.subpartition(0).viewGone(views[0]!);
    const received: string[] = [];
    partition.subpartition(0).subscribe({ credit: 100, transmit: (entry) => void received.push(entry.kind === 'event' ? entry.event.type : entry.kind) });
    assert.deepEqual(received, ['channel-resumed', 'end-of-partition'], 'a restarted consumer is still served its end');
  });

  it('a plain pipelined subpartition is released when its consumer goes away', () => {
    const pool = new BufferPool(SIZE, 8);
    const subpartition = new ProducedSubpartition(pool, () => {});
    const view: SubpartitionView = { credit: 1, transmit() {} };
    subpartition.subscribe(view);
    subpartition.viewGone(view);
    assert.equal(subpartition.subscribe({ credit: 1, transmit() {} }), false);
  });
});
