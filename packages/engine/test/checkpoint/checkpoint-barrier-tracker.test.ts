// The at-least-once barrier tracker against Flink's own CheckpointBarrierTrackerTest cases (their
// sequences without the buffers; the checkpoint ids its CheckpointSequenceValidator expects, a negative one
// there being an abort — here `A<id>:<reason>`), plus the end-of-partition abort and the options checks.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { createCheckpointBarrierHandler, isEngineError, MAX_CHECKPOINTS_TO_TRACK } from '@weft/engine';
import { scripted } from './barrier-script.js';

describe('at-least-once barrier tracker (Flink CheckpointBarrierTracker)', () => {
  it('testSingleChannelWithSkippedBarriers: every barrier of one channel triggers, gaps and all', () => {
    const s = scripted('at-least-once', 1);
    s.feed('b1@0 b3@0 b4@0 b6@0 b7@0 b10@0');
    assert.deepEqual(s.log, ['T1', 'T3', 'T4', 'T6', 'T7', 'T10']);
  });

  it('testMultiChannelWithBarriers: triggers when every channel delivered, and never blocks a channel', () => {
    const s = scripted('at-least-once', 3);
    s.feed('b1@1 b1@2');
    assert.deepEqual([s.log, s.blocked()], [[], []]);
    s.feed('b1@0 b2@0 b2@1 b2@2 b3@2 b3@0 b3@1 b4@1 b4@2 b4@0');
    assert.deepEqual([s.log, s.blocked()], [['T1', 'T2', 'T3', 'T4'], []]);
  });

  it('testMultiChannelSkippingCheckpoints: checkpoint 3, overtaken by 4 everywhere, is dropped without a report', () => {
    const s = scripted('at-least-once', 3);
    s.feed('b1@1 b1@2 b1@0 b2@0 b2@1 b2@2 b3@2 b4@0 b4@1 b4@2');
    assert.deepEqual(s.log, ['T1', 'T2', 'T4']);
    s.feed('b3@0 b3@1'); // late barriers of the subsumed checkpoint: it is gone, they change nothing
    assert.deepEqual(s.log, ['T1', 'T2', 'T4']);
  });

  it('testCompleteCheckpointsOnLateBarriers: a later barrier does not discard a pending checkpoint', () => {
    const s = scripted('at-least-once', 3);
    s.feed('b2@1 b2@0 b2@2');
    s.feed('b3@1 b3@2');
    s.feed('b4@2 b4@1');
    s.feed('b3@0');
    s.feed('b4@0');
    s.feed('b5@1 b5@0 b5@2');
    s.feed('b6@1 b6@0');
    s.feed('b7@1 b7@2 b8@2 b8@1 b9@1');
    s.feed('b7@0 b9@2 b10@2');
    s.feed('b8@0 b9@0');
    s.feed('b10@0 b10@1');
    assert.deepEqual(s.log, ['T2', 'T3', 'T4', 'T5', 'T7', 'T8', 'T9', 'T10']);
  });

  it('testNextFirstCheckpointBarrierOvertakesCancellationBarrier: 1 aborted, 2 triggered with 2 s of alignment', () => {
    let now = 0;
    const s = scripted('at-least-once', 2, () => now);
    for (const event of ['b1@1', 'b2@1', 'c1@0', 'b2@0']) {
      s.feed(event);
      now += 1_000;
    }
    assert.deepEqual(s.log, ['A1:CANCELLATION_BARRIER', 'T2']);
    assert.equal(s.alignment.get(2), 2_000);
  });

  it('testSingleChannelAbortCheckpoint: 1, 2, −4, 5, −6', () => {
    const s = scripted('at-least-once', 1);
    s.feed('b1@0 b2@0 c4@0 b5@0 c6@0');
    assert.deepEqual(s.log, ['T1', 'T2', 'A4:CANCELLATION_BARRIER', 'T5', 'A6:CANCELLATION_BARRIER']);
  });

  it('testMultiChannelAbortCheckpoint: 1, −2, 3, −4, 5, −6', () => {
    const s = scripted('at-least-once', 3);
    s.feed('b1@1 b1@2 b1@0');
    s.feed('b2@0 b2@2 c2@1');
    s.feed('b3@1 b3@2 b3@0');
    s.feed('c4@1 b4@2 b4@0');
    s.feed('b5@2 b5@1 b5@0');
    s.feed('c6@1 c6@2 b6@0');
    assert.deepEqual(s.log, ['T1', 'A2:CANCELLATION_BARRIER', 'T3', 'A4:CANCELLATION_BARRIER', 'T5', 'A6:CANCELLATION_BARRIER']);
    assert.deepEqual(s.blocked(), []);
  });

  it('testInterleavedCancellationBarriers: each checkpoint aborted once', () => {
    const s = scripted('at-least-once', 3);
    s.feed('b1@0 c2@0 c1@1 c2@1 c1@2 c2@2');
    assert.deepEqual(s.log, ['A1:CANCELLATION_BARRIER', 'A2:CANCELLATION_BARRIER']);
    assert.equal(s.handler.latestCheckpointId, 2);
  });

  it('an end of partition aborts every pending checkpoint (checkpoints after tasks finish off); the rest align on the open channels', () => {
    const s = scripted('at-least-once', 3);
    s.feed('b1@0 b2@0 b2@1');
    s.feed('e@2');
    assert.deepEqual(s.log, ['A1:END_OF_PARTITION', 'A2:END_OF_PARTITION']);
    s.feed('b1@1 b3@0 b3@1');
    assert.deepEqual(s.log, ['A1:END_OF_PARTITION', 'A2:END_OF_PARTITION', 'T3']);
  });

  it(`tracks at most ${MAX_CHECKPOINTS_TO_TRACK} pending checkpoints: the oldest is dropped beyond them`, () => {
    const s = scripted('at-least-once', 2);
    for (let id = 1; id <= MAX_CHECKPOINTS_TO_TRACK + 1; id++) s.feed(`b${id}@0`);
    s.feed('b1@1 b2@1');
    assert.deepEqual(s.log, ['T2'], 'checkpoint 1 was no longer tracked; 2 still was');
  });

  it('refuses bad options and events on ended or unknown channels, naming the option or argument', () => {
    const refused = (field: string) => (error: unknown) => isEngineError(error, 'WEFT_ERR_INVALID_ARGUMENT') && error.context['field'] === field;
    const base = { mode: 'at-least-once' as const, channels: 2, onTrigger: () => {}, onAbort: () => {} };
    assert.throws(() => createCheckpointBarrierHandler({ ...base, channels: 0 }), refused('options.channels'));
    assert.throws(() => createCheckpointBarrierHandler({ ...base, channels: 1.5 }), refused('options.channels'));
    assert.throws(() => createCheckpointBarrierHandler({ ...base, mode: 'exactly' as never }), refused('options.mode'));
    assert.throws(() => createCheckpointBarrierHandler({ ...base, onAbort: undefined as never }), refused('options.onAbort'));
    assert.throws(() => createCheckpointBarrierHandler({ ...base, clock: 5 as never }), refused('options.clock'));
    assert.throws(() => createCheckpointBarrierHandler({ ...base, timeoutMs: 5 } as never), refused('options.timeoutMs'));
    const s = scripted('at-least-once', 2);
    s.feed('e@0');
    assert.throws(() => s.feed('b1@0'), refused('channel'));
    assert.throws(() => s.feed('b1@-1'), /bad script token/);
    assert.throws(() => s.handler.processBarrier(1, -1), refused('channel'));
    assert.throws(() => s.handler.processCancellation(1.5, 1), refused('checkpointId'));
  });
});
