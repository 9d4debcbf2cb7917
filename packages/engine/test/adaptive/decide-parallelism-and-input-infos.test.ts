import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  type ConsumedInputInfo,
  DEFAULT_ADAPTIVE_BATCH_OPTIONS,
  decideParallelismAndInputInfos,
  type IndexRange,
  type ParallelismAndInputInfosRequest,
  type VertexInputInfo,
} from '@weft/engine';

// Flink 1.19's DefaultVertexParallelismAndInputInfosDeciderTest and VertexInputInfoComputationUtilsTest,
// ported case by case with the values Flink's tests expect (each title names the Flink test method), and
// docs/DESIGN.md's two worked examples. Flink's constants:
const MIB = 1024 * 1024;
const BYTE_256_MB = 256 * MIB;
const BYTE_512_MB = 512 * MIB;
const BYTE_8_GB = 8 * 1024 * MIB;
const BYTE_1_TB = 1024 * 1024 * MIB;
const MAX_PARALLELISM = 100;
const MIN_PARALLELISM = 3;
const DEFAULT_SOURCE_PARALLELISM = 10;
const DATA_VOLUME_PER_TASK = 1024 * MIB;

const A = [10, 15, 13, 12, 1, 10, 8, 20, 12, 17];
const B = [8, 12, 21, 9, 13, 7, 19, 13, 14, 5];

/** Flink's createAllToAllBlockingResultInfo: one partition, so its bytes are the aggregated subpartition bytes. */
function allToAll(subpartitionBytes: number[], broadcast = false): ConsumedInputInfo {
  return { distribution: 'ALL_TO_ALL', broadcast, bytes: [subpartitionBytes] };
}

function pointwise(...bytesByPartition: number[][]): ConsumedInputInfo {
  return { distribution: 'POINTWISE', bytes: bytesByPartition };
}

/** `partitions` × `subpartitions` of zero bytes but the first, which holds `totalBytes` (Flink's TestingBlockingResultInfo knows only totals). */
function sized(distribution: 'ALL_TO_ALL' | 'POINTWISE', totalBytes: number, partitions: number, subpartitions: number, broadcast = false): ConsumedInputInfo {
  const bytes = Array.from({ length: partitions }, () => new Array<number>(subpartitions).fill(0));
  (bytes[0] as number[])[0] = totalBytes;
  return { distribution, broadcast, bytes };
}

/** Flink's createDeciderAndDecideParallelismAndInputInfos(min, max, volume, results). */
function decide(minParallelism: number, maxParallelism: number, dataVolumePerTaskBytes: number, inputs: ConsumedInputInfo[], extra: Partial<ParallelismAndInputInfosRequest> = {}) {
  return decideParallelismAndInputInfos({ inputs, minParallelism, maxParallelism, dataVolumePerTaskBytes, defaultSourceParallelism: DEFAULT_SOURCE_PARALLELISM, ...extra });
}

const r = (start: number, end: number): IndexRange => ({ start, end });

/** Flink's checkAllToAllJobVertexInputInfo: every subtask reads `partitions` and its range, in order. */
function assertAllToAll(info: VertexInputInfo | undefined, subpartitionRanges: IndexRange[], partitions: IndexRange = r(0, 0)): void {
  assert.deepEqual(info, { subtasks: subpartitionRanges.map((subpartitions) => ({ partitions, subpartitions })) });
}

/** Flink's checkPointwiseJobVertexInputInfo. */
function assertPointwise(info: VertexInputInfo | undefined, partitionRanges: IndexRange[], subpartitionRanges: IndexRange[]): void {
  assert.deepEqual(info, { subtasks: partitionRanges.map((partitions, i) => ({ partitions, subpartitions: subpartitionRanges[i] })) });
}

describe('decideParallelismAndInputInfos: docs/DESIGN.md worked examples', () => {
  it('decides 5 subtasks with ranges [0,1] [2,3] [4,6] [7,8] [9,9] for inputs A and B (min 1, max 10, 60 bytes)', () => {
    const decided = decide(1, 10, 60, [allToAll(A), allToAll(B)]);
    assert.equal(decided.parallelism, 5);
    const ranges = [r(0, 1), r(2, 3), r(4, 6), r(7, 8), r(9, 9)];
    assert.equal(decided.inputs.length, 2);
    assertAllToAll(decided.inputs[0], ranges);
    assertAllToAll(decided.inputs[1], ranges);
  });

  it('decides 2 subtasks with ranges [0,5] [6,9] for input A alone (min 1, max 2, 10 bytes)', () => {
    const decided = decide(1, 2, 10, [allToAll(A)]);
    assert.equal(decided.parallelism, 2);
    assertAllToAll(decided.inputs[0], [r(0, 5), r(6, 9)]);
  });
});

