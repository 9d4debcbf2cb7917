import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  assignKeyToParallelOperator,
  assignToKeyGroup,
  computeDefaultMaxParallelism,
  computeKeyGroupRangeForOperatorIndex,
  computeOperatorIndexForKeyGroup,
  isEngineError,
  javaHashCode,
  javaStringHashCode,
  keyGroupForHash,
  murmurHash,
} from '@weft/engine';

const invalidArgument = (field: string) => (error: unknown) => isEngineError(error, 'WEFT_ERR_INVALID_ARGUMENT') && error.field === field;

describe('key groups: docs/DESIGN.md worked examples', () => {
  it('puts "A" in key group 104 of 128, owned by operator 3 of 4', () => {
    assert.equal(assignToKeyGroup('A', 128), 104);
    assert.equal(computeOperatorIndexForKeyGroup(128, 4, 104), 3);
    assert.equal(assignKeyToParallelOperator('A', 128, 4), 3);
  });

  it('puts "hello" in 35, "" in 94 and the int 1 in 86 of 128', () => {
    assert.equal(assignToKeyGroup('hello', 128), 35);
    assert.equal(assignToKeyGroup('', 128), 94);
    assert.equal(assignToKeyGroup(1, 128), 86);
  });

  it('gives parallelism 86 a default max parallelism of 256', () => {
    assert.equal(computeDefaultMaxParallelism(86), 256);
  });

  it('splits 128 key groups over 3 operators as [0,42] [43,85] [86,127]', () => {
    assert.deepEqual(
      [0, 1, 2].map((i) => computeKeyGroupRangeForOperatorIndex(128, 3, i)),
      [
        { startKeyGroup: 0, endKeyGroup: 42 },
        { startKeyGroup: 43, endKeyGroup: 85 },
        { startKeyGroup: 86, endKeyGroup: 127 },
      ],
    );
  });
});

// Computed with Java 17 running Flink's MathUtils.murmurHash and String/Integer.hashCode verbatim:
// key, Java hashCode, murmurHash, % 128, % 32768, % 1000.
const JAVA_STRINGS: ReadonlyArray<readonly [string, number, number, number, number, number]> = [
  ['A', 65, 743412968, 104, 5352, 968],
  ['hello', 99162322, 1715862179, 35, 31395, 179],
  ['', 0, 593689054, 94, 31198, 54],
  ['Hello, World!', 1498789909, 741723222, 86, 19542, 222],
  ['weft', 3645468, 1730503294, 126, 25214, 294],
  ['flink', 97520992, 1330823394, 98, 16610, 394],
  ['\u00e9t\u00e9', 227742, 157703301, 5, 23685, 301],
  ['\u{1F600}', 1772899, 1934073014, 54, 7350, 14],
  ['a much longer key that overflows int32 many times over', -2070123751, 744214386, 114, 20338, 386],
  ['0', 48, 907422678, 86, 11222, 678],
  ['user-42', -147182656, 1600933524, 20, 20116, 524],
  ['\u4e2d\u6587', 646394, 464757671, 39, 9127, 671],
];
const JAVA_INTS: ReadonlyArray<readonly [number, number, number, number, number]> = [
  [0, 593689054, 94, 31198, 54],
  [1, 68075478, 86, 16342, 478],
  [-1, 1982413648, 80, 15184, 648],
  [42, 1134849565, 29, 28189, 565],
  [2147483647, 1653689534, 62, 19646, 534],
  [-2147483648, 1718298732, 108, 10348, 732],
  [123456789, 1088346449, 81, 22865, 449],
  [-987654321, 1314828554, 10, 12554, 554],
  [65, 743412968, 104, 5352, 968],
];

