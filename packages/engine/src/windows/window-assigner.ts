import { EngineError } from '../errors/engine-error.js';
import { getWindowStartWithOffset, type TimeWindow } from './time-window.js';

/** Which clock a window assigner reads: the records' timestamps (with watermarks) or the task's wall clock. */
export type WindowTime = 'event' | 'processing';

/**
 * A window assigner (Flink's TumblingEventTimeWindows, SlidingEventTimeWindows and their processing-time
 * twins), as plain data: `size` ms windows every `slide` ms (tumbling: slide = size), aligned to
 * `offset` ms past the epoch. Made by `tumblingEventTimeWindows` and friends; read by `window()`.
 */
export interface WindowAssigner {
  readonly type: 'tumbling' | 'sliding';
  readonly time: WindowTime;
  readonly sizeMs: number;
  readonly slideMs: number;
  readonly offsetMs: number;
}

/** Tumbling event-time windows of `sizeMs` (Flink's `TumblingEventTimeWindows.of(size, offset)`). */
export function tumblingEventTimeWindows(sizeMs: number, offsetMs = 0): WindowAssigner {
  return checkWindowAssigner({ type: 'tumbling', time: 'event', sizeMs, slideMs: sizeMs, offsetMs });
}

/** Sliding event-time windows of `sizeMs` every `slideMs` (Flink's `SlidingEventTimeWindows.of(size, slide, offset)`). */
export function slidingEventTimeWindows(sizeMs: number, slideMs: number, offsetMs = 0): WindowAssigner {
  return checkWindowAssigner({ type: 'sliding', time: 'event', sizeMs, slideMs, offsetMs });
}

/** Tumbling windows of the task's wall clock (Flink's `TumblingProcessingTimeWindows`). */
export function tumblingProcessingTimeWindows(sizeMs: number, offsetMs = 0): WindowAssigner {
  return checkWindowAssigner({ type: 'tumbling', time: 'processing', sizeMs, slideMs: sizeMs, offsetMs });
}

/** Sliding windows of the task's wall clock (Flink's `SlidingProcessingTimeWindows`). */
export function slidingProcessingTimeWindows(sizeMs: number, slideMs: number, offsetMs = 0): WindowAssigner {
  return checkWindowAssigner({ type: 'sliding', time: 'processing', sizeMs, slideMs, offsetMs });
}

/**
 * Refuses what Flink refuses (`abs(offset) >= slide || size <= 0`, sliding also `slide <= 0`), naming the
 * field (WEFT_ERR_INVALID_JOB); integers only, so window bounds are exact.
 */
export function checkWindowAssigner(assigner: WindowAssigner): WindowAssigner {
  const field = (f: string): string => `window: ${f}`;
  if (typeof assigner !== 'object' || assigner === null) throw invalidJob('window: assigner', 'expected a window assigner (tumblingEventTimeWindows(…) and friends)');
  const { type, time, sizeMs, slideMs, offsetMs } = assigner;
  if (type !== 'tumbling' && type !== 'sliding') throw invalidJob(field('type'), `expected 'tumbling' or 'sliding', got ${JSON.stringify(type)}`);
  if (time !== 'event' && time !== 'processing') throw invalidJob(field('time'), `expected 'event' or 'processing', got ${JSON.stringify(time)}`);
  for (const [name, value] of [['sizeMs', sizeMs], ['slideMs', slideMs], ['offsetMs', offsetMs]] as const) {
    if (!Number.isSafeInteger(value)) throw invalidJob(field(name), `expected a safe integer (milliseconds), got ${String(value)}`);
  }
  if (sizeMs <= 0) throw invalidJob(field('sizeMs'), `expected a size > 0, got ${sizeMs}`);
  if (slideMs <= 0) throw invalidJob(field('slideMs'), `expected a slide > 0, got ${slideMs}`);
  if (type === 'tumbling' && slideMs !== sizeMs) throw invalidJob(field('slideMs'), `a tumbling window slides by its size ${sizeMs}, got ${slideMs}`);
  if (Math.abs(offsetMs) >= slideMs) throw invalidJob(field('offsetMs'), `expected |offset| < ${type === 'tumbling' ? 'size' : 'slide'} ${slideMs}, got ${offsetMs}`);
  return Object.freeze({ type, time, sizeMs, slideMs, offsetMs });
}

/**
 * The windows `timestamp` belongs to, as Flink assigns them: tumbling, the one window starting at
 * `getWindowStartWithOffset(timestamp, offset, size)`; sliding, the `size / slide` (rounded up) windows
 * from the last start `getWindowStartWithOffset(timestamp, offset, slide)` back by `slide` while
 * `start > timestamp - size` — latest first, as SlidingEventTimeWindows lists them.
 */
export function assignWindows(assigner: WindowAssigner, timestamp: number): TimeWindow[] {
  const { sizeMs, slideMs, offsetMs } = assigner;
  if (assigner.type === 'tumbling') {
    const start = getWindowStartWithOffset(timestamp, offsetMs, sizeMs);
    return [{ start, end: start + sizeMs }];
  }
  const windows: TimeWindow[] = [];
  const lastStart = getWindowStartWithOffset(timestamp, offsetMs, slideMs);
  for (let start = lastStart; start > timestamp - sizeMs; start -= slideMs) windows.push({ start, end: start + sizeMs });
  return windows;
}

/** `WEFT_ERR_INVALID_JOB` naming the field, as the job API's own checks word it. */
function invalidJob(field: string, problem: string): EngineError {
  return new EngineError('WEFT_ERR_INVALID_JOB', `invalid job: ${field}: ${problem}`, { context: { field } });
}
