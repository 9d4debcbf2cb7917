import type { KeyValue } from '../api/functions.js';
import type { OperatorSpec } from '../api/logical-graph.js';
import type { WindowedValue } from '../api/windowed-data-set.js';
import { userFunctionError } from '../runtime/user-function-error.js';
import type { KeyedStateBackend } from '../state/keyed-state-backend.js';
import type { MapState } from '../state/keyed-state.js';
import { maxTimestampOf } from '../windows/time-window.js';
import { assignWindows } from '../windows/window-assigner.js';
import { WindowTimers } from '../windows/window-timers.js';
import type { OperatorContext, Output, StreamOperator } from './stream-operator.js';

/** The keyed map state of each key's open windows: window start → [window end, accumulator]. */
export const WINDOW_CONTENTS_STATE = 'window-contents';
/** The operator's (union) list state holding its watermark at the checkpoint. */
export const WINDOW_WATERMARK_STATE = 'window-watermark';

type WindowAggregateSpec = Extract<OperatorSpec, { kind: 'window-aggregate' }>;

/**
 * The keyed window operator (Flink's WindowOperator with an aggregating window state, no allowed
 * lateness, no merging windows). Each value goes to the windows its assigner gives its timestamp (event
 * time) or the task's clock (processing time), each window's accumulator in the key's map state, and a
 * timer at the window's `maxTimestamp` (`end - 1`). A timer fires when the input watermark (event time)
 * or the clock (processing time) reaches it: the window's WindowedValue is emitted and its state cleared.
 * A value none of whose windows is still open — its timestamp at or below the watermark — is dropped and
 * counted (`lateRecordsDropped`). End of input fires every window left (watermark +Infinity).
 *
 * Checkpoints: the windows are keyed state (snapshotted by key group); the timers are not stored — a
 * restore registers one per window in the restored state; the watermark is kept as union operator
 * state and a restored subtask starts from the lowest (so a value dropped before is dropped again).
 */
export class WindowAggregateOperator implements StreamOperator {
  lateRecordsDropped = 0;
  readonly #backend: KeyedStateBackend;
  readonly #windows: MapState<number, [number, unknown]>;
  readonly #eventTime: boolean;
  readonly #timers = new WindowTimers();
  readonly #clock: () => number;
  #watermark = Number.NEGATIVE_INFINITY;
  #timeout: ReturnType<typeof setTimeout> | undefined;
  #timeoutAt = Number.POSITIVE_INFINITY;
  /** An error of a processing-time timer's firing, rethrown on the task's next call. */
  #failure: unknown;
  #closed = false;

