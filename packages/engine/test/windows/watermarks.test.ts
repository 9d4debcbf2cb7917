// Watermarks: the bounded-out-of-orderness generator, the per-task valve over input channels (Flink's
// StatusWatermarkValve, idle and ended channels), and the in-band event that carries them.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { BoundedOutOfOrdernessWatermarks, IDLE_EVENT, readWatermarkEvent, StatusWatermarkValve, watermarkEvent } from '@weft/engine';
import { decodeEvent, encodeEvent } from '@weft/shuffle-api';

describe('watermarks', () => {
  it('bounded out-of-orderness: watermark = largest timestamp - outOfOrderness - 1, never lower', () => {
    const generator = new BoundedOutOfOrdernessWatermarks(100);
    assert.equal(generator.currentWatermark(), Number.NEGATIVE_INFINITY);
    generator.onEvent(1000);
    assert.equal(generator.currentWatermark(), 899);
    generator.onEvent(950);
    assert.equal(generator.currentWatermark(), 899);
    generator.onEvent(1200);
    assert.equal(generator.currentWatermark(), 1099);
    assert.equal(new BoundedOutOfOrdernessWatermarks(0).currentWatermark(), Number.NEGATIVE_INFINITY);
  });

  it('one channel: each higher watermark goes through, a lower one is ignored', () => {
    const valve = new StatusWatermarkValve(1);
    assert.equal(valve.inputWatermark(0, 0), 0);
    assert.equal(valve.inputWatermark(0, 25), 25);
    assert.equal(valve.inputWatermark(0, 18), undefined);
    assert.equal(valve.inputWatermark(0, 25), undefined);
    assert.equal(valve.inputWatermark(0, 42), 42);
    assert.equal(valve.current, 42);
  });

  it('three channels: the task watermark is the minimum, rising only when the slowest channel does', () => {
    const valve = new StatusWatermarkValve(3);
    assert.equal(valve.inputWatermark(0, 10), undefined);
    assert.equal(valve.inputWatermark(1, 7), undefined);
    assert.equal(valve.inputWatermark(2, 3), 3);
    assert.equal(valve.inputWatermark(2, 10), 7);
    assert.equal(valve.inputWatermark(0, 5), undefined, 'a channel going back is ignored');
    assert.equal(valve.inputWatermark(1, 15), 10);
    assert.equal(valve.inputWatermark(0, 20), undefined, 'still held by channel 2 at 10');
    assert.equal(valve.inputWatermark(2, 17), 15);
    assert.equal(valve.current, 15);
  });

  it('idle channels are left out until they send a watermark again; all idle holds the watermark', () => {
    const valve = new StatusWatermarkValve(3);
    valve.inputWatermark(0, 10);
    valve.inputWatermark(1, 5);
    assert.equal(valve.inputWatermark(2, 8), 5);
    assert.equal(valve.inputIdle(1, true), 8, 'channel 1 idle: min over 0 and 2');
    assert.equal(valve.inputIdle(2, true), 10);
    assert.equal(valve.inputIdle(0, true), undefined, 'every channel idle: nothing moves');
    assert.equal(valve.current, 10);
    assert.equal(valve.inputWatermark(1, 6), undefined, 'back with a lower watermark: held until it catches up');
    assert.equal(valve.current, 10);
    assert.equal(valve.inputWatermark(1, 12), 12);
  });

  it('an ended channel holds nothing back; every channel ended is watermark +Infinity (end of input)', () => {
    const valve = new StatusWatermarkValve(2);
    valve.inputWatermark(0, 100);
    assert.equal(valve.endOfInput(1), 100);
    assert.equal(valve.endOfInput(0), Number.POSITIVE_INFINITY);
    assert.throws(() => valve.inputWatermark(2, 1), /no input channel 2/);
  });

  it('the watermark event survives the shuffle framing (a user event, kind 4) and other events are not watermarks', () => {
    const decoded = decodeEvent(encodeEvent(watermarkEvent(1_700_000_000_999)));
    assert.equal(readWatermarkEvent(decoded), 1_700_000_000_999);
    assert.equal(readWatermarkEvent(decodeEvent(encodeEvent(IDLE_EVENT))), 'idle');
    assert.equal(readWatermarkEvent({ type: 'user', name: 'other', payload: { watermark: 1 } }), undefined);
    assert.equal(readWatermarkEvent({ type: 'user', name: 'weft.watermark', payload: { watermark: 'x' } }), undefined);
    assert.equal(readWatermarkEvent({ type: 'end-of-partition' }), undefined);
  });
});
