// The aligned exactly-once barrier handler against DESIGN.md's worked example and Flink's own
// AlignedCheckpointsTest cases (the sequences without their buffers, which a handler never sees; the
// blocked channels and notifications those tests assert, at the same points).
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { isEngineError } from '@weft/engine';
import { scripted } from './barrier-script.js';

describe('aligned barrier handler (Flink SingleCheckpointBarrierHandler.aligned)', () => {
  it("DESIGN.md's worked example: B(1,c1) B(1,c2) block 1 and 2; B(1,c0) triggers 1 and unblocks; B(3,c2) subsumes 2", () => {
    const s = scripted('aligned', 3);
    s.feed('b1@1 b1@2');
    assert.deepEqual(s.blocked(), [1, 2]);
    assert.deepEqual(s.log, []);
    s.feed('b1@0');
    assert.deepEqual(s.log, ['T1']);
    assert.deepEqual(s.blocked(), []);
    s.feed('b2@1 b2@0 b3@2');
    assert.deepEqual(s.log, ['T1', 'A2:SUBSUMED']);
    assert.deepEqual(s.blocked(), [2]);
    assert.equal(s.handler.latestCheckpointId, 3);
  });

  it('testMultiChannelWithBarriers: four checkpoints in turn, nothing blocked after each', () => {
    const s = scripted('aligned', 3);
    s.feed('b1@1 b1@2');
    assert.deepEqual(s.blocked(), [1, 2]);
    s.feed('b1@0');
    assert.deepEqual([s.log, s.blocked()], [['T1'], []]);
    s.feed('b2@0 b2@1 b2@2');
    assert.deepEqual([s.log, s.blocked()], [['T1', 'T2'], []]);
    s.feed('b3@2 b3@0 b3@1');
    s.feed('b4@1 b4@2 b4@0');
    assert.deepEqual([s.log, s.blocked()], [['T1', 'T2', 'T3', 'T4'], []]);
    s.feed('e@0 e@1 e@2');
    assert.deepEqual(s.log, ['T1', 'T2', 'T3', 'T4']);
  });

  it('testMultiChannelJumpingOverCheckpoint: 2 and 3 subsumed by later barriers, 4 aborted by an end of partition', () => {
    const s = scripted('aligned', 3);
    s.feed('b1@1');
    assert.equal(s.handler.latestCheckpointId, 1);
    s.feed('b1@2 b1@0');
    assert.deepEqual(s.blocked(), []);
    s.feed('b2@1');
    assert.equal(s.handler.latestCheckpointId, 2);
    s.feed('b2@0');
    assert.deepEqual(s.blocked(), [0, 1]);
    s.feed('b3@2');
    assert.equal(s.handler.latestCheckpointId, 3);
    assert.deepEqual(s.blocked(), [2]);
    s.feed('b3@0');
    assert.deepEqual(s.blocked(), [0, 2]);
    s.feed('b4@1');
    assert.equal(s.handler.latestCheckpointId, 4);
    assert.deepEqual(s.blocked(), [1]);
    s.feed('e@0');
    assert.deepEqual(s.blocked(), []);
    s.feed('e@2 e@1');
    assert.deepEqual(s.log, ['T1', 'A2:SUBSUMED', 'A3:SUBSUMED', 'A4:END_OF_PARTITION']);
  });

  it('testSingleChannelWithBarriers: every barrier of one channel triggers at once, alignment 0', () => {
    const s = scripted('aligned', 1, () => 1_000 * s.log.length);
    s.feed('b1@0 b2@0 b3@0 b4@0 b5@0 b6@0 e@0');
    assert.deepEqual(s.log, ['T1', 'T2', 'T3', 'T4', 'T5', 'T6']);
    assert.deepEqual([...s.alignment.values()], [0, 0, 0, 0, 0, 0]);
    assert.deepEqual(s.blocked(), []);
  });

  it('testMissingCancellationBarriers: a newer cancellation aborts it (only the cancelled id is reported), stale markers are ignored', () => {
    const s = scripted('aligned', 2);
    s.feed('b1@0');
    assert.deepEqual(s.blocked(), [0]);
    s.feed('c3@1 c2@0 c3@0');
    assert.deepEqual(s.log, ['A3:CANCELLATION_BARRIER']);
    assert.deepEqual(s.blocked(), []);
    assert.equal(s.handler.latestCheckpointId, 3);
  });

  it('testStartAlignmentWithClosedChannels: ended channels do not count toward alignment', () => {
    const s = scripted('aligned', 4);
    s.feed('e@2 e@1 b2@3 b2@0');
    assert.deepEqual([s.log, s.blocked(), s.handler.latestCheckpointId], [['T2'], [], 2]);
    s.feed('b3@0 b3@3');
    assert.deepEqual([s.log, s.blocked(), s.handler.latestCheckpointId], [['T2', 'T3'], [], 3]);
    s.feed('e@0 b4@3');
    assert.deepEqual([s.log, s.blocked(), s.handler.latestCheckpointId], [['T2', 'T3', 'T4'], [], 4]);
    s.feed('e@3');
  });

  it('testEndOfStreamWhileCheckpoint: an end of partition during alignment aborts it and unblocks every channel', () => {
    const s = scripted('aligned', 3);
    s.feed('b1@0 b1@1 b1@2');
    assert.deepEqual([s.log, s.blocked()], [['T1'], []]);
    s.feed('b2@2');
    assert.equal(s.handler.latestCheckpointId, 2);
    s.feed('b2@0');
    assert.deepEqual(s.blocked(), [0, 2]);
    s.feed('e@1');
    assert.deepEqual([s.log, s.blocked()], [['T1', 'A2:END_OF_PARTITION'], []]);
    s.feed('e@2 e@0');
    assert.deepEqual(s.log, ['T1', 'A2:END_OF_PARTITION']);
  });

  it('testSingleChannelAbortCheckpoint: triggers 1, 2, 5; cancellations abort 4 and 6', () => {
    const s = scripted('aligned', 1);
    s.feed('b1@0 b2@0 c4@0');
    assert.equal(s.handler.latestCheckpointId, 4);
    s.feed('b5@0');
    assert.equal(s.handler.latestCheckpointId, 5);
    s.feed('c6@0');
    assert.equal(s.handler.latestCheckpointId, 6);
    assert.deepEqual(s.log, ['T1', 'T2', 'A4:CANCELLATION_BARRIER', 'T5', 'A6:CANCELLATION_BARRIER']);
    assert.deepEqual(s.blocked(), []);
  });

  it('testMultiChannelAbortCheckpoint: cancelled on the last barrier, on the first, and by several markers', () => {
    const s = scripted('aligned', 3);
    s.feed('b1@1');
    assert.deepEqual(s.blocked(), [1]);
    s.feed('b1@2');
    assert.deepEqual(s.blocked(), [1, 2]);
    s.feed('b1@0');
    assert.deepEqual(s.blocked(), []);
    s.feed('b2@0');
    assert.deepEqual(s.blocked(), [0]);
    s.feed('b2@2');
    assert.deepEqual(s.blocked(), [0, 2]);
    s.feed('c2@1');
    assert.deepEqual([s.log.at(-1), s.blocked()], ['A2:CANCELLATION_BARRIER', []]);
    s.feed('b3@1 b3@2 b3@0');
    assert.deepEqual([s.log.at(-1), s.blocked()], ['T3', []]);
    s.feed('c4@1');
    assert.equal(s.log.at(-1), 'A4:CANCELLATION_BARRIER');
    s.feed('b4@2');
    assert.deepEqual(s.blocked(), []);
    s.feed('b4@0');
    assert.deepEqual(s.blocked(), []);
    s.feed('b5@2 b5@1 b5@0');
    assert.deepEqual([s.log.at(-1), s.blocked()], ['T5', []]);
    s.feed('c6@1 c6@2 b6@0');
    assert.deepEqual(s.blocked(), []);
    assert.deepEqual(s.log, ['T1', 'A2:CANCELLATION_BARRIER', 'T3', 'A4:CANCELLATION_BARRIER', 'T5', 'A6:CANCELLATION_BARRIER']);
  });

  it('testAbortOnCanceledBarriers: a late barrier of a cancelled checkpoint is ignored and leaves its channel unblocked', () => {
    const s = scripted('aligned', 3);
    s.feed('b1@1 c1@0');
    assert.deepEqual([s.log, s.blocked()], [['A1:CANCELLATION_BARRIER'], []]);
    s.feed('b2@1 b1@2');
    assert.deepEqual(s.blocked(), [1]);
    s.feed('b2@0 b2@2');
    assert.deepEqual([s.log, s.blocked()], [['A1:CANCELLATION_BARRIER', 'T2'], []]);
  });

  it('testIgnoreCancelBarrierIfCheckpointSubsumed: a marker for a checkpoint already subsumed changes nothing', () => {
    const s = scripted('aligned', 3);
    s.feed('b3@1 b3@0');
    assert.deepEqual(s.blocked(), [0, 1]);
    s.feed('b5@2');
    assert.deepEqual([s.log, s.blocked()], [['A3:SUBSUMED'], [2]]);
    s.feed('c3@0');
    assert.deepEqual([s.log, s.blocked()], [['A3:SUBSUMED'], [2]]);
    s.feed('b5@0 b5@1');
    assert.deepEqual([s.log, s.blocked()], [['A3:SUBSUMED', 'T5'], []]);
  });

  it('measures alignment from the first barrier to the last on the injected clock', () => {
    let now = 0;
    const s = scripted('aligned', 3, () => now);
    now = 10;
    s.feed('b1@2');
    now = 25;
    s.feed('b1@0');
    now = 40;
    s.feed('b1@1');
    assert.equal(s.alignment.get(1), 30);
  });

  it('refuses events a blocked, ended or unknown channel cannot deliver, and ids below 1, naming what is wrong', () => {
    const s = scripted('aligned', 2);
    s.feed('b1@0');
    const refused = (field: string, pattern: RegExp) => (error: unknown) => isEngineError(error, 'WEFT_ERR_INVALID_ARGUMENT') && error.context['field'] === field && pattern.test(error.message);
    assert.throws(() => s.feed('b1@0'), refused('channel', /channel 0, which is blocked/));
    assert.throws(() => s.feed('c1@0'), refused('channel', /channel 0, which is blocked/));
    assert.throws(() => s.feed('b1@2'), refused('channel', /numbered 0 to 1, got 2/));
    assert.throws(() => s.handler.processBarrier(0, 1), refused('checkpointId', /integer >= 1, got 0/));
    s.feed('e@1');
    assert.throws(() => s.feed('b2@1'), refused('channel', /channel 1, which has already ended/));
    assert.deepEqual(s.log, ['A1:END_OF_PARTITION']);
  });
});
