// InputPositions: a restored attempt resumes a channel from its restored position only where that position
// counts records of the producer attempt its own deployment names; a channel whose producer went away (or
// whose producer changed since the checkpoint) starts from 0 and asks for no replay. Expected values are
// worked out by hand from the snapshots the tests write.
import { strict as assert } from 'node:assert';
import { describe, it } from 'node:test';
import { INPUT_POSITIONS_UID, InputPositions } from '../src/runtime/input-positions.js';
import type { TaskRestoreState } from '../src/runtime/task-checkpointing.js';

/** A restore state whose only subtask (parallelism 1) snapshotted `positions` with `held` records held per channel. */
function restoreOf(snapshot: Uint8Array): TaskRestoreState {
  return { checkpointId: 7, operators: { [INPUT_POSITIONS_UID]: { keyed: [], operator: [snapshot] } } };
}

/** The snapshot bytes of an attempt of `producers` that read `reads[i]` records of channel i. */
function snapshotOf(producers: readonly string[], reads: readonly number[], held: (channel: number) => number = () => 0): Uint8Array {
  const positions = new InputPositions(producers);
  reads.forEach((n, channel) => positions.read(channel, n));
  const bytes = positions.snapshot(held).operator;
  assert.ok(bytes !== undefined);
  return bytes;
}

describe('InputPositions', () => {
  it('a restarted attempt resumes every channel from the restored position when its producers are the ones the checkpoint read', () => {
    const producers = ['a#0@0', 'b#1@0'];
    const restored = InputPositions.restoredFrom(restoreOf(snapshotOf(producers, [5, 9])), 0, 1, 1, 2);
    const positions = new InputPositions(producers, restored);
    assert.deepEqual(positions.resumeFrom(0, 2), [5, 9]);
    assert.deepEqual(positions.resumeFrom(1, 1), [9], 'a gate of the second channel only');
    // served again from exactly there: nothing lost
    positions.resumed(0, 5);
    positions.resumed(1, 9);
    assert.equal(positions.recordsLost, 0);
  });

  it('a channel whose producer attempt changed since the checkpoint asks for no replay and counts from 0', () => {
    const restored = InputPositions.restoredFrom(restoreOf(snapshotOf(['a#0@0', 'b#1@0'], [5, 9])), 0, 1, 1, 2);
    const positions = new InputPositions(['a#0@0', 'b#1@1'], restored);
    assert.deepEqual(positions.resumeFrom(0, 2), [5, undefined]);
    // the new producer attempt's subpartition starts at record 0: resumed at 3 loses records 0..2 of it, not 9 - 3
    positions.resumed(1, 3);
    assert.equal(positions.recordsLost, 3);
  });

  it('a channel whose producer went away before the checkpoint is snapshotted with no producer: no replay after restore', () => {
    const positions = new InputPositions(['a#0@0', 'b#1@0']);
    positions.read(0, 4);
    positions.read(1, 6);
    positions.unavailable(1);
    positions.read(1, 2); // records of the producer's next attempt, which this attempt does not know
    const bytes = positions.snapshot(() => 0).operator;
    assert.ok(bytes !== undefined);
    const restored = InputPositions.restoredFrom(restoreOf(bytes), 0, 1, 1, 2);
    assert.deepEqual(restored?.positions, [4, 2]);
    assert.deepEqual(restored?.producers, ['a#0@0', undefined]);
    assert.deepEqual(new InputPositions(['a#0@0', 'b#1@0'], restored).resumeFrom(0, 2), [4, undefined]);
  });

  it('a snapshot keeps each position less what the barrier handler still holds for it', () => {
    const restored = InputPositions.restoredFrom(restoreOf(snapshotOf(['a#0@0', 'b#1@0'], [5, 9], (c) => (c === 1 ? 4 : 0))), 0, 1, 1, 2);
    assert.deepEqual(restored?.positions, [5, 5]);
  });

  it('restores nothing for a first attempt, another parallelism or another channel count; an old snapshot without producers asks for no replay', () => {
    const bytes = snapshotOf(['a#0@0', 'b#1@0'], [5, 9]);
    assert.equal(InputPositions.restoredFrom(restoreOf(bytes), 0, 1, 0, 2), undefined, 'attempt 0');
    assert.equal(InputPositions.restoredFrom(restoreOf(bytes), 0, 2, 1, 2), undefined, 'parallelism 2');
    assert.equal(InputPositions.restoredFrom(restoreOf(bytes), 0, 1, 1, 3), undefined, 'three channels');
    assert.equal(InputPositions.restoredFrom(restoreOf(snapshotOf(['a', 'b', 'c'], [1, 2, 3])), 0, 1, 1, 2), undefined, 'a snapshot of three channels read as two');
    assert.equal(InputPositions.restoredFrom(undefined, 0, 1, 1, 2), undefined, 'no checkpoint');
    const positionsOnly = bytes.slice(0, 16);
    const restored = InputPositions.restoredFrom(restoreOf(positionsOnly), 0, 1, 1, 2);
    assert.deepEqual(restored?.positions, [5, 9]);
    const positions = new InputPositions(['a#0@0', 'b#1@0'], restored);
    assert.deepEqual(positions.resumeFrom(0, 2), [undefined, undefined]);
    // positions count from 0 then: a channel resumed at 5 lost 5
    positions.resumed(0, 5);
    assert.equal(positions.recordsLost, 5);
  });

  it('a first attempt asks for no replay at all', () => {
    assert.equal(new InputPositions(['a#0@0']).resumeFrom(0, 1), undefined);
  });
});