describe('decideParallelismAndInputInfos: Flink DefaultVertexParallelismAndInputInfosDeciderTest', () => {
  // Flink calls decideParallelism directly in the next five; here the non-broadcast input is POINTWISE so
  // that the public function takes the same path (parallelism from bytes, subpartitions spread evenly).
  it('testDecideParallelism: 8.25 GiB at 1 GiB a task gives 9; the 256 MiB broadcast input does not count', () => {
    const decided = decide(MIN_PARALLELISM, MAX_PARALLELISM, DATA_VOLUME_PER_TASK, [
      sized('ALL_TO_ALL', BYTE_256_MB, MAX_PARALLELISM, 1, true),
      sized('POINTWISE', BYTE_256_MB + BYTE_8_GB, MAX_PARALLELISM, MAX_PARALLELISM),
    ]);
    assert.equal(decided.parallelism, 9);
  });

  it('testInitiallyNormalizedParallelismIsLargerThanMaxParallelism: 1 TiB is capped at the max parallelism', () => {
    const decided = decide(MIN_PARALLELISM, MAX_PARALLELISM, DATA_VOLUME_PER_TASK, [
      sized('ALL_TO_ALL', BYTE_256_MB, MAX_PARALLELISM, 1, true),
      sized('POINTWISE', BYTE_8_GB + BYTE_1_TB, MAX_PARALLELISM, MAX_PARALLELISM),
    ]);
    assert.equal(decided.parallelism, MAX_PARALLELISM);
  });

  it('testInitiallyNormalizedParallelismIsSmallerThanMinParallelism: 512 MiB is raised to the min parallelism', () => {
    const decided = decide(MIN_PARALLELISM, MAX_PARALLELISM, DATA_VOLUME_PER_TASK, [
      sized('ALL_TO_ALL', BYTE_256_MB, MAX_PARALLELISM, 1, true),
      sized('POINTWISE', BYTE_512_MB, MAX_PARALLELISM, MAX_PARALLELISM),
    ]);
    assert.equal(decided.parallelism, MIN_PARALLELISM);
  });

  it('testNonBroadcastBytesCanNotDividedEvenly: a 512 MiB broadcast input still gives 9', () => {
    const decided = decide(MIN_PARALLELISM, MAX_PARALLELISM, DATA_VOLUME_PER_TASK, [
      sized('ALL_TO_ALL', BYTE_512_MB, MAX_PARALLELISM, 1, true),
      sized('POINTWISE', BYTE_256_MB + BYTE_8_GB, MAX_PARALLELISM, MAX_PARALLELISM),
    ]);
    assert.equal(decided.parallelism, 9);
  });

  it('testDecideParallelismWithMaxSubpartitionLimitation: 1024 × 1024 subpartitions need 32 subtasks whatever the bytes', () => {
    const decided = decide(1, 100, BYTE_256_MB, [sized('POINTWISE', 1, 1024, 1024), sized('POINTWISE', 1, 512, 512)]);
    assert.equal(decided.parallelism, 32);
  });

  it('decideParallelism counts no broadcast bytes at all: 1 GiB broadcast beside 1 GiB at 1 GiB a task gives 1, not 2', () => {
    const decided = decide(1, MAX_PARALLELISM, DATA_VOLUME_PER_TASK, [
      sized('ALL_TO_ALL', DATA_VOLUME_PER_TASK, MAX_PARALLELISM, 1, true),
      sized('POINTWISE', DATA_VOLUME_PER_TASK, MAX_PARALLELISM, MAX_PARALLELISM),
    ]);
    assert.equal(decided.parallelism, 1);
  });

  it('testAllEdgesAllToAll', () => {
    const decided = decide(1, 10, 60, [allToAll(A), allToAll(B)]);
    assert.equal(decided.parallelism, 5);
    assertAllToAll(decided.inputs[0], [r(0, 1), r(2, 3), r(4, 6), r(7, 8), r(9, 9)]);
    assertAllToAll(decided.inputs[1], [r(0, 1), r(2, 3), r(4, 6), r(7, 8), r(9, 9)]);
  });

  it('testAllEdgesAllToAllAndDecidedParallelismIsMaxParallelism: the limit is bisected up to reach max 2', () => {
    const decided = decide(1, 2, 10, [allToAll(A)]);
    assert.equal(decided.parallelism, 2);
    assertAllToAll(decided.inputs[0], [r(0, 5), r(6, 9)]);
  });

  it('testAllEdgesAllToAllAndDecidedParallelismIsMinParallelism: the limit is bisected down to reach min 4, as even as possible', () => {
    const decided = decide(4, 10, 1000, [allToAll(A)]);
    assert.equal(decided.parallelism, 4);
    assertAllToAll(decided.inputs[0], [r(0, 1), r(2, 5), r(6, 7), r(8, 9)]);
  });

  it('testFallBackToEvenlyDistributeSubpartitions: no limit gives exactly 8 ranges, so 8 subtasks share the subpartitions evenly', () => {
    const decided = decide(8, 8, 10, [allToAll([10, 1, 10, 1, 10, 1, 10, 1, 10, 1])]);
    assert.equal(decided.parallelism, 8);
    assertAllToAll(decided.inputs[0], [r(0, 0), r(1, 1), r(2, 2), r(3, 4), r(5, 5), r(6, 6), r(7, 7), r(8, 9)]);
  });

  it('testAllEdgesAllToAllAndOneIsBroadcast: ranges from the non-broadcast bytes only, the broadcast input read whole by each', () => {
    const decided = decide(1, 10, 60, [allToAll(A), allToAll([10], true)]);
    assert.equal(decided.parallelism, 3);
    assertAllToAll(decided.inputs[0], [r(0, 4), r(5, 8), r(9, 9)]);
    assertAllToAll(decided.inputs[1], [r(0, 0), r(0, 0), r(0, 0)]);
  });

  it('testAllEdgesBroadcast: only broadcast inputs give the min parallelism', () => {
    const decided = decide(1, 10, 60, [allToAll([10], true), allToAll([10], true)]);
    assert.equal(decided.parallelism, 1);
    assertAllToAll(decided.inputs[0], [r(0, 0)]);
    assertAllToAll(decided.inputs[1], [r(0, 0)]);
  });

  it('testHavePointwiseEdges: a POINTWISE input makes the subpartitions, not the bytes, spread evenly', () => {
    const decided = decide(1, 10, 60, [allToAll(A), pointwise([8, 12, 21, 9, 13], [7, 19, 13, 14, 5])]);
    assert.equal(decided.parallelism, 4);
    assertAllToAll(decided.inputs[0], [r(0, 1), r(2, 4), r(5, 6), r(7, 9)]);
    assertPointwise(decided.inputs[1], [r(0, 0), r(0, 0), r(1, 1), r(1, 1)], [r(0, 1), r(2, 4), r(0, 1), r(2, 4)]);
  });

  it('testParallelismAlreadyDecided: an initial parallelism of 3 is kept and the subpartitions spread over it', () => {
    const decided = decide(MIN_PARALLELISM, MAX_PARALLELISM, DATA_VOLUME_PER_TASK, [allToAll(A)], { initialParallelism: 3 });
    assert.equal(decided.parallelism, 3);
    assertAllToAll(decided.inputs[0], [r(0, 2), r(3, 5), r(6, 9)]);
  });

  it('testSourceJobVertex: a source gets the default source parallelism and no inputs', () => {
    const decided = decide(MIN_PARALLELISM, MAX_PARALLELISM, DATA_VOLUME_PER_TASK, []);
    assert.deepEqual(decided, { parallelism: DEFAULT_SOURCE_PARALLELISM, inputs: [] });
  });

  it('testEvenlyDistributeDataWithMaxSubpartitionLimitation: 1024 partitions allow 32 subpartitions a range, so 32 ranges of 32', () => {
    const bytes = Array.from({ length: 1024 }, () => new Array<number>(1024).fill(1));
    const decided = decide(1, 100, BYTE_256_MB, [{ distribution: 'ALL_TO_ALL', bytes }]);
    assert.equal(decided.parallelism, 32);
    assertAllToAll(decided.inputs[0], Array.from({ length: 32 }, (_, i) => r(i * 32, (i + 1) * 32 - 1)), r(0, 1023));
  });
});