describe('key groups: cross-checked against Java running Flink\'s code', () => {
  it('hashes strings as Java\'s String.hashCode over UTF-16 code units, with int32 overflow', () => {
    for (const [key, hash] of JAVA_STRINGS) assert.equal(javaStringHashCode(key), hash, JSON.stringify(key));
  });

  it('matches Flink\'s murmurHash and key groups for string keys', () => {
    for (const [key, hash, murmur, kg128, kg32768, kg1000] of JAVA_STRINGS) {
      assert.equal(murmurHash(hash), murmur, JSON.stringify(key));
      assert.equal(assignToKeyGroup(key, 128), kg128, JSON.stringify(key));
      assert.equal(assignToKeyGroup(key, 32768), kg32768, JSON.stringify(key));
      assert.equal(assignToKeyGroup(key, 1000), kg1000, JSON.stringify(key));
    }
  });

  it('hashes int32 keys as Integer.hashCode (the value) and matches Flink\'s key groups', () => {
    for (const [key, murmur, kg128, kg32768, kg1000] of JAVA_INTS) {
      assert.equal(javaHashCode(key), key);
      assert.equal(murmurHash(key), murmur, String(key));
      assert.equal(assignToKeyGroup(key, 128), kg128, String(key));
      assert.equal(assignToKeyGroup(key, 32768), kg32768, String(key));
      assert.equal(assignToKeyGroup(key, 1000), kg1000, String(key));
    }
  });

  it('an int key and the string of one char with that code hash alike, as in Java', () => {
    assert.equal(assignToKeyGroup(65, 128), assignToKeyGroup('A', 128));
  });

  it('matches Flink\'s default max parallelism across the range', () => {
    const expected: Record<number, number> = { 1: 128, 2: 128, 3: 128, 85: 128, 86: 256, 100: 256, 128: 256, 1000: 2048, 10000: 16384, 21845: 32768, 21846: 32768, 32768: 32768 };
    for (const [p, max] of Object.entries(expected)) assert.equal(computeDefaultMaxParallelism(Number(p)), max, `p=${p}`);
  });

  it('keyGroupForHash gives the same key group as assignToKeyGroup for a precomputed hash', () => {
    for (const [key, hash, , kg128] of JAVA_STRINGS) {
      assert.equal(keyGroupForHash(hash, 128), kg128, JSON.stringify(key));
    }
  });
});

describe('key group ranges', () => {
  it('tile [0, maxParallelism) exactly, and each key group maps back to the operator that owns it', () => {
    for (const [maxParallelism, parallelism] of [[128, 1], [128, 3], [128, 128], [1000, 7], [32768, 100], [10, 10], [7, 3]] as const) {
      let next = 0;
      for (let op = 0; op < parallelism; op++) {
        const range = computeKeyGroupRangeForOperatorIndex(maxParallelism, parallelism, op);
        assert.equal(range.startKeyGroup, next, `(${maxParallelism}, ${parallelism}) op ${op}`);
        for (let kg = range.startKeyGroup; kg <= range.endKeyGroup; kg++) {
          assert.equal(computeOperatorIndexForKeyGroup(maxParallelism, parallelism, kg), op);
        }
        next = range.endKeyGroup + 1;
      }
      assert.equal(next, maxParallelism);
    }
  });
});

describe('key group argument checks', () => {
  it('refuses a max parallelism outside [1, 32768] or not an integer, naming it', () => {
    for (const bad of [0, -1, 32769, 1.5, Number.NaN]) {
      assert.throws(() => assignToKeyGroup('a', bad), invalidArgument('maxParallelism'));
    }
  });

  it('refuses a parallelism above the max parallelism or below 1', () => {
    assert.throws(() => computeKeyGroupRangeForOperatorIndex(128, 129, 0), invalidArgument('parallelism'));
    assert.throws(() => computeOperatorIndexForKeyGroup(128, 0, 0), invalidArgument('parallelism'));
    assert.throws(() => computeDefaultMaxParallelism(0), invalidArgument('parallelism'));
    assert.throws(() => computeDefaultMaxParallelism(32769), invalidArgument('parallelism'));
  });

  it('refuses an operator index or key group out of range', () => {
    assert.throws(() => computeKeyGroupRangeForOperatorIndex(128, 3, 3), invalidArgument('operatorIndex'));
    assert.throws(() => computeOperatorIndexForKeyGroup(128, 3, 128), invalidArgument('keyGroup'));
    assert.throws(() => computeOperatorIndexForKeyGroup(128, 3, -1), invalidArgument('keyGroup'));
  });

  it('refuses keys whose Java hash is not defined here: non-int32 numbers and other types', () => {
    for (const bad of [1.5, 2 ** 31, -(2 ** 31) - 1, Number.NaN, true, null, {}, 10n]) {
      assert.throws(() => assignToKeyGroup(bad as never, 128), invalidArgument('key'));
    }
  });
});
