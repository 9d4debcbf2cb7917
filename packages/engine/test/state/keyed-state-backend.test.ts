// Keyed state partitioned by key group, snapshotted and restored at other parallelisms (4 → 2 → 3), against
// a naive oracle: a plain array of every key's expected state, and each key's owner computed from
// DESIGN.md's key group formulas (computeKeyGroupRangeForOperatorIndex). Plus the restore refusals.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { computeKeyGroupRangeForOperatorIndex, isEngineError, KeyedStateBackend } from '@weft/engine';
import { keyHashCode } from '../../src/runtime/key-hash.js';
import { keyGroupForHash } from '../../src/keygroups/key-group-range-assignment.js';

const MAX = 128;
const SPECIAL: unknown[] = [0, -0, Number.NaN, Number.POSITIVE_INFINITY, Number.NEGATIVE_INFINITY, null, true, [null], [Number.NaN], [-0], [0], ['1'], [1], ''];
const KEYS: unknown[] = [...SPECIAL, ...Array.from({ length: 600 }, (_, i) => (i % 3 === 0 ? `word-${i}` : i % 3 === 1 ? i * 7919 : ['pair', i]))];

interface Expected {
  count: number | undefined;
  seen: number[];
  tags: [string, number][];
}

function ownerOf(key: unknown, parallelism: number): number {
  const group = keyGroupForHash(keyHashCode(key), MAX);
  for (let i = 0; i < parallelism; i++) {
    const r = computeKeyGroupRangeForOperatorIndex(MAX, parallelism, i);
    if (group >= r.startKeyGroup && group <= r.endKeyGroup) return i;
  }
  throw new Error('no owner');
}

function backends(parallelism: number, snapshots?: Uint8Array[]): KeyedStateBackend[] {
  return Array.from({ length: parallelism }, (_, i) => {
    const keyGroupRange = computeKeyGroupRangeForOperatorIndex(MAX, parallelism, i);
    return snapshots === undefined ? new KeyedStateBackend({ maxParallelism: MAX, keyGroupRange }) : KeyedStateBackend.restore({ maxParallelism: MAX, keyGroupRange, snapshots });
  });
}

/** Applies round `round`'s updates to key `index` in its owner's backend and to the oracle. */
function update(owner: KeyedStateBackend, index: number, round: number, expected: Expected[]): void {
  const key = KEYS[index];
  owner.setCurrentKey(key);
  const e = (expected[index] ??= { count: undefined, seen: [], tags: [] });
  if ((index + round) % 5 !== 0) {
    const count = owner.valueState<number>('count');
    count.update((count.value() ?? 0) + index + round);
    e.count = (e.count ?? 0) + index + round;
  }
  owner.listState<number>('seen').add(round);
  e.seen.push(round);
  const tags = owner.mapState<unknown[], number>('tags');
  tags.put(['round', round], index);
  e.tags.push([`round:${round}`, index]);
  if (round === 2 && index % 7 === 0) {
    owner.valueState<number>('count').clear();
    e.count = undefined;
  }
}

function check(all: KeyedStateBackend[], expected: Expected[]): void {
  const parallelism = all.length;
  const counted = all.map(() => 0);
  KEYS.forEach((key, index) => {
    const owner = all[ownerOf(key, parallelism)] as KeyedStateBackend;
    owner.setCurrentKey(key);
    const e = expected[index] as Expected;
    assert.deepEqual(owner.valueState<number>('count').value(), e.count, `count of key ${index}`);
    assert.deepEqual(owner.listState<number>('seen').get(), e.seen, `seen of key ${index}`);
    const tags = owner.mapState<unknown[], number>('tags').entries().map(([k, v]) => [`${k[0]}:${k[1]}`, v]);
    assert.deepEqual(tags, e.tags, `tags of key ${index}`);
    const o = ownerOf(key, parallelism);
    counted[o] = (counted[o] as number) + 1;
  });
  all.forEach((backend, i) => assert.equal(backend.keys('seen').length, counted[i], `subtask ${i} of ${parallelism} holds exactly the keys of its key groups`));
}

