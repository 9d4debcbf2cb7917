// ApproximateInputWaits: which running consumers wait for a new attempt of an approximate partition's
// producer — each channel's input-unavailable counted until its input-resumed, one entry per consumer
// execution vertex (a newer attempt replaces an older one's), handed over once when the job master fails
// them over. Expected values worked out by hand.
import { strict as assert } from 'node:assert';
import { describe, it } from 'node:test';
import { ApproximateInputWaits } from '../src/job-master/approximate-input-waits.js';

describe('ApproximateInputWaits', () => {
  it('a consumer waits while any of its channels of the partition waits', () => {
    const waits = new ApproximateInputWaits();
    waits.unavailable(3, 7, 'c#0@0');
    waits.unavailable(3, 7, 'c#0@0'); // two subpartitions of partition 3
    waits.resumed(3, 7, 'c#0@0');
    assert.deepEqual(waits.take(3), [{ v: 7, attemptId: 'c#0@0' }], 'one channel still waits');
    assert.deepEqual(waits.take(3), [], 'taken once');
  });

  it('a consumer whose every channel resumed waits no more', () => {
    const waits = new ApproximateInputWaits();
    waits.unavailable(3, 7, 'c#0@0');
    waits.resumed(3, 7, 'c#0@0');
    assert.deepEqual(waits.take(3), []);
  });

  it('a newer attempt of the consumer replaces the older one; an older attempt\'s resume changes nothing', () => {
    const waits = new ApproximateInputWaits();
    waits.unavailable(3, 7, 'c#0@0');
    waits.unavailable(3, 7, 'c#0@1');
    waits.resumed(3, 7, 'c#0@0');
    waits.unavailable(4, 8, 'c#1@0');
    assert.deepEqual(waits.take(3), [{ v: 7, attemptId: 'c#0@1' }]);
    assert.deepEqual(waits.take(4), [{ v: 8, attemptId: 'c#1@0' }], 'partitions are kept apart');
  });
});
