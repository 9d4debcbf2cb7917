import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { assignToKeyGroup, compareKeys, computeOperatorIndexForKeyGroup, javaHashCode, keyHashCode, murmurHash } from '@weft/engine';
import { canonicalKey, isPrimitiveKey } from '../src/runtime/key-hash.js';

describe('keyBy key hashing', () => {
  it('hashes strings and int32 keys exactly as the key-group functions do (Java String/Integer.hashCode)', () => {
    for (const key of ['A', 'hello', '', 'é日本', 'x'.repeat(100), 0, 1, -1, 2 ** 31 - 1, -(2 ** 31)]) {
      assert.equal(keyHashCode(key), javaHashCode(key));
      assert.equal(murmurHash(keyHashCode(key)) % 128, assignToKeyGroup(key, 128));
    }
    assert.equal(murmurHash(keyHashCode('A')) % 128, 104);
    assert.equal(computeOperatorIndexForKeyGroup(128, 4, murmurHash(keyHashCode('A')) % 128), 3);
  });

  it('hashes other keys as Java Double, Boolean and List would', () => {
    assert.equal(keyHashCode(1.5), 1073217536); // Double.valueOf(1.5).hashCode()
    assert.equal(keyHashCode(-0), -2147483648); // Double.valueOf(-0.0).hashCode(): a key of its own
    assert.equal(keyHashCode(0), 0);
    assert.equal(keyHashCode(true), 1231);
    assert.equal(keyHashCode(false), 1237);
    assert.equal(keyHashCode(null), 0);
    assert.equal(keyHashCode([1, 2]), 994); // List.of(1, 2).hashCode()
    assert.equal(keyHashCode(['a', 'b']), 31 * (31 + 97) + 98);
  });

  it('refuses objects, undefined and functions as keys', () => {
    for (const key of [{}, undefined, () => 1, [{}]]) assert.throws(() => keyHashCode(key), TypeError);
  });

  it('keeps NaN, null, ±Infinity, -0 and 0 apart in composite keys, and elements apart by type', () => {
    const keys = [[Number.NaN], [null], [Infinity], [-Infinity], [-0], [0], ['0'], [true], ['true'], [[0]], -0];
    const forms = keys.map((k) => canonicalKey(k));
    assert.equal(new Set(forms).size, keys.length, forms.join(' '));
    assert.equal(canonicalKey([Number.NaN, 'a']), canonicalKey([Number.NaN, 'a']), 'equal keys, equal forms');
    assert.equal(isPrimitiveKey(-0), false, '-0 does not go into a Map as is (a Map takes it for 0)');
    assert.equal(isPrimitiveKey(0), true);
  });

  it('orders -0 just before 0, as Java\'s Double.compare', () => {
    assert.equal(compareKeys(-0, 0), -1);
    assert.equal(compareKeys(0, -0), 1);
    assert.equal(compareKeys(-0, -0), 0);
    assert.equal(compareKeys([-0], [0]), -1);
  });

  it('orders keys totally: null < booleans < numbers < strings < arrays', () => {
    const keys = [['b'], 'b', 2, null, true, 'a', -1, false, ['a', 2], ['a'], Number.NaN];
    const sorted = [...keys].sort((a, b) => compareKeys(a as never, b as never));
    assert.deepEqual(sorted, [null, false, true, -1, 2, Number.NaN, 'a', 'b', ['a'], ['a', 2], ['b']]);
  });
});

describe('the keyed operators with composite keys', () => {
  it('join [NaN], [null], [Infinity], -0 and 0 each only with their own key (the hash join)', async () => {
    const { JoinOperator } = await import('../src/operators/join-operator.js');
    const { CollectingOutput, testingOperatorContext } = await import('./support/operator-context.js');
    const keys = [[Number.NaN], [null], [Infinity], [-Infinity], [-0], [0], -0, 0, Number.NaN, null, ['0'], '0'];
    const output = new CollectingOutput();
    const context = testingOperatorContext({ budgetBytes: 1 << 20, spillDir: '/nonexistent', name: 'join' });
    const join = new JoinOperator({ leftKey: (v) => (v as { k: never }).k, rightKey: (v) => (v as { k: never }).k, fn: (l, r) => [(l as { i: number }).i, (r as { i: number }).i], build: 1 }, output, context);
    keys.forEach((k, i) => join.processInput({ k, i }, 1));
    keys.forEach((k, i) => join.processInput({ k, i }, 0));
    join.close();
    assert.deepEqual(output.values, keys.map((_, i) => [i, i]), 'every key joined its own build value and no other');
  });
});
