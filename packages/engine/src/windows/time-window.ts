/**
 * A time window `[start, end)` (Flink's TimeWindow): `end` is exclusive, so the last timestamp it holds
 * is `maxTimestamp = end - 1`. Plain data: windows travel in records (WindowedValue) and live in state.
 */
export interface TimeWindow {
  readonly start: number;
  readonly end: number;
}

/** The largest timestamp `window` holds: `end - 1` (its timer fires once time passes it). */
export function maxTimestampOf(window: TimeWindow): number {
  return window.end - 1;
}

/**
 * The start of the window of size `windowSize` and `offset` that holds `timestamp` (Flink's
 * `TimeWindow.getWindowStartWithOffset`, since FLINK-11017): with `remainder = (timestamp - offset) %
 * windowSize` (JavaScript's `%`, like Java's, keeps the dividend's sign), `timestamp - remainder`, or
 * `timestamp - (remainder + windowSize)` when the remainder is negative. It equals Flink's older
 * `timestamp - (timestamp - offset + windowSize) % windowSize` for every timestamp ≥ offset - windowSize;
 * before that the old formula gave a window that does not hold the timestamp.
 */
export function getWindowStartWithOffset(timestamp: number, offset: number, windowSize: number): number {
  const remainder = (timestamp - offset) % windowSize;
  return remainder < 0 ? timestamp - (remainder + windowSize) : timestamp - remainder;
}
