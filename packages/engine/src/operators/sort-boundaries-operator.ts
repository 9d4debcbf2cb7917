import type { KeyValue } from '../api/functions.js';
import { compareKeys } from '../runtime/key-compare.js';
import type { Output, StreamOperator } from './stream-operator.js';

/** Most samples forwarded to the range assigners (evenly thinned from all that arrived). */
const MAX_FORWARDED_SAMPLES = 100_000;

/**
 * Sort, step 2 (one subtask): gathers every subtask's key sample, sorts it (descending when asked) and
 * emits it as a single record, which the range assigners (broadcast) turn into range boundaries.
 */
export class SortBoundariesOperator implements StreamOperator {
  readonly #samples: KeyValue[] = [];

  constructor(
    private readonly descending: boolean,
    private readonly output: Output,
  ) {}

  collect(value: unknown): void {
    this.#samples.push(value as KeyValue);
  }

  finish(): void {
    const sign = this.descending ? -1 : 1;
    const sorted = this.#samples.sort((a, b) => sign * compareKeys(a, b));
    let forwarded = sorted;
    if (sorted.length > MAX_FORWARDED_SAMPLES) {
      forwarded = Array.from({ length: MAX_FORWARDED_SAMPLES }, (_, i) => sorted[Math.floor((i * sorted.length) / MAX_FORWARDED_SAMPLES)] as KeyValue);
    }
    this.output.collect(forwarded);
  }
}
