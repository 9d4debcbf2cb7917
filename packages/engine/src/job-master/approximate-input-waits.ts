/** A consumer attempt whose channels of one approximate partition wait for a new producer attempt. */
export interface InputWait {
  readonly v: number;
  readonly attemptId: string;
}

/**
 * The consumer attempts whose PIPELINED_APPROXIMATE input channels lost their producer attempt and wait for
 * a new one (TaskEvent `input-unavailable`, until `input-resumed`), by partition index: what the job master
 * fails over at once when that partition's producer will not come back (it had finished, and its outputs
 * were lost with its process), instead of letting them wait out their reconnect timeout. One entry per
 * consumer execution vertex: a newer attempt's report replaces an older one's. Owns nothing to close.
 */
export class ApproximateInputWaits {
  /** Per partition: consumer execution vertex → its attempt and how many of its channels wait. */
  readonly #waiting = new Map<number, Map<number, { attemptId: string; channels: number }>>();

  /** A channel of attempt `attemptId` (of execution vertex `v`) reading partition `p` lost its producer attempt. */
  unavailable(p: number, v: number, attemptId: string): void {
    let waiting = this.#waiting.get(p);
    if (waiting === undefined) this.#waiting.set(p, (waiting = new Map()));
    const known = waiting.get(v);
    if (known?.attemptId === attemptId) known.channels++;
    else waiting.set(v, { attemptId, channels: 1 });
  }

  /** That channel reads a new producer attempt of `p`. */
  resumed(p: number, v: number, attemptId: string): void {
    const waiting = this.#waiting.get(p);
    const known = waiting?.get(v);
    if (waiting === undefined || known?.attemptId !== attemptId) return;
    if (--known.channels > 0) return;
    waiting.delete(v);
    if (waiting.size === 0) this.#waiting.delete(p);
  }

  /** The attempts waiting on partition `p` (some may be stale: the caller checks), forgotten here. */
  take(p: number): InputWait[] {
    const waiting = this.#waiting.get(p);
    this.#waiting.delete(p);
    return [...(waiting ?? [])].map(([v, { attemptId }]) => ({ v, attemptId }));
  }
}