describe('KeyedStateBackend', () => {
  it('restores 4 → 2 → 3 subtasks with every key in the subtask that owns its key group, states equal to the oracle', () => {
    const expected: Expected[] = [];
    let all = backends(4);
    KEYS.forEach((key, index) => update(all[ownerOf(key, 4)] as KeyedStateBackend, index, 1, expected));
    check(all, expected);

    all = backends(2, all.map((b) => b.snapshot()));
    check(all, expected);
    KEYS.forEach((key, index) => update(all[ownerOf(key, 2)] as KeyedStateBackend, index, 2, expected));
    check(all, expected);

    all = backends(3, all.map((b) => b.snapshot()).reverse()); // snapshot order does not matter
    check(all, expected);
  });

  it('decodes a restored key group when first used: a snapshot taken while some groups are untouched carries them unchanged', () => {
    const expected: Expected[] = [];
    let all = backends(4);
    KEYS.forEach((key, index) => update(all[ownerOf(key, 4)] as KeyedStateBackend, index, 1, expected));
    const first = all.map((b) => b.snapshot());
    // restored and snapshotted untouched: the same bytes, key group by key group
    assert.deepEqual(backends(4, first).map((b) => b.snapshot()), first);
    all = backends(2, first);
    // half the keys updated, the rest of their key groups (and whole groups) never used before the next snapshot
    KEYS.forEach((key, index) => {
      if (index % 2 === 0) update(all[ownerOf(key, 2)] as KeyedStateBackend, index, 2, expected);
    });
    all = backends(3, all.map((b) => b.snapshot()));
    check(all, expected);
    // keys() of a backend nobody used lists every restored key
    const untouched = backends(2, first);
    assert.deepEqual(untouched.map((b) => b.keys('seen').length), [0, 1].map((i) => KEYS.filter((k) => ownerOf(k, 2) === i).length));
  });

  it('refuses a state used with another kind than the checkpoint holds: at the first key of its group, and at the next snapshot, never writing both kinds', () => {
    const [old] = backends(1);
    KEYS.slice(0, 40).forEach((key) => {
      old!.setCurrentKey(key);
      old!.listState<unknown>('x').add(key);
    });
    const [changed] = backends(1, [old!.snapshot()]);
    const x = changed!.valueState<number>('x'); // the job's new version uses 'x' as a value state
    const kindChanged = (e: unknown) => isEngineError(e, 'WEFT_ERR_STATE_RESTORE') && /state "x" is a list state in the checkpoint \(key group \d+\), but is used as a value state/.test((e as Error).message);
    assert.throws(() => changed!.setCurrentKey(KEYS[0]), kindChanged);
    assert.throws(() => changed!.setCurrentKey(KEYS[0]), kindChanged, 'refused again: nothing of the group was taken');
    const fresh = KEYS.slice(40).find((k) => !KEYS.slice(0, 40).some((o) => keyGroupForHash(keyHashCode(o), MAX) === keyGroupForHash(keyHashCode(k), MAX)));
    changed!.setCurrentKey(fresh);
    x.update(1);
    assert.throws(() => changed!.snapshot(), kindChanged);
  });

  it('keeps 0 and -0, NaN, [NaN], [null], [1] and ["1"] apart, through a snapshot', () => {
    const [one] = backends(1);
    SPECIAL.forEach((key, i) => {
      one!.setCurrentKey(key);
      one!.valueState<number>('v').update(i);
    });
    const [restored] = backends(1, [one!.snapshot()]);
    SPECIAL.forEach((key, i) => {
      restored!.setCurrentKey(key);
      assert.equal(restored!.valueState<number>('v').value(), i, `key ${String(key)}`);
    });
    assert.equal(restored!.keys('v').length, SPECIAL.length);
  });

  it('refuses a key whose key group the subtask does not own, and a state name reused with another kind', () => {
    const all = backends(2);
    const foreign = KEYS.find((k) => ownerOf(k, 2) === 1);
    assert.throws(() => all[0]!.setCurrentKey(foreign), (e: unknown) => isEngineError(e, 'WEFT_ERR_INVALID_ARGUMENT') && /outside this subtask's range \[0, 63\]/.test((e as Error).message));
    all[1]!.setCurrentKey(foreign);
    all[1]!.valueState('x');
    assert.throws(() => all[1]!.listState('x'), /is a value state, not a list state/);
    assert.throws(() => all[0]!.valueState('y').value(), /no current key/);
  });

  describe('restore refuses, restoring nothing', () => {
    const snapshots = (() => {
      const all = backends(3);
      KEYS.forEach((key, index) => update(all[ownerOf(key, 3)] as KeyedStateBackend, index, 1, []));
      return all.map((b) => b.snapshot());
    })();
    const refused = (pattern: RegExp) => (e: unknown) => isEngineError(e, 'WEFT_ERR_STATE_RESTORE') && pattern.test((e as Error).message);
    const range = computeKeyGroupRangeForOperatorIndex(MAX, 2, 0);

    it('snapshots taken with another max parallelism, naming both', () => {
      assert.throws(() => KeyedStateBackend.restore({ maxParallelism: 256, keyGroupRange: { startKeyGroup: 0, endKeyGroup: 127 }, snapshots }), refused(/max parallelism 128, the job now has 256/));
    });
    it('a missing subtask snapshot, naming the key groups nobody holds', () => {
      assert.throws(() => KeyedStateBackend.restore({ maxParallelism: MAX, keyGroupRange: range, snapshots: [snapshots[0]!, snapshots[2]!] }), refused(/no snapshot holds key groups 43–85/));
      assert.throws(() => KeyedStateBackend.restore({ maxParallelism: MAX, keyGroupRange: range, snapshots: [snapshots[0]!, snapshots[1]!] }), refused(/no snapshot holds key groups 86–127/));
    });
    it('the same key groups twice', () => {
      assert.throws(() => KeyedStateBackend.restore({ maxParallelism: MAX, keyGroupRange: range, snapshots: [...snapshots, snapshots[1]!] }), refused(/in two snapshots/));
    });
    it('a corrupted byte, a truncated snapshot, a newer format, bytes that are no snapshot', () => {
      const flipped = Uint8Array.from(snapshots[1]!);
      flipped[flipped.length >> 1] = (flipped[flipped.length >> 1] as number) ^ 0x40;
      assert.throws(() => KeyedStateBackend.restore({ maxParallelism: MAX, keyGroupRange: range, snapshots: [snapshots[0]!, flipped, snapshots[2]!] }), refused(/snapshot 1 is corrupted: its checksum does not match/));
      assert.throws(() => KeyedStateBackend.restore({ maxParallelism: MAX, keyGroupRange: range, snapshots: [snapshots[0]!.subarray(0, 100), snapshots[1]!, snapshots[2]!] }), refused(/snapshot 0 is (corrupted|truncated)/));
      const newer = Uint8Array.from(snapshots[2]!);
      newer[4] = 9;
      assert.throws(() => KeyedStateBackend.restore({ maxParallelism: MAX, keyGroupRange: range, snapshots: [snapshots[0]!, snapshots[1]!, newer] }), refused(/newer state format \(version 9/));
      assert.throws(() => KeyedStateBackend.restore({ maxParallelism: MAX, keyGroupRange: range, snapshots: [new TextEncoder().encode('{"not": "a snapshot"}')] }), refused(/is not a keyed state snapshot/));
    });
  });
});
