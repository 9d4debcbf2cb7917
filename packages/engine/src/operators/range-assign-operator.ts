import type { KeySelector, KeyValue } from '../api/functions.js';
import { compareKeys } from '../runtime/key-compare.js';
import { checkKey } from '../runtime/key-hash.js';
import { userFunctionError } from '../runtime/user-function-error.js';
import type { OperatorContext, Output, StreamOperator } from './stream-operator.js';

/**
 * Sort, step 3: reads the sorted sample (input 1) first and picks `ranges - 1` splitters at its
 * quantiles, then routes each value (input 0) to the range of its key: emits `[range, value]`, where
 * range r holds keys k with splitter[r-1] <= k < splitter[r] (reversed when descending).
 */
export class RangeAssignOperator implements StreamOperator {
  readonly inputPhases = [[1], [0]] as const;
  #splitters: KeyValue[] = [];
  readonly #sign: number;

  constructor(
    private readonly key: KeySelector<unknown, KeyValue>,
    descending: boolean,
    private readonly output: Output,
    private readonly context: OperatorContext,
  ) {
    this.#sign = descending ? -1 : 1;
  }

  collect(value: unknown): void {
    this.processInput(value, 0);
  }

  processInput(value: unknown, input: number): void {
    if (input === 1) {
      const samples = value as KeyValue[];
      const ranges = Math.max(1, this.context.outputConsumers);
      const splitters: KeyValue[] = [];
      if (samples.length > 0) {
        for (let r = 1; r < ranges; r++) splitters.push(samples[Math.min(samples.length - 1, Math.floor((r * samples.length) / ranges))] as KeyValue);
      }
      this.#splitters = splitters;
      return;
    }
    let key: KeyValue;
    try {
      key = checkKey(this.key(value));
    } catch (error) {
      throw userFunctionError(this.context, error, 'key selector');
    }
    // first splitter greater than key (ascending order under sign)
    const splitters = this.#splitters;
    const sign = this.#sign;
    let lo = 0;
    let hi = splitters.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (sign * compareKeys(splitters[mid] as KeyValue, key) <= 0) lo = mid + 1;
      else hi = mid;
    }
    this.output.collect([lo, value]);
  }
}
