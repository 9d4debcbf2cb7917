// The checkpoint keys a listing is sorted by: which job ids have data, and which keys are orphans (snapshots
// of checkpoints that never completed, and the probes a run's start writes and removes, when one is left).
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { checkpointJobIdsOf, orphanedCheckpointKeys } from '@weft/engine';

describe('checkpoint keys', () => {
  const keys = [
    'checkpoints/j1/chk-1/a%230/op.keyed',
    'checkpoints/j1/chk-2/a%230/op.keyed',
    'checkpoints/j1/chk-3/a%230/op.keyed',
    'checkpoints/j1/probe-0b7c',
    'checkpoints/j1/probe-x/not-one',
    'checkpoints/j1/other',
    'checkpoints/j10/chk-1/a%230/op.keyed',
    'checkpoints/j2/probe-ffff',
  ];

  it('names never-completed snapshots below the bound, and every probe left behind, of that job only', () => {
    assert.deepEqual(orphanedCheckpointKeys('j1', keys, 3, new Set([2])), ['checkpoints/j1/chk-1/a%230/op.keyed', 'checkpoints/j1/probe-0b7c']);
    assert.deepEqual(orphanedCheckpointKeys('j2', keys, Number.POSITIVE_INFINITY, new Set()), ['checkpoints/j2/probe-ffff']);
  });

  it('lists a job id whose only object is a probe, so weft gc finds it', () => {
    assert.deepEqual(checkpointJobIdsOf(keys), ['j1', 'j10', 'j2']);
  });
});
