// Flink 2.x's skewed-join splitting on top of the decider (issue 14, Deliver 3): which subpartitions are
// skewed (factor × median and threshold), how they are cut into producer ranges, what the other side reads.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { type ConsumedInputInfo, decideParallelismAndInputInfos, medianBytes, type SkewSplitRequest, splitSkewedSubpartitions } from '@weft/engine';

const all = (n: number) => ({ start: 0, end: n - 1 });
const r = (start: number, end = start) => ({ start, end });

function request(inputs: ConsumedInputInfo[], extra: Partial<SkewSplitRequest> = {}): SkewSplitRequest {
  const volume = extra.dataVolumePerTaskBytes ?? 100;
  const decision = decideParallelismAndInputInfos({ inputs, minParallelism: 1, maxParallelism: 8, dataVolumePerTaskBytes: volume });
  return { inputs, decision, splittable: [true, false], skewedFactor: 4, skewedThresholdBytes: 50, dataVolumePerTaskBytes: volume, maxParallelism: 16, ...extra };
}

/** mulberry32, so a failure names a seed that reproduces it. */
function random(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

describe('splitSkewedSubpartitions', () => {
  const probe: ConsumedInputInfo = { distribution: 'ALL_TO_ALL', bytes: Array.from({ length: 4 }, () => [10, 10, 100, 10]) };
  const build: ConsumedInputInfo = { distribution: 'ALL_TO_ALL', bytes: [[5, 5, 5, 5], [5, 5, 5, 5]] };

  it('splits a subpartition above factor × median and the threshold into producer ranges of at most the target size, the build side read whole by each part', () => {
    const req = request([probe, build]);
    assert.equal(req.decision.parallelism, 3, 'the decider alone: [0-1] [2] [3]');
    const out = splitSkewedSubpartitions(req);
    // median 40, 4 × 40 = 160 > threshold 50: subpartition 2 (400 bytes) is skewed; target max(100, mean 40) = 100
    assert.deepEqual(out.splits, [{ subpartition: 2, bytes: 400, parts: 4, partitions: [r(0), r(1), r(2), r(3)] }]);
    assert.equal(out.parallelism, 6);
    assert.deepEqual(
      out.inputs[0]?.subtasks.map((s) => [s.partitions, s.subpartitions]),
      [[all(4), r(0, 1)], [r(0), r(2)], [r(1), r(2)], [r(2), r(2)], [r(3), r(2)], [all(4), r(3)]],
    );
    assert.deepEqual(
      out.inputs[1]?.subtasks.map((s) => [s.partitions, s.subpartitions]),
      [[all(2), r(0, 1)], [all(2), r(2)], [all(2), r(2)], [all(2), r(2)], [all(2), r(2)], [all(2), r(3)]],
    );
  });

  it('packs several producers into one part up to the target size, and cuts a decided range around a skewed subpartition inside it', () => {
    const skewed: ConsumedInputInfo = { distribution: 'ALL_TO_ALL', bytes: Array.from({ length: 6 }, () => [1, 1, 60, 1, 1]) };
    const req = request([skewed, { distribution: 'ALL_TO_ALL', bytes: [[1, 1, 1, 1, 1]] }], { dataVolumePerTaskBytes: 1000, skewedThresholdBytes: 100 });
    assert.deepEqual(req.decision.inputs[0]?.subtasks.map((s) => s.subpartitions), [r(0, 4)], 'the decider puts everything in one subtask');
    const out = splitSkewedSubpartitions({ ...req, dataVolumePerTaskBytes: 120 });
    // 360 bytes > max(4 × 6, 100); target max(120, 6) = 120: two producers (120 bytes) per part
    assert.deepEqual(out.splits, [{ subpartition: 2, bytes: 360, parts: 3, partitions: [r(0, 1), r(2, 3), r(4, 5)] }]);
    assert.deepEqual(
      out.inputs[0]?.subtasks.map((s) => [s.partitions, s.subpartitions]),
      [[all(6), r(0, 1)], [r(0, 1), r(2)], [r(2, 3), r(2)], [r(4, 5), r(2)], [all(6), r(3, 4)]],
    );
  });

  it('leaves the decision as it is when nothing exceeds both the factor and the threshold, or only the build side is skewed', () => {
    const belowThreshold = request([probe, build], { skewedThresholdBytes: 400 });
    assert.deepEqual(splitSkewedSubpartitions(belowThreshold), { ...belowThreshold.decision, splits: [] });
    const belowFactor = request([probe, build], { skewedFactor: 10 });
    assert.deepEqual(splitSkewedSubpartitions(belowFactor), { ...belowFactor.decision, splits: [] }, '400 is not above 10 × median 40');
    const buildSkewed = request([build, probe], { splittable: [true, false] });
    assert.deepEqual(splitSkewedSubpartitions(buildSkewed).splits, []);
    assert.deepEqual(splitSkewedSubpartitions(request([probe, build], { splittable: [false, false] })).splits, [], 'nothing splittable');
    const oneProducer = request([{ distribution: 'ALL_TO_ALL', bytes: [[10, 10, 400, 10]] }, build]);
    assert.deepEqual(splitSkewedSubpartitions(oneProducer).splits, [], 'one producer cannot be split by producer ranges');
  });

  it('drops the smallest splits when the parts would not fit in the max parallelism', () => {
    const twoHot: ConsumedInputInfo = { distribution: 'ALL_TO_ALL', bytes: Array.from({ length: 4 }, () => [10, 200, 10, 100, 10, 10]) };
    const req = request([twoHot, { distribution: 'ALL_TO_ALL', bytes: [[1, 1, 1, 1, 1, 1]] }]);
    const free = splitSkewedSubpartitions(req);
    assert.deepEqual(free.splits.map((x) => [x.subpartition, x.parts]), [[1, 4], [3, 4]]);
    const capped = splitSkewedSubpartitions({ ...req, maxParallelism: free.parallelism - 1 });
    assert.deepEqual(capped.splits.map((x) => [x.subpartition, x.parts]), [[1, 4]], 'subpartition 3 (400 bytes) gives way to 1 (800)');
    assert.ok(capped.parallelism <= free.parallelism - 1);
    assert.deepEqual(splitSkewedSubpartitions({ ...req, maxParallelism: req.decision.parallelism }).splits, []);
  });

  it('takes Flink\'s median: the middle value, the floor of the mean of the two middle ones, at least 1', () => {
    assert.equal(medianBytes([5, 1, 3]), 3);
    assert.equal(medianBytes([4, 1, 3, 10]), 3);
    assert.equal(medianBytes([0, 0, 0]), 1);
  });

  it('on 300 random vertices, reads every probe byte exactly once and, beside each probe slice, the whole build subpartition range', () => {
    let splitVertices = 0;
    for (let seed = 1; seed <= 300; seed++) {
      const next = random(seed);
      const int = (lo: number, hi: number) => lo + Math.floor(next() * (hi - lo + 1));
      const subpartitions = int(1, 24);
      const producers = int(1, 6);
      const hot = new Set(Array.from({ length: int(0, 3) }, () => int(0, subpartitions - 1)));
      const probeBytes = Array.from({ length: producers }, () => Array.from({ length: subpartitions }, (_, s) => (hot.has(s) ? int(500, 5000) : int(0, 100))));
      const inputs: ConsumedInputInfo[] = [
        { distribution: 'ALL_TO_ALL', bytes: probeBytes },
        { distribution: 'ALL_TO_ALL', bytes: Array.from({ length: int(1, 4) }, () => Array.from({ length: subpartitions }, () => int(0, 50))) },
      ];
      if (next() < 0.3) inputs.push({ distribution: 'ALL_TO_ALL', broadcast: true, bytes: [[int(0, 100)]] });
      const req = request(inputs, { dataVolumePerTaskBytes: int(50, 3000), skewedThresholdBytes: int(1, 2000), skewedFactor: 1 + next() * 4, maxParallelism: int(1, 40), splittable: inputs.map((_, i) => i === 0) });
      const out = splitSkewedSubpartitions(req);
      const context = `seed ${seed}`;
      if (out.splits.length > 0) splitVertices++;
      assert.ok(out.parallelism <= Math.max(req.maxParallelism, req.decision.parallelism), context);
      for (const info of out.inputs) assert.equal(info.subtasks.length, out.parallelism, context);
      const seen = probeBytes.map((row) => row.map(() => 0));
      for (let t = 0; t < out.parallelism; t++) {
        const p = out.inputs[0]?.subtasks[t];
        const b = out.inputs[1]?.subtasks[t];
        assert.ok(p !== undefined && b !== undefined, context);
        for (let k = p.partitions.start; k <= p.partitions.end; k++) for (let s = p.subpartitions.start; s <= p.subpartitions.end; s++) (seen[k] as number[])[s]! += 1;
        assert.deepEqual(b.subpartitions, p.subpartitions, `${context}: the build side reads the same key groups`);
        assert.deepEqual(b.partitions, all(inputs[1]?.bytes.length as number), `${context}: ... of every build producer`);
        if (inputs[2] !== undefined) assert.deepEqual(out.inputs[2]?.subtasks[t], { partitions: all(1), subpartitions: r(0) }, context);
      }
      assert.ok(seen.every((row) => row.every((n) => n === 1)), `${context}: every probe cell read once`);
      for (const x of out.splits) {
        const threshold = Math.max(Math.floor(medianBytes(Array.from({ length: subpartitions }, (_, s) => probeBytes.reduce((a, row) => a + (row[s] as number), 0))) * req.skewedFactor), req.skewedThresholdBytes);
        assert.ok(x.bytes > threshold && x.parts > 1, context);
        assert.equal(x.partitions.length, x.parts, context);
      }
    }
    assert.ok(splitVertices >= 60, `${splitVertices} of 300 vertices had a split`);
  });
});
