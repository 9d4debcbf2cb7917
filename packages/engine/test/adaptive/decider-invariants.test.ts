import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { type ConsumedInputInfo, decideParallelismAndInputInfos } from '@weft/engine';

/** A small deterministic generator (mulberry32), so a failure names a seed that reproduces it. */
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

describe('decideParallelismAndInputInfos: invariants on 400 random ALL_TO_ALL vertices', () => {
  it('covers every subpartition once, in order, with a parallelism within [min, max], and the data ranges stay under the limit when they can', () => {
    for (let seed = 1; seed <= 400; seed++) {
      const next = random(seed);
      const int = (lo: number, hi: number) => lo + Math.floor(next() * (hi - lo + 1));
      const subpartitions = int(1, 40);
      const inputs: ConsumedInputInfo[] = Array.from({ length: int(1, 3) }, () => ({
        distribution: 'ALL_TO_ALL',
        bytes: Array.from({ length: int(1, 5) }, () => Array.from({ length: subpartitions }, () => (next() < 0.2 ? 0 : int(0, 1000)))),
      }));
      if (next() < 0.3) inputs.push({ distribution: 'ALL_TO_ALL', broadcast: true, bytes: [[int(0, 5000)]] });
      const minParallelism = int(1, subpartitions);
      const maxParallelism = int(minParallelism, subpartitions + 5);
      const dataVolumePerTaskBytes = int(1, 20000);
      const request = { inputs, minParallelism, maxParallelism, dataVolumePerTaskBytes };
      const decided = decideParallelismAndInputInfos(request);
      const context = `seed ${seed}: ${JSON.stringify({ ...request, inputs: inputs.length })}`;

      assert.ok(decided.parallelism >= minParallelism && decided.parallelism <= maxParallelism, context);
      assert.equal(decided.inputs.length, inputs.length, context);
      decided.inputs.forEach((info, i) => {
        const input = inputs[i] as ConsumedInputInfo;
        assert.equal(info.subtasks.length, decided.parallelism, context);
        let next = 0;
        for (const subtask of info.subtasks) {
          assert.deepEqual(subtask.partitions, { start: 0, end: input.bytes.length - 1 }, context);
          if (input.broadcast) {
            assert.deepEqual(subtask.subpartitions, { start: 0, end: 0 }, context);
            continue;
          }
          assert.equal(subtask.subpartitions.start, next, context);
          assert.ok(subtask.subpartitions.end >= subtask.subpartitions.start, context);
          next = subtask.subpartitions.end + 1;
        }
        if (!input.broadcast) assert.equal(next, subpartitions, context);
      });

      // When every subpartition fits the limit and the greedy cut is legal, no range passes the limit.
      const nonBroadcast = inputs.filter((input) => input.broadcast !== true);
      const bySubpartition = Array.from({ length: subpartitions }, (_, s) =>
        nonBroadcast.reduce((sum, input) => sum + input.bytes.reduce((acc, partition) => acc + (partition[s] ?? 0), 0), 0),
      );
      const greedy = greedyCount(bySubpartition, dataVolumePerTaskBytes);
      if (greedy >= minParallelism && greedy <= maxParallelism && bySubpartition.every((b) => b <= dataVolumePerTaskBytes)) {
        assert.equal(decided.parallelism, greedy, context);
        const ranges = decided.inputs.find((_, i) => inputs[i]?.broadcast !== true)?.subtasks ?? [];
        for (const { subpartitions: range } of ranges) {
          const bytes = bySubpartition.slice(range.start, range.end + 1).reduce((a, b) => a + b, 0);
          assert.ok(bytes <= dataVolumePerTaskBytes, context);
        }
      }
    }
  });
});

