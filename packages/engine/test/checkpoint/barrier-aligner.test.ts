// The task side of barriers: what a blocked channel delivers while a checkpoint aligns is held back, in
// order, and handed on only after the checkpoint triggered (so the snapshot sees none of it) or was
// aborted; at-least-once never holds anything back.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { ShuffleEvent } from '@weft/shuffle-api';
import { BarrierAligner, CANCEL_CHECKPOINT_EVENT } from '../../src/runtime/barrier-aligner.js';

const barrier = (id: number): ShuffleEvent => ({ type: 'checkpoint-barrier', id, timestampMs: 1000 + id });
const END: ShuffleEvent = { type: 'end-of-partition' };

function aligner(mode: 'aligned' | 'at-least-once', channels: number) {
  const log: string[] = [];
  const a = new BarrierAligner({
    mode,
    channels,
    deliver: (values) => log.push(...values.map((v) => `record ${String(v)}`)),
    onCheckpoint: (id, ts) => log.push(`checkpoint ${id} @${ts}`),
    onAbort: (id, reason) => log.push(`abort ${id} ${reason}`),
  });
  return { a, log };
}

describe('BarrierAligner', () => {
  it('holds back what blocked channels deliver until the checkpoint triggers (DESIGN.md: 3 channels, B(1,c1) B(1,c2) B(1,c0))', () => {
    const { a, log } = aligner('aligned', 3);
    a.records(0, ['a0'], 0);
    a.event(1, barrier(1));
    a.records(1, ['b1', 'b2'], 0); // after c1's barrier: held
    a.records(0, ['a1'], 0); // c0 has not delivered the barrier: goes through
    a.event(2, barrier(1));
    a.records(2, ['c1'], 0);
    assert.equal(a.queued, 2);
    a.event(0, barrier(1));
    assert.deepEqual(log, ['record a0', 'record a1', 'checkpoint 1 @1001', 'record b1', 'record b2', 'record c1']);
    assert.equal(a.queued, 0);
    a.records(1, ['b3'], 0);
    assert.equal(log.at(-1), 'record b3');
  });

  it('keeps a held channel in order across a second checkpoint it had already reached', () => {
    const { a, log } = aligner('aligned', 2);
    a.event(0, barrier(1));
    a.records(0, ['x1'], 0);
    a.event(0, barrier(2)); // held behind x1, on the blocked channel
    a.records(0, ['x2'], 0);
    a.event(1, barrier(1));
    // checkpoint 1 triggers; x1 goes, then barrier 2 blocks channel 0 again and x2 stays held
    assert.deepEqual(log, ['checkpoint 1 @1001', 'record x1']);
    assert.equal(a.queued, 1);
    a.records(1, ['y1'], 0);
    a.event(1, barrier(2));
    assert.deepEqual(log, ['checkpoint 1 @1001', 'record x1', 'record y1', 'checkpoint 2 @1002', 'record x2']);
  });

  it('releases what it held when the checkpoint is aborted: an end of partition or a cancellation marker', () => {
    const { a, log } = aligner('aligned', 2);
    a.event(0, barrier(1));
    a.records(0, ['held'], 0);
    a.event(0, END); // held too: the channel is blocked
    a.event(1, END);
    assert.deepEqual(log, ['abort 1 END_OF_PARTITION', 'record held']);
    assert.equal(a.queued, 0);

    const second = aligner('aligned', 2);
    second.a.event(0, barrier(3));
    second.a.records(0, ['z'], 0);
    second.a.event(1, { type: 'user', name: CANCEL_CHECKPOINT_EVENT, payload: { checkpointId: 3 } });
    assert.deepEqual(second.log, ['abort 3 CANCELLATION_BARRIER', 'record z']);
  });

  it('at-least-once: never holds a record back, and triggers once every channel delivered the barrier', () => {
    const { a, log } = aligner('at-least-once', 2);
    a.event(0, barrier(1));
    a.records(0, ['after'], 0);
    assert.equal(a.queued, 0);
    a.event(1, barrier(1));
    assert.deepEqual(log, ['record after', 'checkpoint 1 @1001']);
  });
});
