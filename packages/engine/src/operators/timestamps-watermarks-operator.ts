import type { ResolvedWatermarkStrategy } from '../api/watermark-strategy.js';
import { userFunctionError } from '../runtime/user-function-error.js';
import { BoundedOutOfOrdernessWatermarks } from '../windows/bounded-out-of-orderness-watermarks.js';
import type { OperatorContext, Output, StreamOperator } from './stream-operator.js';

/**
 * `assignTimestampsAndWatermarks` (Flink's TimestampsAndWatermarksOperator): passes every value on, reads
 * its timestamp, and emits the bounded-out-of-orderness watermark — every `intervalMs` from a timer, or
 * after each value that raised it when the interval is 0. With `idleTimeoutMs`, a periodic emission that
 * finds no value since the timeout marks the task idle (the next value makes it active again). Watermarks
 * of its own inputs are not forwarded (it makes the task's); end of input needs none (end-of-partition).
 */
export class TimestampsWatermarksOperator implements StreamOperator {
  readonly #generator: BoundedOutOfOrdernessWatermarks;
  #timer: ReturnType<typeof setInterval> | undefined;
  #seen = 0;
  #seenAtLastTick = 0;
  #lastActiveMs = 0;
  #idle = false;
  #failure: unknown;

  constructor(
    private readonly spec: ResolvedWatermarkStrategy,
    private readonly output: Output,
    private readonly context: OperatorContext,
  ) {
    this.#generator = new BoundedOutOfOrdernessWatermarks(spec.outOfOrdernessMs);
  }

  open(): void {
    if (this.spec.intervalMs === 0 || this.context.watermarks === undefined) return;
    this.#lastActiveMs = performance.now();
    this.#timer = setInterval(() => {
      try {
        this.#tick();
      } catch (error) {
        // surfaced on the task's next call into this operator
        this.#failure ??= error;
        this.#stop();
      }
    }, this.spec.intervalMs);
    this.#timer.unref?.();
  }

  collect(value: unknown): void {
    if (this.#failure !== undefined) throw this.#failure;
    let timestamp: number;
    try {
      timestamp = this.spec.timestamp(value);
    } catch (error) {
      throw userFunctionError(this.context, error, 'timestamp assigner');
    }
    if (typeof timestamp !== 'number' || !Number.isFinite(timestamp)) {
      throw userFunctionError(this.context, new TypeError(`the timestamp assigner returned ${String(timestamp)}, not a finite number of milliseconds`), 'timestamp assigner');
    }
    this.#generator.onEvent(timestamp);
    this.#seen++;
    this.output.collect(value);
    if (this.spec.intervalMs === 0) this.context.watermarks?.emitWatermark(this.#generator.currentWatermark());
  }

  finish(): void {
    this.#stop();
    if (this.#failure !== undefined) throw this.#failure;
    // what came since the last tick goes out before the end of input
    this.context.watermarks?.emitWatermark(this.#generator.currentWatermark());
  }

  close(): void {
    this.#stop();
  }

  #tick(): void {
    const watermarks = this.context.watermarks;
    if (watermarks === undefined) return;
    const now = performance.now();
    if (this.#seen !== this.#seenAtLastTick) {
      this.#seenAtLastTick = this.#seen;
      this.#lastActiveMs = now;
      this.#idle = false;
    } else if (this.spec.idleTimeoutMs !== undefined && !this.#idle && now - this.#lastActiveMs >= this.spec.idleTimeoutMs) {
      this.#idle = true;
      watermarks.markIdle();
      return;
    }
    if (!this.#idle) watermarks.emitWatermark(this.#generator.currentWatermark());
  }

  #stop(): void {
    if (this.#timer !== undefined) clearInterval(this.#timer);
    this.#timer = undefined;
  }
}
