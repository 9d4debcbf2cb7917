// Operator list state redistributed on restore, against hand-computed expectations: `split` cuts the old
// subtasks' elements (in subtask order) into contiguous runs, the first `total % parallelism` one longer;
// the same parallelism gives each subtask its own list back; `union` gives everyone everything.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { isEngineError, OperatorStateBackend } from '@weft/engine';

function oldSnapshots(lists: string[][], distribution: 'split' | 'union'): Uint8Array[] {
  return lists.map((values) => {
    const backend = new OperatorStateBackend();
    backend.listState<string>('offsets', distribution).addAll(values);
    return backend.snapshot();
  });
}

function restored(snapshots: Uint8Array[], parallelism: number, distribution: 'split' | 'union'): string[][] {
  return Array.from({ length: parallelism }, (_, subtask) => OperatorStateBackend.restore({ subtask, parallelism, snapshots }).listState<string>('offsets', distribution).get());
}

describe('OperatorStateBackend', () => {
  const lists = [['a', 'b', 'c'], ['d'], ['e', 'f']];

  it('split, 3 → 2: [a b c] [d e f]; 3 → 4: [a b] [c d] [e] [f]; 3 → 1: everything', () => {
    const snapshots = oldSnapshots(lists, 'split');
    assert.deepEqual(restored(snapshots, 2, 'split'), [['a', 'b', 'c'], ['d', 'e', 'f']]);
    assert.deepEqual(restored(snapshots, 4, 'split'), [['a', 'b'], ['c', 'd'], ['e'], ['f']]);
    assert.deepEqual(restored(snapshots, 1, 'split'), [['a', 'b', 'c', 'd', 'e', 'f']]);
  });

  it('split at the same parallelism: each subtask gets its own list back', () => {
    assert.deepEqual(restored(oldSnapshots(lists, 'split'), 3, 'split'), lists);
  });

  it('union: every new subtask gets every element', () => {
    const all = ['a', 'b', 'c', 'd', 'e', 'f'];
    assert.deepEqual(restored(oldSnapshots(lists, 'union'), 2, 'union'), [all, all]);
  });

  it('refuses a corrupted snapshot, a name reused with another mode, and a subtask outside the parallelism', () => {
    const snapshots = oldSnapshots(lists, 'split');
    const broken = Uint8Array.from(snapshots[0]!);
    broken[broken.length - 1] = (broken[broken.length - 1] as number) ^ 1;
    assert.throws(() => OperatorStateBackend.restore({ subtask: 0, parallelism: 2, snapshots: [broken, ...snapshots.slice(1)] }), (e: unknown) => isEngineError(e, 'WEFT_ERR_STATE_RESTORE') && /snapshot 0 is corrupted/.test((e as Error).message));
    const backend = new OperatorStateBackend();
    backend.listState('x', 'split');
    assert.throws(() => backend.listState('x', 'union'), /is a split list, not a union one/);
    assert.throws(() => OperatorStateBackend.restore({ subtask: 2, parallelism: 2, snapshots }), (e: unknown) => isEngineError(e, 'WEFT_ERR_INVALID_ARGUMENT'));
  });
});
