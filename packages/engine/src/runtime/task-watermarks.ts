import type { ResultPartitionWriter, ShuffleEvent } from '@weft/shuffle-api';
import type { WatermarkOutput } from '../operators/stream-operator.js';
import { StatusWatermarkValve } from '../windows/status-watermark-valve.js';
import { IDLE_EVENT, readWatermarkEvent, watermarkEvent } from '../windows/watermark-event.js';
import type { TaskBackpressure } from './backpressure.js';

export interface TaskWatermarksOptions {
  /** The task's writers (their watermark events go out in order with the records before them). */
  readonly writers: readonly { readonly writer: ResultPartitionWriter }[];
  readonly backpressure: TaskBackpressure;
  /** Input channels over all the task's gates (0 for a source). */
  readonly channels: number;
  /** The task's input watermark rose (the minimum over its channels). */
  readonly onInputWatermark: (watermarkMs: number) => void;
  /**
   * Whether the task forwards its inputs' idleness (every input channel idle → it marks itself idle, and
   * active again at the first channel back): true unless its chain assigns its own watermarks.
   * @defaultValue true
   */
  readonly forwardIdleness?: boolean;
}

/**
 * A task's watermarks: in, the `weft.watermark` events and ends of its input channels through a
 * StatusWatermarkValve; out, what its operators emit (or what it forwards), broadcast on every writer
 * when it rises. A task that was marked idle sends its watermark again on the next emission even if it
 * did not rise (so its consumers count its channels again). Idleness is forwarded: a task all of whose
 * input channels are idle marks itself idle (Flink's StatusWatermarkValve forwarding WatermarkStatus.IDLE).
 */
export class TaskWatermarks implements WatermarkOutput {
  readonly #options: TaskWatermarksOptions;
  /** Made at the first watermark event: a job without watermarks pays for no valve (its ends are only noted). */
  #valve: StatusWatermarkValve | undefined;
  readonly #ended: Uint8Array;
  #emitted = Number.NEGATIVE_INFINITY;
  #idle = false;
  #closed = false;

  constructor(options: TaskWatermarksOptions) {
    this.#options = options;
    this.#ended = new Uint8Array(options.channels);
  }

  /** The last watermark sent downstream. */
  get emitted(): number {
    return this.#emitted;
  }

  /** The task's writers finished or failed: nothing more is sent (an operator's timer may still tick until it is closed). */
  close(): void {
    this.#closed = true;
  }

  emitWatermark(watermarkMs: number): void {
    if (this.#closed) return;
    if (watermarkMs > this.#emitted) this.#emitted = watermarkMs;
    else if (!this.#idle) return;
    this.#idle = false;
    // +Infinity (end of input) travels as end-of-partition
    if (Number.isFinite(this.#emitted)) this.#broadcast(watermarkEvent(this.#emitted));
  }

  markIdle(): void {
    if (this.#idle || this.#closed) return;
    this.#idle = true;
    this.#broadcast(IDLE_EVENT);
  }

  /** An event of input channel `channel` (task-wide numbering); all but watermarks and ends are ignored. */
  inputEvent(channel: number, event: ShuffleEvent): void {
    if (channel < 0 || channel >= this.#ended.length) return;
    let advanced: number | undefined;
    if (event.type === 'end-of-partition') {
      this.#ended[channel] = 1;
      advanced = this.#valve?.endOfInput(channel);
    } else {
      const watermark = readWatermarkEvent(event);
      if (watermark === undefined) return;
      const valve = this.#valve ?? this.#makeValve();
      const wasIdle = valve.allIdle;
      advanced = watermark === 'idle' ? valve.inputIdle(channel, true) : valve.inputWatermark(channel, watermark);
      if (this.#options.forwardIdleness !== false && wasIdle !== valve.allIdle) {
        // all idle: so is this task; one back: send the watermark again so consumers count it
        if (valve.allIdle) this.markIdle();
        else if (advanced === undefined) this.emitWatermark(Number.NEGATIVE_INFINITY);
      }
    }
    if (advanced !== undefined) this.#options.onInputWatermark(advanced);
  }

  #makeValve(): StatusWatermarkValve {
    const valve = new StatusWatermarkValve(this.#ended.length);
    for (let c = 0; c < this.#ended.length; c++) if (this.#ended[c] === 1) valve.endOfInput(c);
    this.#valve = valve;
    return valve;
  }

  #broadcast(event: ShuffleEvent): void {
    const { writers, backpressure } = this.#options;
    for (const { writer } of writers) if (!writer.broadcastEvent(event)) backpressure.block(writer);
  }
}