describe('decideParallelismAndInputInfos: the bisected limit agrees with a linear scan over every limit', () => {
  it('on 600 random single-input vertices whose greedy cut at the data volume is outside [min, max]', () => {
    let adjusted = 0;
    let fellBack = 0;
    for (let seed = 1001; seed <= 1600; seed++) {
      const next = random(seed);
      const int = (lo: number, hi: number) => lo + Math.floor(next() * (hi - lo + 1));
      // A third alternate big and small subpartitions (Flink's fallback case): some counts are then unreachable.
      const alternate = next() < 0.35;
      const bytes = Array.from({ length: int(2, 14) }, (_, i) => (alternate ? (i % 2 === 0 ? int(20, 50) : int(0, 3)) : int(0, 50)));
      const minParallelism = int(1, bytes.length);
      const maxParallelism = next() < 0.4 ? minParallelism : int(minParallelism, bytes.length);
      const volume = int(1, 120);
      const total = bytes.reduce((a, b) => a + b, 0);
      const lowest = Math.min(...bytes);
      const current = greedyCount(bytes, volume);
      if (current >= minParallelism && current <= maxParallelism) continue;

      // The model: scan every limit one by one (count is non-increasing in the limit).
      let limit: number | undefined;
      if (current < minParallelism) {
        let best: number | undefined;
        for (let l = lowest; l <= volume; l++) if (greedyCount(bytes, l) >= minParallelism) best = l;
        if (best !== undefined) {
          const count = greedyCount(bytes, best);
          for (let l = lowest; l <= best; l++) if (greedyCount(bytes, l) === count) { limit = l; break; }
        }
      } else {
        for (let l = volume; l <= total; l++) if (greedyCount(bytes, l) <= maxParallelism) { limit = l; break; }
      }
      const legal = limit !== undefined && greedyCount(bytes, limit) >= minParallelism && greedyCount(bytes, limit) <= maxParallelism;

      const context = `seed ${seed}: ${JSON.stringify({ bytes, minParallelism, maxParallelism, volume })}`;
      const request = { inputs: [{ distribution: 'ALL_TO_ALL' as const, bytes: [bytes] }], minParallelism, maxParallelism, dataVolumePerTaskBytes: volume };
      const decided = decideParallelismAndInputInfos(request);
      const ranges = decided.inputs[0]?.subtasks.map((s) => s.subpartitions) ?? [];
      if (legal && limit !== undefined) {
        adjusted++;
        assert.deepEqual(ranges, greedyRanges(bytes, limit), context);
      } else {
        fellBack++;
        // Evenly distributed subpartitions at the parallelism decided from bytes.
        const parallelism = Math.min(maxParallelism, Math.max(minParallelism, Math.ceil(total / volume)));
        const even = Array.from({ length: parallelism }, (_, k) => ({
          start: Math.floor((k * bytes.length) / parallelism),
          end: Math.floor(((k + 1) * bytes.length) / parallelism) - 1,
        }));
        assert.deepEqual(ranges, even, context);
      }
    }
    assert.ok(adjusted > 100 && fellBack >= 5, `both paths exercised: ${adjusted} adjusted, ${fellBack} fell back`);
  });
});

/** The ranges of the independent greedy cut. */
function greedyRanges(bytes: number[], limit: number): { start: number; end: number }[] {
  const ranges: { start: number; end: number }[] = [];
  let sum = 0;
  bytes.forEach((b, i) => {
    if (i === 0) sum = b;
    else if (sum + b > limit) {
      ranges.push({ start: ranges.length === 0 ? 0 : (ranges[ranges.length - 1] as { end: number }).end + 1, end: i - 1 });
      sum = b;
    } else sum += b;
  });
  ranges.push({ start: ranges.length === 0 ? 0 : (ranges[ranges.length - 1] as { end: number }).end + 1, end: bytes.length - 1 });
  return ranges;
}

/** An independent greedy cut: how many ranges of at most `limit` bytes (a lone larger one allowed). */
function greedyCount(bytes: number[], limit: number): number {
  let count = 0;
  let sum = 0;
  bytes.forEach((b, i) => {
    if (i === 0 || sum + b > limit) {
      count += 1;
      sum = b;
    } else sum += b;
  });
  return count;
}