  constructor(
    private readonly spec: WindowAggregateSpec,
    private readonly output: Output,
    private readonly context: OperatorContext,
    clock: () => number = Date.now,
  ) {
    if (context.state === undefined) throw new Error('unreachable: a window operator without its state backends');
    this.#backend = context.state.keyed();
    this.#windows = this.#backend.mapState<number, [number, unknown]>(WINDOW_CONTENTS_STATE);
    this.#eventTime = spec.assigner.time === 'event';
    this.#clock = clock;
    if (context.state.restored) {
      const watermarks = context.state.operator().listState<number | null>(WINDOW_WATERMARK_STATE, 'union').get();
      const finite = watermarks.filter((w): w is number => typeof w === 'number');
      if (finite.length === watermarks.length && finite.length > 0) this.#watermark = Math.min(...finite);
      for (const key of this.#backend.keys(WINDOW_CONTENTS_STATE)) {
        this.#backend.setCurrentKey(key);
        for (const [, [end]] of this.#windows.entries()) this.#timers.register(end - 1, key);
      }
    }
  }

  open(): void {
    if (!this.#eventTime) this.#schedule();
  }

  collect(value: unknown): void {
    this.#rethrow();
    let key: KeyValue;
    try {
      key = this.spec.key(value);
    } catch (error) {
      throw userFunctionError(this.context, error, 'key selector');
    }
    const timestamp = this.#eventTime ? this.#timestampOf(value) : this.#clock();
    const backend = this.#backend;
    backend.setCurrentKey(key);
    const { folder, assigner } = this.spec;
    let skipped = true;
    for (const window of assignWindows(assigner, timestamp)) {
      const maxTimestamp = maxTimestampOf(window);
      // Flink's isWindowLate (allowed lateness 0); processing-time windows are never late
      if (this.#eventTime && maxTimestamp <= this.#watermark) continue;
      skipped = false;
      const current = this.#windows.get(window.start);
      let accumulator: unknown;
      try {
        accumulator = current === undefined ? folder.first(value) : folder.add(current[1], value);
      } catch (error) {
        throw userFunctionError(this.context, error, 'window function');
      }
      this.#windows.put(window.start, [window.end, accumulator]);
      if (current === undefined) this.#timers.register(maxTimestamp, key);
    }
    if (skipped && this.#eventTime && timestamp <= this.#watermark) this.lateRecordsDropped++;
    if (!this.#eventTime) this.#schedule();
  }

  processWatermark(watermarkMs: number): void {
    this.#rethrow();
    if (watermarkMs <= this.#watermark) return;
    this.#watermark = watermarkMs;
    if (this.#eventTime) this.#fire(watermarkMs);
    this.context.watermarks?.emitWatermark(watermarkMs);
  }

  snapshotState(): void {
    const watermark = Number.isFinite(this.#watermark) ? this.#watermark : null;
    this.context.state?.operator().listState<number | null>(WINDOW_WATERMARK_STATE, 'union').update([watermark]);
  }

  finish(): void {
    this.#rethrow();
    this.#cancelTimeout();
    // end of input: watermark +Infinity, and the clock's windows too (a bounded input gets every window)
    this.#fire(Number.POSITIVE_INFINITY);
  }

  close(): void {
    this.#closed = true;
    this.#cancelTimeout();
  }

  #timestampOf(value: unknown): number {
    let timestamp: number;
    try {
      timestamp = (this.spec.timestamp as (value: unknown) => number)(value);
    } catch (error) {
      throw userFunctionError(this.context, error, 'timestamp assigner');
    }
    if (typeof timestamp !== 'number' || !Number.isFinite(timestamp)) {
      throw userFunctionError(this.context, new TypeError(`the timestamp assigner returned ${String(timestamp)}, not a finite number of milliseconds`), 'timestamp assigner');
    }
    return timestamp;
  }

  /** Emits and clears every window whose timer is at or before `upTo`, earliest first. */
  #fire(upTo: number): void {
    const backend = this.#backend;
    const size = this.spec.assigner.sizeMs;
    const result = this.spec.folder.result;
    for (const [time, key] of this.#timers.takeDue(upTo)) {
      backend.setCurrentKey(key);
      const start = time + 1 - size;
      const entry = this.#windows.get(start);
      if (entry === undefined) continue;
      this.#windows.remove(start);
      let value: unknown;
      try {
        value = result(entry[1]);
      } catch (error) {
        throw userFunctionError(this.context, error, 'window result');
      }
      const out: WindowedValue<KeyValue, unknown> = { key: key as KeyValue, start, end: entry[0], value };
      this.output.collect(out);
    }
  }

  /** Processing time: a timeout for the earliest timer (kept when it is already the earliest). */
  #schedule(): void {
    const next = this.#timers.next;
    if (next === undefined || this.#closed) return;
    if (this.#timeout !== undefined && this.#timeoutAt <= next) return;
    this.#cancelTimeout();
    this.#timeoutAt = next;
    this.#timeout = setTimeout(() => this.#onTimeout(), Math.max(0, next + 1 - this.#clock()));
  }

  #onTimeout(): void {
    this.#timeout = undefined;
    this.#timeoutAt = Number.POSITIVE_INFINITY;
    if (this.#closed || this.#failure !== undefined) return;
    try {
      this.#fire(this.#clock());
      this.#schedule();
    } catch (error) {
      this.#failure = error;
    }
  }

  #cancelTimeout(): void {
    if (this.#timeout !== undefined) clearTimeout(this.#timeout);
    this.#timeout = undefined;
    this.#timeoutAt = Number.POSITIVE_INFINITY;
  }

  #rethrow(): void {
    if (this.#failure !== undefined) throw this.#failure;
  }
}
