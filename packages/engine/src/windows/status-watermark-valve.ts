/**
 * A task's input watermark over its input channels (Flink's StatusWatermarkValve): each channel's
 * watermark only rises (a lower one is ignored); the task's is the minimum over the active channels —
 * an idle channel is left out until it sends a watermark again, an ended one for good (end of input is
 * watermark +Infinity). When every channel is idle the task's watermark stays where it is. Each call
 * returns the task's new watermark when it rose, else undefined.
 */
export class StatusWatermarkValve {
  readonly #watermarks: Float64Array;
  readonly #idle: Uint8Array;
  #current = Number.NEGATIVE_INFINITY;

  constructor(channels: number) {
    if (!Number.isInteger(channels) || channels < 1) throw new RangeError(`a watermark valve needs at least one channel, got ${String(channels)}`);
    this.#watermarks = new Float64Array(channels).fill(Number.NEGATIVE_INFINITY);
    this.#idle = new Uint8Array(channels);
  }

  /** The task's watermark so far (-Infinity before every channel sent one). */
  get current(): number {
    return this.#current;
  }

  /** Every channel not ended is idle (and at least one is): the task itself is idle. */
  get allIdle(): boolean {
    let idle = false;
    for (let c = 0; c < this.#watermarks.length; c++) {
      if (this.#watermarks[c] === Number.POSITIVE_INFINITY) continue;
      if (this.#idle[c] === 0) return false;
      idle = true;
    }
    return idle;
  }

  /** A watermark from `channel` (an idle channel becomes active again). */
  inputWatermark(channel: number, watermark: number): number | undefined {
    this.#check(channel);
    this.#idle[channel] = 0;
    if (watermark > (this.#watermarks[channel] as number)) this.#watermarks[channel] = watermark;
    return this.#advance();
  }

  /** `channel` says it is idle (true) or active (false) without a watermark. */
  inputIdle(channel: number, idle: boolean): number | undefined {
    this.#check(channel);
    this.#idle[channel] = idle ? 1 : 0;
    return this.#advance();
  }

  /** `channel` ended: it holds nothing back any more. */
  endOfInput(channel: number): number | undefined {
    return this.inputWatermark(channel, Number.POSITIVE_INFINITY);
  }

  #advance(): number | undefined {
    let min = Number.POSITIVE_INFINITY;
    let active = false;
    for (let c = 0; c < this.#watermarks.length; c++) {
      if (this.#idle[c] === 1) continue;
      active = true;
      const w = this.#watermarks[c] as number;
      if (w < min) min = w;
    }
    if (!active || min <= this.#current) return undefined;
    this.#current = min;
    return min;
  }

  #check(channel: number): void {
    if (!Number.isInteger(channel) || channel < 0 || channel >= this.#watermarks.length) throw new RangeError(`no input channel ${String(channel)} (the valve has ${this.#watermarks.length})`);
  }
}
