import { canonicalKey } from '../runtime/key-hash.js';

/**
 * A window operator's timers of one time domain: (time, key) pairs, each at most once (Flink's
 * InternalTimerService, on the heap). Not checkpointed itself — a window's timer is `maxTimestamp` of a
 * window in keyed state, so a restore registers them again from the state.
 */
export class WindowTimers {
  /** Distinct timer times, ascending. */
  readonly #times: number[] = [];
  readonly #keys = new Map<number, Map<string, unknown>>();

  get size(): number {
    let n = 0;
    for (const keys of this.#keys.values()) n += keys.size;
    return n;
  }

  /** The earliest timer's time, or undefined when none. */
  get next(): number | undefined {
    return this.#times[0];
  }

  register(time: number, key: unknown): void {
    let keys = this.#keys.get(time);
    if (keys === undefined) {
      this.#keys.set(time, (keys = new Map()));
      // binary search for the insertion point (timers mostly arrive in order: usually the end)
      let lo = 0;
      let hi = this.#times.length;
      while (lo < hi) {
        const mid = (lo + hi) >>> 1;
        if ((this.#times[mid] as number) < time) lo = mid + 1;
        else hi = mid;
      }
      this.#times.splice(lo, 0, time);
    }
    keys.set(canonicalKey(key), key);
  }

  /** Removes and returns the timers at or before `upTo`, earliest first (keys of one time in registration order). */
  takeDue(upTo: number): [number, unknown][] {
    const due: [number, unknown][] = [];
    let n = 0;
    while (n < this.#times.length && (this.#times[n] as number) <= upTo) {
      const time = this.#times[n] as number;
      for (const key of (this.#keys.get(time) as Map<string, unknown>).values()) due.push([time, key]);
      this.#keys.delete(time);
      n++;
    }
    this.#times.splice(0, n);
    return due;
  }
}
