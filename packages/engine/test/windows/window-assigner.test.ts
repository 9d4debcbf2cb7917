// Window assignment against hand-computed windows: the values of Flink's TumblingEventTimeWindowsTest and
// SlidingEventTimeWindowsTest (size 5000, slide 1000, offsets 100 and -100), negative timestamps, and
// the arguments Flink refuses.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  assignWindows,
  getWindowStartWithOffset,
  isEngineError,
  maxTimestampOf,
  slidingEventTimeWindows,
  slidingProcessingTimeWindows,
  tumblingEventTimeWindows,
  tumblingProcessingTimeWindows,
} from '@weft/engine';

const w = (start: number, end: number) => ({ start, end });

describe('window assigners', () => {
  it('tumbling windows of 5000 ms: [0, 5000) holds 0 and 4999, 5000 starts [5000, 10000)', () => {
    const assigner = tumblingEventTimeWindows(5000);
    assert.deepEqual(assignWindows(assigner, 0), [w(0, 5000)]);
    assert.deepEqual(assignWindows(assigner, 4999), [w(0, 5000)]);
    assert.deepEqual(assignWindows(assigner, 5000), [w(5000, 10000)]);
    assert.equal(maxTimestampOf(w(0, 5000)), 4999);
  });

  it('tumbling windows with offset 100 and -100 shift the boundaries (Flink testWindowAssignmentWithOffset / WithNegativeOffset)', () => {
    const plus = tumblingEventTimeWindows(5000, 100);
    assert.deepEqual(assignWindows(plus, 100), [w(100, 5100)]);
    assert.deepEqual(assignWindows(plus, 5099), [w(100, 5100)]);
    assert.deepEqual(assignWindows(plus, 5100), [w(5100, 10100)]);
    const minus = tumblingEventTimeWindows(5000, -100);
    assert.deepEqual(assignWindows(minus, 0), [w(-100, 4900)]);
    assert.deepEqual(assignWindows(minus, 4899), [w(-100, 4900)]);
    assert.deepEqual(assignWindows(minus, 4900), [w(4900, 9900)]);
  });

  it('negative timestamps land in the window that holds them, where the old formula did not', () => {
    const assigner = tumblingEventTimeWindows(5000);
    assert.deepEqual(assignWindows(assigner, -1), [w(-5000, 0)]);
    assert.deepEqual(assignWindows(assigner, -5000), [w(-5000, 0)]);
    assert.deepEqual(assignWindows(assigner, -5001), [w(-10000, -5000)]);
    assert.deepEqual(assignWindows(assigner, -6000), [w(-10000, -5000)]);
    // the brief's formula `timestamp - (timestamp - offset + size) % size` agrees from offset - size on
    for (let t = -5000; t < 20_000; t += 37) assert.equal(getWindowStartWithOffset(t, 0, 5000), t - ((t + 5000) % 5000), `t=${t}`);
    assert.equal(-6000 - ((-6000 + 5000) % 5000), -5000, 'the old formula gives [-5000, 0) for -6000');
  });

  it('sliding windows of 5000 every 1000: each timestamp is in 5 windows, latest first (Flink testWindowAssignment)', () => {
    const assigner = slidingEventTimeWindows(5000, 1000);
    assert.deepEqual(assignWindows(assigner, 0), [w(0, 5000), w(-1000, 4000), w(-2000, 3000), w(-3000, 2000), w(-4000, 1000)]);
    assert.deepEqual(assignWindows(assigner, 4999), [w(4000, 9000), w(3000, 8000), w(2000, 7000), w(1000, 6000), w(0, 5000)]);
    assert.deepEqual(assignWindows(assigner, 5000), [w(5000, 10000), w(4000, 9000), w(3000, 8000), w(2000, 7000), w(1000, 6000)]);
  });

  it('sliding windows with offset 100 (Flink testWindowAssignmentWithOffset)', () => {
    const assigner = slidingEventTimeWindows(5000, 1000, 100);
    assert.deepEqual(assignWindows(assigner, 100), [w(100, 5100), w(-900, 4100), w(-1900, 3100), w(-2900, 2100), w(-3900, 1100)]);
    assert.deepEqual(assignWindows(assigner, 5099), [w(4100, 9100), w(3100, 8100), w(2100, 7100), w(1100, 6100), w(100, 5100)]);
    assert.deepEqual(assignWindows(assigner, 5100), [w(5100, 10100), w(4100, 9100), w(3100, 8100), w(2100, 7100), w(1100, 6100)]);
  });

  it('a size that is not a multiple of the slide gives ceil(size / slide) or fewer windows, each holding the timestamp', () => {
    const assigner = slidingEventTimeWindows(5000, 3000);
    assert.deepEqual(assignWindows(assigner, 0), [w(0, 5000), w(-3000, 2000)]);
    assert.deepEqual(assignWindows(assigner, 2500), [w(0, 5000)]);
    assert.deepEqual(assignWindows(assigner, 4000), [w(3000, 8000), w(0, 5000)]);
    for (let t = -7000; t < 7000; t += 13) {
      for (const win of assignWindows(assigner, t)) assert.ok(win.start <= t && t < win.end && win.end - win.start === 5000, `t=${t}`);
    }
  });

  it('processing-time assigners cut the clock the same way', () => {
    assert.deepEqual(assignWindows(tumblingProcessingTimeWindows(1000), 1_700_000_000_123), [w(1_700_000_000_000, 1_700_000_001_000)]);
    assert.equal(assignWindows(slidingProcessingTimeWindows(1000, 250), 1_700_000_000_123).length, 4);
    assert.equal(tumblingProcessingTimeWindows(1000).time, 'processing');
  });

  it('refuses what Flink refuses: size or slide <= 0, |offset| >= slide, non-integers, naming the field', () => {
    const refused = (make: () => unknown, field: string): void => {
      try {
        make();
        assert.fail(`expected ${field} to be refused`);
      } catch (error) {
        assert.ok(isEngineError(error, 'WEFT_ERR_INVALID_JOB'), String(error));
        assert.equal(error.context?.['field'], field);
      }
    };
    refused(() => tumblingEventTimeWindows(0), 'window: sizeMs');
    refused(() => tumblingEventTimeWindows(-1), 'window: sizeMs');
    refused(() => tumblingEventTimeWindows(1000, 1000), 'window: offsetMs');
    refused(() => tumblingEventTimeWindows(1000, -1000), 'window: offsetMs');
    refused(() => slidingEventTimeWindows(1000, 0), 'window: slideMs');
    refused(() => slidingEventTimeWindows(1000, 100, 100), 'window: offsetMs');
    refused(() => tumblingEventTimeWindows(1.5), 'window: sizeMs');
  });
});
