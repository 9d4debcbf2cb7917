import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { assignToKeyGroup, compareKeys, computeOperatorIndexForKeyGroup, javaHashCode, keyHashCode, murmurHash } from '@weft/engine';

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
    assert.equal(keyHashCode(-0), keyHashCode(0));
    assert.equal(keyHashCode(true), 1231);
    assert.equal(keyHashCode(false), 1237);
    assert.equal(keyHashCode(null), 0);
    assert.equal(keyHashCode([1, 2]), 994); // List.of(1, 2).hashCode()
    assert.equal(keyHashCode(['a', 'b']), 31 * (31 + 97) + 98);
  });

  it('refuses objects, undefined and functions as keys', () => {
    for (const key of [{}, undefined, () => 1, [{}]]) assert.throws(() => keyHashCode(key), TypeError);
  });

  it('orders keys totally: null < booleans < numbers < strings < arrays', () => {
    const keys = [['b'], 'b', 2, null, true, 'a', -1, false, ['a', 2], ['a'], Number.NaN];
    const sorted = [...keys].sort((a, b) => compareKeys(a as never, b as never));
    assert.deepEqual(sorted, [null, false, true, -1, 2, Number.NaN, 'a', 'b', ['a'], ['a', 2], ['b']]);
  });
});
