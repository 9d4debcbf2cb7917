import type { KeySelector, KeyValue } from '../api/functions.js';
import { checkKey } from '../runtime/key-hash.js';
import { userFunctionError } from '../runtime/user-function-error.js';
import { emitAll, type OperatorContext, type Output, type StreamOperator } from './stream-operator.js';

/**
 * Sort, step 1: a uniform reservoir sample (Vitter's algorithm R) of the keys one subtask sees, emitted
 * at the end. Seeded by the subtask index, so a rerun samples alike.
 */
export class SortSampleOperator implements StreamOperator {
  readonly #reservoir: KeyValue[] = [];
  #seen = 0;
  #state: number;

  constructor(
    private readonly key: KeySelector<unknown, KeyValue>,
    private readonly samples: number,
    private readonly output: Output,
    private readonly context: OperatorContext,
  ) {
    this.#state = (context.subtask * 0x9e3779b1 + 0x6d2b79f5) | 0;
  }

  collect(value: unknown): void {
    let key: KeyValue;
    try {
      key = checkKey(this.key(value));
    } catch (error) {
      throw userFunctionError(this.context, error, 'key selector');
    }
    this.#seen++;
    if (this.#reservoir.length < this.samples) {
      this.#reservoir.push(key);
      return;
    }
    const slot = Math.floor(this.#random() * this.#seen);
    if (slot < this.samples) this.#reservoir[slot] = key;
  }

  async finish(): Promise<void> {
    await emitAll(this.#reservoir, this.output, this.context, (key) => key);
  }

  /** mulberry32 */
  #random(): number {
    let t = (this.#state = (this.#state + 0x6d2b79f5) | 0);
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  }
}
