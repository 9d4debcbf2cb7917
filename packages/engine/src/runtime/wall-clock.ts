/**
 * Wall-clock milliseconds with a fraction (the process's `performance.timeOrigin` plus its monotonic
 * `performance.now()`), for stamps compared across processes on one host — a restarted attempt's
 * `reading` report against the job master's failover — where `Date.now()`'s whole milliseconds are as
 * large as what is measured. Across hosts it holds to their clock sync, as `Date.now()` does.
 */
export function wallClockMs(): number {
  return performance.timeOrigin + performance.now();
}
