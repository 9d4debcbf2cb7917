/**
 * Flink's BoundedOutOfOrdernessWatermarks: records may arrive up to `outOfOrdernessMs` later than a
 * record with a larger timestamp. The watermark it emits is `maxTimestamp - outOfOrdernessMs - 1` — no
 * record with a timestamp at or below it is expected any more. Before any record: -Infinity.
 */
export class BoundedOutOfOrdernessWatermarks {
  readonly #outOfOrdernessMs: number;
  #maxTimestamp = Number.NEGATIVE_INFINITY;

  constructor(outOfOrdernessMs: number) {
    this.#outOfOrdernessMs = outOfOrdernessMs;
  }

  /** Sees one record's timestamp. */
  onEvent(timestampMs: number): void {
    if (timestampMs > this.#maxTimestamp) this.#maxTimestamp = timestampMs;
  }

  /** The watermark now (Flink calls it on each periodic emission). */
  currentWatermark(): number {
    return this.#maxTimestamp - this.#outOfOrdernessMs - 1;
  }
}
