// A task's watermarks between its input channels and its writers: forwarded when they rise, ends of
// input as +Infinity, idleness forwarded when every channel is idle and the watermark sent again when one
// comes back, nothing sent once the writers finished or failed. The writers here are a recording
// stand-in for the shuffle's (only broadcastEvent is called).
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { ResultPartitionWriter, ShuffleEvent } from '@weft/shuffle-api';
import { TaskBackpressure } from '../../src/runtime/backpressure.js';
import { TaskWatermarks } from '../../src/runtime/task-watermarks.js';
import { IDLE_EVENT, watermarkEvent } from '../../src/windows/watermark-event.js';

function recordingWriter(): { writer: ResultPartitionWriter; events: ShuffleEvent[] } {
  const events: ShuffleEvent[] = [];
  const writer = { broadcastEvent: (event: ShuffleEvent) => events.push(event) > 0 } as unknown as ResultPartitionWriter;
  return { writer, events };
}

function setUp(channels: number, forwardIdleness = true) {
  const out = recordingWriter();
  const inputs: number[] = [];
  const watermarks: TaskWatermarks = new TaskWatermarks({
    writers: [{ writer: out.writer }],
    backpressure: new TaskBackpressure(),
    channels,
    forwardIdleness,
    onInputWatermark: (w) => {
      inputs.push(w);
      watermarks.emitWatermark(w);
    },
  });
  return { watermarks, inputs, events: out.events };
}

const wm = (n: number): ShuffleEvent => watermarkEvent(n);

describe('task watermarks', () => {
  it('forwards the minimum over its channels when it rises; an end of partition is +Infinity and sends nothing', () => {
    const { watermarks, inputs, events } = setUp(2);
    watermarks.inputEvent(0, wm(100));
    watermarks.inputEvent(1, wm(50));
    watermarks.inputEvent(1, wm(40));
    watermarks.inputEvent(1, wm(120));
    watermarks.inputEvent(0, { type: 'end-of-partition' });
    watermarks.inputEvent(1, { type: 'end-of-partition' });
    assert.deepEqual(inputs, [50, 100, 120, Number.POSITIVE_INFINITY]);
    assert.deepEqual(events, [wm(50), wm(100), wm(120)]);
  });

  it('channels that ended before the first watermark hold nothing back', () => {
    const { watermarks, inputs } = setUp(3);
    watermarks.inputEvent(2, { type: 'end-of-partition' });
    watermarks.inputEvent(0, wm(10));
    watermarks.inputEvent(1, wm(20));
    assert.deepEqual(inputs, [10]);
  });

  it('marks itself idle when every channel is idle, and sends its watermark again when one is back', () => {
    const { watermarks, events } = setUp(2);
    watermarks.inputEvent(0, wm(10));
    watermarks.inputEvent(1, wm(20));
    watermarks.inputEvent(0, IDLE_EVENT);
    assert.deepEqual(events, [wm(10), wm(20)], 'one idle channel: the other one sets the watermark');
    watermarks.inputEvent(1, IDLE_EVENT);
    assert.deepEqual(events.at(-1), IDLE_EVENT);
    watermarks.inputEvent(0, wm(15));
    assert.deepEqual(events.at(-1), wm(20), 'back, not higher: the same watermark again, so consumers count this task');
    watermarks.inputEvent(1, wm(30));
    assert.deepEqual(events, [wm(10), wm(20), IDLE_EVENT, wm(20)], 'channel 0 at 15 holds it back');
  });

  it('a chain that assigns its own watermarks does not forward idleness; nothing is sent after close()', () => {
    const own = setUp(1, false);
    own.watermarks.inputEvent(0, IDLE_EVENT);
    assert.deepEqual(own.events, []);
    const closed = setUp(1);
    closed.watermarks.close();
    closed.watermarks.inputEvent(0, wm(5));
    closed.watermarks.markIdle();
    assert.deepEqual(closed.events, []);
  });
});
