import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { DefaultRecordSerializer, isEngineError, JsonRecordSerializer } from '@weft/engine';

/** Round-trips through a view at an offset inside a larger buffer, as records arrive from a gate. */
function roundTrip(value: unknown): unknown {
  const serializer = new DefaultRecordSerializer();
  const bytes = serializer.serialize(value).slice();
  const segment = new Uint8Array(bytes.length + 37).fill(0xee);
  segment.set(bytes, 19);
  return new DefaultRecordSerializer().deserialize(segment.subarray(19, 19 + bytes.length));
}

describe('default record serializer', () => {
  it('round-trips JSON-like values exactly, including -0, NaN, undefined and large numbers', () => {
    const values: unknown[] = [
      null, undefined, true, false, 0, -0, 1, 63, 64, -1, 2 ** 31 - 1, -(2 ** 31), 2 ** 31, 2 ** 53 - 1, -1.5, Math.PI, Number.NaN, Infinity, -Infinity,
      '', 'a', 'word', 'é', '日本語', '😀 emoji', 'x'.repeat(47), 'x'.repeat(48), 'é'.repeat(40), 'x'.repeat(63), 'x'.repeat(64), 'y'.repeat(200), 'ü'.repeat(5000),
      [], [1, 'two', [3, [4]]], Array.from({ length: 40 }, (_, i) => i), ['word', 1], [undefined, null],
      {}, { a: 1, b: 'two', c: [3], d: { e: null } }, Object.fromEntries(Array.from({ length: 40 }, (_, i) => [`k${i}`, i])), { 'ключ': 'значение', ['x'.repeat(100)]: 1 },
      new Uint8Array([0, 1, 255]),
    ];
    for (const value of values) assert.deepEqual(roundTrip(value), value, `round trip of ${String(JSON.stringify(value)).slice(0, 40)}`);
    assert.ok(Object.is(roundTrip(-0), -0));
  });

  it('keeps "__proto__" as an own key instead of setting the prototype', () => {
    const value = JSON.parse('{"__proto__": {"polluted": true}, "x": 1}') as Record<string, unknown>;
    const back = roundTrip(value) as Record<string, unknown>;
    assert.equal(Object.getPrototypeOf(back), Object.prototype);
    assert.deepEqual(Object.keys(back), ['__proto__', 'x']);
    assert.equal(({} as Record<string, unknown>)['polluted'], undefined);
  });

  it('encodes a word-count pair more compactly than JSON', () => {
    const bytes = new DefaultRecordSerializer().serialize(['word', 1]);
    assert.equal(bytes.length, 7);
    assert.deepEqual([...bytes], [0x42, 0x84, 0x77, 0x6f, 0x72, 0x64, 0xc1], 'record-format.ts: 0x42 0x84 w o r d 0xC1');
    assert.ok(bytes.length < new JsonRecordSerializer().serialize(['word', 1]).length);
  });

  it('refuses values that are not JSON-like with WEFT_ERR_SERIALIZATION naming what it met', () => {
    const cyclic: unknown[] = [];
    cyclic.push(cyclic);
    for (const [value, pattern] of [
      [new Map(), /a Map/],
      [new Date(0), /a Date/],
      [() => 1, /a function/],
      [10n, /a bigint/],
      [Symbol('s'), /a symbol/],
      [cyclic, /nested deeper/],
      [{ nested: new Set() }, /a Set/],
    ] as const) {
      assert.throws(() => new DefaultRecordSerializer().serialize(value), (e: unknown) => isEngineError(e, 'WEFT_ERR_SERIALIZATION') && pattern.test((e as Error).message));
    }
  });

  it('refuses truncated or trailing bytes with WEFT_ERR_SERIALIZATION', () => {
    const bytes = new DefaultRecordSerializer().serialize({ word: 'hello', n: 12345 }).slice();
    assert.throws(() => new DefaultRecordSerializer().deserialize(bytes.subarray(0, bytes.length - 2)), (e: unknown) => isEngineError(e, 'WEFT_ERR_SERIALIZATION'));
    const longer = new Uint8Array(bytes.length + 1);
    longer.set(bytes);
    assert.throws(() => new DefaultRecordSerializer().deserialize(longer), /bytes left after the value/);
    assert.throws(() => new DefaultRecordSerializer().deserialize(Uint8Array.of(0x0f)), /unknown tag/);
  });

  it('reuses its scratch buffer: a serialized view is valid until the next call', () => {
    const serializer = new DefaultRecordSerializer();
    const first = serializer.serialize('first');
    const copy = first.slice();
    serializer.serialize('other');
    assert.notDeepEqual(first, copy);
    assert.equal(new DefaultRecordSerializer().deserialize(copy), 'first');
  });
});

describe('primitiveSerializedSize', () => {
  it('gives the default serializer’s exact size for numbers, booleans, null and all strings', async () => {
    const { primitiveSerializedSize } = await import('../src/serialization/primitive-size.js');
    const serializer = new DefaultRecordSerializer();
    const exact: unknown[] = [0, 1, 63, 64, -1, -64, 2 ** 31 - 1, -(2 ** 31), 2 ** 31, 0.5, -0, Number.NaN, Number.POSITIVE_INFINITY, true, false, null, undefined, '', 'a', 'word', 'é', '日本', 'x'.repeat(63), 'é'.repeat(31)];
    for (const value of exact) assert.equal(primitiveSerializedSize(value), serializer.serialize(value).length, String(value));
    for (const value of ['x'.repeat(64), 'x'.repeat(200), 'é'.repeat(100), '日'.repeat(5000), 'y'.repeat(70_000)]) {
      const size = primitiveSerializedSize(value) as number;
      const actual = serializer.serialize(value).length;
      assert.equal(size, actual, `a string of ${value.length} units`);
    }
    assert.equal(primitiveSerializedSize([1]), undefined);
    assert.equal(primitiveSerializedSize({ a: 1 }), undefined);
  });
});
