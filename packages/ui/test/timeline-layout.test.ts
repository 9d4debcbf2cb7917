import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { seededRandom } from '@weft/testkit';
import { packIntervals } from '../app/src/timeline-layout.js';

describe('packIntervals', () => {
  it('puts overlapping intervals on separate rows and reuses a row once it is free', () => {
    const packed = packIntervals([
      { startMs: 0, endMs: 10 },
      { startMs: 5, endMs: 15 },
      { startMs: 10, endMs: 20 },
    ], 8);
    assert.equal(packed.rows.length, 2);
    assert.deepEqual(packed.rows[0]!.map((i) => i.startMs), [0, 10]);
    assert.equal(packed.overflow, 0);
  });

  it('on random intervals: no two in a row overlap, every interval is placed once, rows are as few as the peak overlap', () => {
    const random = seededRandom(3);
    for (let round = 0; round < 200; round++) {
      const intervals = Array.from({ length: 1 + Math.floor(random() * 60) }, () => {
        const startMs = Math.floor(random() * 1000);
        return { startMs, endMs: startMs + 1 + Math.floor(random() * 200) };
      });
      const packed = packIntervals(intervals, 1000);
      assert.equal(packed.rows.flat().length, intervals.length);
      for (const row of packed.rows) for (let k = 0; k + 1 < row.length; k++) assert.ok(row[k]!.endMs <= row[k + 1]!.startMs);
      const peak = Math.max(...intervals.map((a) => intervals.filter((b) => b.startMs <= a.startMs && a.startMs < b.endMs).length));
      assert.equal(packed.rows.length, peak);
    }
  });

  it('stacks what exceeds maxRows on the last row and counts it', () => {
    const packed = packIntervals(Array.from({ length: 5 }, () => ({ startMs: 0, endMs: 10 })), 2);
    assert.equal(packed.rows.length, 2);
    assert.equal(packed.overflow, 3);
    assert.equal(packed.rows.flat().length, 5);
  });
});
