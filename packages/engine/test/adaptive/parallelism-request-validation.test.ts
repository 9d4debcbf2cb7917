import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { decideParallelismAndInputInfos, isEngineError } from '@weft/engine';

const good = { inputs: [{ distribution: 'ALL_TO_ALL', bytes: [[1, 2, 3, 4]] }], minParallelism: 1, maxParallelism: 4, dataVolumePerTaskBytes: 4 };

/** Calls the decider with `good` changed by `change` (untyped: bad requests come from JSON and the CLI). */
function decideWith(change: Record<string, unknown>) {
  return decideParallelismAndInputInfos({ ...good, ...change } as unknown as Parameters<typeof decideParallelismAndInputInfos>[0]);
}

const invalid = (field: string) => (error: unknown) => {
  assert.ok(isEngineError(error, 'WEFT_ERR_INVALID_ARGUMENT'), `expected WEFT_ERR_INVALID_ARGUMENT, got ${String(error)}`);
  assert.equal(error.field, field);
  assert.match(error.message, new RegExp(field.replace(/[[\].]/g, '\\$&')));
  return true;
};

describe('decideParallelismAndInputInfos: a bad request is refused naming the field', () => {
  it('accepts the good request it starts from', () => {
    assert.equal(decideWith({}).parallelism, 3);
  });

  for (const [name, change, field] of [
    ['a min parallelism of 0', { minParallelism: 0 }, 'request.minParallelism'],
    ['a fractional min parallelism', { minParallelism: 1.5 }, 'request.minParallelism'],
    ['a max parallelism below the min', { minParallelism: 3, maxParallelism: 2 }, 'request.maxParallelism'],
    ['a max parallelism above 32768', { maxParallelism: 32769 }, 'request.maxParallelism'],
    ['a data volume of 0 bytes', { dataVolumePerTaskBytes: 0 }, 'request.dataVolumePerTaskBytes'],
    ['a negative data volume', { dataVolumePerTaskBytes: -16 }, 'request.dataVolumePerTaskBytes'],
    ['a data volume given as a string', { dataVolumePerTaskBytes: '16mb' }, 'request.dataVolumePerTaskBytes'],
    ['an initial parallelism of -1 (Flink\'s PARALLELISM_DEFAULT: leave it out instead)', { initialParallelism: -1 }, 'request.initialParallelism'],
    ['a default source parallelism of 0', { defaultSourceParallelism: 0 }, 'request.defaultSourceParallelism'],
    ['an unknown key', { vertexMaxParallelism: 8 }, 'request.vertexMaxParallelism'],
    ['inputs that are not an array', { inputs: {} }, 'request.inputs'],
    ['an unknown distribution', { inputs: [{ distribution: 'FORWARD', bytes: [[1]] }] }, 'request.inputs[0].distribution'],
    ['a broadcast POINTWISE input', { inputs: [{ distribution: 'POINTWISE', broadcast: true, bytes: [[1]] }] }, 'request.inputs[0].broadcast'],
    ['a broadcast flag that is not a boolean', { inputs: [{ distribution: 'ALL_TO_ALL', broadcast: 'yes', bytes: [[1]] }] }, 'request.inputs[0].broadcast'],
    ['an unknown input key', { inputs: [{ distribution: 'ALL_TO_ALL', bytes: [[1]], skewed: true }] }, 'request.inputs[0].skewed'],
    ['an input without partitions', { inputs: [{ distribution: 'ALL_TO_ALL', bytes: [] }] }, 'request.inputs[0].bytes'],
    ['a partition without subpartitions', { inputs: [{ distribution: 'POINTWISE', bytes: [[1], []] }] }, 'request.inputs[0].bytes[1]'],
    ['a negative byte count', { inputs: [{ distribution: 'ALL_TO_ALL', bytes: [[1, -1]] }] }, 'request.inputs[0].bytes[0][1]'],
    ['a fractional byte count', { inputs: [{ distribution: 'ALL_TO_ALL', bytes: [[1, 2.5]] }] }, 'request.inputs[0].bytes[0][1]'],
    ['a broadcast partition with two subpartitions', { inputs: [{ distribution: 'ALL_TO_ALL', broadcast: true, bytes: [[1], [1, 1]] }] }, 'request.inputs[0].bytes[1]'],
    ['ALL_TO_ALL partitions of different widths', { inputs: [{ distribution: 'ALL_TO_ALL', bytes: [[1, 1], [1, 1, 1]] }] }, 'request.inputs[0].bytes[1]'],
    [
      'two ALL_TO_ALL inputs of different widths',
      { inputs: [{ distribution: 'ALL_TO_ALL', bytes: [[1, 1]] }, { distribution: 'ALL_TO_ALL', bytes: [[1, 1, 1]] }] },
      'request.inputs[1].bytes',
    ],
    ['bytes adding up past 2^53 - 1', { inputs: [{ distribution: 'ALL_TO_ALL', bytes: [[Number.MAX_SAFE_INTEGER, 1]] }] }, 'request.inputs'],
  ] as const) {
    it(`refuses ${name} (${field})`, () => {
      assert.throws(() => decideWith(change), invalid(field));
    });
  }

  it('refuses a request that is not an object', () => {
    assert.throws(() => decideParallelismAndInputInfos(null as never), invalid('request'));
  });

  it('refuses a parallelism that leaves a subtask without a subpartition, naming the partition', () => {
    // 5 subtasks cannot share 4 subpartitions (Flink asserts numConsumers <= numSubpartitions).
    assert.throws(() => decideWith({ initialParallelism: 5 }), invalid('request.inputs[0].bytes[0]'));
    // The min parallelism forces 6 when no data range can: the fallback hits the same wall.
    assert.throws(() => decideWith({ minParallelism: 6, maxParallelism: 8 }), invalid('request.inputs[0].bytes[0]'));
  });

  it('keeps an initial parallelism outside [min, max] as it is, as Flink keeps a configured one', () => {
    const decided = decideWith({ minParallelism: 1, maxParallelism: 2, initialParallelism: 4 });
    assert.equal(decided.parallelism, 4);
  });
});
