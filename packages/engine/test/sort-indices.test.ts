import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { sortIndices } from '../src/memory/sort-indices.js';

describe('sortIndices (the external sort in-memory merge sort)', () => {
  it('orders indices as a stable sort does — equal keys keep their index order — for sizes around its insertion runs and merge widths', () => {
    let seed = 7;
    const random = (): number => {
      seed = (Math.imul(seed, 1103515245) + 12345) >>> 0;
      return seed / 2 ** 32;
    };
    for (const n of [0, 1, 2, 23, 24, 25, 47, 48, 49, 97, 1000, 10_007]) {
      for (const distinct of [3, 1000]) {
        const keys = Array.from({ length: n }, () => Math.floor(random() * distinct));
        const order = new Uint32Array(n + 5);
        for (let i = 0; i < n; i++) order[i] = i;
        const result = sortIndices(order, new Uint32Array(n + 5), n, (a, b) => (keys[a] as number) - (keys[b] as number));
        const expected = Array.from({ length: n }, (_, i) => i).sort((a, b) => (keys[a] as number) - (keys[b] as number));
        assert.deepEqual(Array.from(result.subarray(0, n)), expected, `n = ${n}, ${distinct} distinct keys`);
      }
    }
  });

  it('leaves already sorted and reversed input in order', () => {
    for (const reversed of [false, true]) {
      const n = 5000;
      const order = Uint32Array.from({ length: n }, (_, i) => i);
      const key = (i: number): number => (reversed ? n - i : i);
      const result = sortIndices(order, new Uint32Array(n), n, (a, b) => key(a) - key(b));
      const expected = Array.from({ length: n }, (_, i) => i).sort((a, b) => key(a) - key(b));
      assert.deepEqual(Array.from(result), expected);
    }
  });
});
