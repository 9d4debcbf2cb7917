// InputPositions: a restored attempt resumes a channel from its restored position only where that position
// counts records of the producer attempt its own deployment names; channels are matched by what they read
// (partition and subpartition), so a deployment that leaves a finished producer out still resumes the
// others. A channel whose producer went away (or changed since the checkpoint) starts from 0 and asks for
// no replay. Expected values are worked out by hand from the snapshots the tests write.
import { strict as assert } from 'node:assert';
import { describe, it } from 'node:test';
import type { InputChannelId } from '../src/runtime/input-channels-of.js';
import { INPUT_POSITIONS_UID, InputPositions } from '../src/runtime/input-positions.js';
import type { TaskRestoreState } from '../src/runtime/task-checkpointing.js';

/** A restore state whose only subtask (parallelism 1) snapshotted `snapshot`. */
function restoreOf(snapshot: Uint8Array): TaskRestoreState {
  return { checkpointId: 7, operators: { [INPUT_POSITIONS_UID]: { keyed: [], operator: [snapshot] } } };
}

/** Channels `<partition>/0` read from producer attempts `producers` (`e#0@0` → partition `e#0`). */
const channelsOf = (...producers: string[]): InputChannelId[] => producers.map((producer) => ({ key: `${producer.slice(0, producer.indexOf('@'))}/0`, producer }));

/** The snapshot bytes of an attempt of `channels` that read `reads[i]` records of channel i. */
function snapshotOf(channels: readonly InputChannelId[], reads: readonly number[], held: (channel: number) => number = () => 0): Uint8Array {
  const positions = new InputPositions(channels);
  reads.forEach((n, channel) => positions.read(channel, n));
  const bytes = positions.snapshot(held).operator;
  assert.ok(bytes !== undefined);
  return bytes;
}

const restore = (bytes: Uint8Array) => InputPositions.restoredFrom(restoreOf(bytes), 0, 1, 1);

describe('InputPositions', () => {
  it('a restarted attempt resumes every channel from the restored position when its producers are the ones the checkpoint read', () => {
    const channels = channelsOf('a#0@0', 'b#1@0');
    const positions = new InputPositions(channels, restore(snapshotOf(channels, [5, 9])));
    assert.deepEqual(positions.resumeFrom(0, 2), [5, 9]);
    assert.deepEqual(positions.resumeFrom(1, 1), [9], 'a gate of the second channel only');
    // served again from exactly there: nothing lost
    positions.resumed(0, 5);
    positions.resumed(1, 9);
    assert.equal(positions.recordsLost, 0);
  });

  it('a deployment that leaves out a finished producer still resumes the other channels, matched by what they read', () => {
    const before = channelsOf('a#0@0', 'small#0@0', 'b#1@0');
    const positions = new InputPositions(channelsOf('a#0@0', 'b#1@0'), restore(snapshotOf(before, [5, 3, 9])));
    assert.deepEqual(positions.resumeFrom(0, 2), [5, 9]);
    positions.resumed(1, 9);
    assert.equal(positions.recordsLost, 0, 'channel 1 is b#1, restored at 9');
  });

  it('a channel whose producer attempt changed since the checkpoint asks for a replay from 0 and counts from 0', () => {
    const positions = new InputPositions(channelsOf('a#0@0', 'b#1@1'), restore(snapshotOf(channelsOf('a#0@0', 'b#1@0'), [5, 9])));
    // b#1@1 restored the same checkpoint: its records from 0 on are what this attempt's state lacks
    assert.deepEqual(positions.resumeFrom(0, 2), [5, 0]);
    // the new producer attempt's subpartition starts at record 0: resumed at 3 loses records 0..2 of it, not 9 - 3
    positions.resumed(1, 3);
    assert.equal(positions.recordsLost, 3);
  });

  it('a channel whose producer went away before the checkpoint is snapshotted with no producer: no replay after restore', () => {
    const channels = channelsOf('a#0@0', 'b#1@0');
    const positions = new InputPositions(channels);
    positions.read(0, 4);
    positions.read(1, 6);
    positions.unavailable(1);
    positions.read(1, 2); // records of the producer's next attempt, which this attempt does not know
    const bytes = positions.snapshot(() => 0).operator;
    assert.ok(bytes !== undefined);
    const restored = restore(bytes);
    assert.deepEqual(restored?.get('a#0/0'), { position: 4, producer: 'a#0@0' });
    assert.deepEqual(restored?.get('b#1/0'), { position: 2, producer: undefined });
    assert.deepEqual(new InputPositions(channels, restored).resumeFrom(0, 2), [4, undefined]);
  });

  it('resumed() tells whether the channel was unavailable: a first reader\'s channel-resumed is not a resume (the task reports input-resumed only then)', () => {
    const positions = new InputPositions(channelsOf('a#0@0', 'b#1@0'));
    assert.equal(positions.resumed(0, 0), false, 'a first reader');
    assert.equal(positions.resumed(1, 0), false);
    positions.unavailable(1);
    assert.equal(positions.resumed(0, 0), false, 'another channel did not go away');
    assert.equal(positions.resumed(1, 0), true, 'the channel that went away reads a new producer attempt');
    assert.equal(positions.resumed(1, 0), false, 'once');
  });

  it('a snapshot keeps each position less what the barrier handler still holds for it', () => {
    const restored = restore(snapshotOf(channelsOf('a#0@0', 'b#1@0'), [5, 9], (c) => (c === 1 ? 4 : 0)));
    assert.deepEqual([restored?.get('a#0/0')?.position, restored?.get('b#1/0')?.position], [5, 5]);
  });

  it('restores nothing for a first attempt, another parallelism, no checkpoint, or a snapshot of the older positions-only format', () => {
    const bytes = snapshotOf(channelsOf('a#0@0', 'b#1@0'), [5, 9]);
    assert.equal(InputPositions.restoredFrom(restoreOf(bytes), 0, 1, 0), undefined, 'attempt 0');
    assert.equal(InputPositions.restoredFrom(restoreOf(bytes), 0, 2, 1), undefined, 'parallelism 2');
    assert.equal(InputPositions.restoredFrom(undefined, 0, 1, 1), undefined, 'no checkpoint');
    const positionsOnly = new Uint8Array(16);
    new DataView(positionsOnly.buffer).setFloat64(0, 5, true);
    new DataView(positionsOnly.buffer).setFloat64(8, 9, true);
    assert.equal(restore(positionsOnly), undefined, 'positions only');
    assert.equal(restore(new TextEncoder().encode('{"channels":[["a#0/0","a#0@0","5"]]}')), undefined, 'a malformed entry');
    const positions = new InputPositions(channelsOf('a#0@0'), undefined);
    assert.equal(positions.resumeFrom(0, 1), undefined, 'a first attempt asks for no replay at all');
    positions.resumed(0, 5);
    assert.equal(positions.recordsLost, 5, 'positions count from 0 then');
  });
});