describe('decideParallelismAndInputInfos: sources (Flink 1.19 computeSourceParallelismUpperBound)', () => {
  it('caps the default source parallelism at the max parallelism', () => {
    assert.equal(decide(1, 8, DATA_VOLUME_PER_TASK, [], { defaultSourceParallelism: 20 }).parallelism, 8);
  });

  it('uses the max parallelism when no default source parallelism is given (FLINK-34143)', () => {
    const decided = decideParallelismAndInputInfos({ inputs: [], minParallelism: 1, maxParallelism: 7, dataVolumePerTaskBytes: 1 });
    assert.equal(decided.parallelism, 7);
  });

  it('keeps the initial parallelism of a source', () => {
    assert.equal(decide(1, 8, DATA_VOLUME_PER_TASK, [], { initialParallelism: 3 }).parallelism, 3);
  });

  it('exports Flink 1.19 defaults: min 1, max 128, 16 MiB a task', () => {
    assert.deepEqual({ ...DEFAULT_ADAPTIVE_BATCH_OPTIONS }, { minParallelism: 1, maxParallelism: 128, dataVolumePerTaskBytes: 16 * MIB });
  });
});

describe('decideParallelismAndInputInfos: Flink VertexInputInfoComputationUtilsTest (dynamic graph), through an initial parallelism', () => {
  const subpartitionRanges = (subpartitions: number, parallelism: number) =>
    decide(1, 100, 1, [allToAll(new Array<number>(subpartitions).fill(1))], { initialParallelism: parallelism }).inputs[0]?.subtasks.map((s) => s.subpartitions);

  it('testComputeConsumedSubpartitionRange3to1', () => {
    assert.deepEqual(subpartitionRanges(3, 1), [r(0, 2)]);
  });

  it('testComputeConsumedSubpartitionRange3to2', () => {
    assert.deepEqual(subpartitionRanges(3, 2), [r(0, 0), r(1, 2)]);
  });

  it('testComputeConsumedSubpartitionRange6to4', () => {
    assert.deepEqual(subpartitionRanges(6, 4), [r(0, 0), r(1, 2), r(3, 3), r(4, 5)]);
  });

  it('testComputeBroadcastConsumedSubpartitionRange', () => {
    const decided = decide(1, 100, 1, [allToAll([5], true)], { initialParallelism: 3 });
    assertAllToAll(decided.inputs[0], [r(0, 0), r(0, 0), r(0, 0)]);
  });

  it('testComputeVertexInputInfoForAllToAllWithDynamicGraph', () => {
    const ten = new Array<number>(10).fill(1);
    const nonBroadcast = decide(1, 100, 1, [{ distribution: 'ALL_TO_ALL', bytes: [ten, ten] }], { initialParallelism: 3 });
    assertAllToAll(nonBroadcast.inputs[0], [r(0, 2), r(3, 5), r(6, 9)], r(0, 1));
    const broadcast = decide(1, 100, 1, [{ distribution: 'ALL_TO_ALL', broadcast: true, bytes: [[1], [1]] }], { initialParallelism: 3 });
    assertAllToAll(broadcast.inputs[0], [r(0, 0), r(0, 0), r(0, 0)], r(0, 1));
  });

  it('testComputeVertexInputInfoForPointwiseWithDynamicGraph', () => {
    const decided = decide(1, 100, 1, [pointwise([1, 1, 1, 1], [1, 1, 1, 1])], { initialParallelism: 3 });
    assertPointwise(decided.inputs[0], [r(0, 0), r(0, 0), r(1, 1)], [r(0, 1), r(2, 3), r(0, 3)]);
  });
});

describe('decideParallelismAndInputInfos: pointwise spreading beyond Flink\'s cases', () => {
  it('gives each of 2 subtasks a run of the 5 partitions, all subpartitions of each', () => {
    const decided = decide(1, 100, 1, [pointwise([1, 1], [1, 1], [1, 1], [1, 1], [1, 1])], { initialParallelism: 2 });
    assertPointwise(decided.inputs[0], [r(0, 1), r(2, 4)], [r(0, 1), r(0, 1)]);
  });

  it('numbers a partition\'s consumers modulo their count, as Flink does (2 partitions, 5 subtasks)', () => {
    const decided = decide(1, 100, 1, [pointwise([1, 1, 1, 1, 1, 1], [1, 1, 1, 1, 1, 1])], { initialParallelism: 5 });
    // partition 0 → subtasks 0..2 (consumers 0, 1, 2 of 3); partition 1 → subtasks 3, 4 (3 % 2 = 1, 4 % 2 = 0).
    assertPointwise(decided.inputs[0], [r(0, 0), r(0, 0), r(0, 0), r(1, 1), r(1, 1)], [r(0, 1), r(2, 3), r(4, 5), r(3, 5), r(0, 2)]);
  });
});
