import type { KeySelector, KeyValue } from '../api/functions.js';
import { compareKeys } from '../runtime/key-compare.js';
import { checkKey } from '../runtime/key-hash.js';
import { userFunctionError } from '../runtime/user-function-error.js';
import { emitAll, type OperatorContext, type Output, type StreamOperator } from './stream-operator.js';

/** Sort, step 4: collects one range's `[range, value]` records, sorts the values by key, emits them. */
export class LocalSortOperator implements StreamOperator {
  #keys: KeyValue[] = [];
  #values: unknown[] = [];
  #allStrings = true;
  #allNumbers = true;

  constructor(
    private readonly key: KeySelector<unknown, KeyValue>,
    private readonly descending: boolean,
    private readonly output: Output,
    private readonly context: OperatorContext,
  ) {}

  collect(record: unknown): void {
    const value = (record as [number, unknown])[1];
    let key: KeyValue;
    try {
      key = checkKey(this.key(value));
    } catch (error) {
      throw userFunctionError(this.context, error, 'key selector');
    }
    if (typeof key !== 'string') this.#allStrings = false;
    if (typeof key !== 'number') this.#allNumbers = false;
    this.#keys.push(key);
    this.#values.push(value);
  }

  async finish(): Promise<void> {
    const keys = this.#keys;
    const values = this.#values;
    const order = new Uint32Array(keys.length);
    for (let i = 0; i < order.length; i++) order[i] = i;
    const sign = this.descending ? -1 : 1;
    let compare: (a: number, b: number) => number;
    if (this.#allStrings) {
      const k = keys as string[];
      compare = (a, b) => {
        const x = k[a] as string;
        const y = k[b] as string;
        return x < y ? -sign : x > y ? sign : a - b;
      };
    } else if (this.#allNumbers) {
      const k = keys as number[];
      compare = (a, b) => sign * compareKeys(k[a] as number, k[b] as number) || a - b;
    } else {
      compare = (a, b) => sign * compareKeys(keys[a] as KeyValue, keys[b] as KeyValue) || a - b;
    }
    order.sort(compare);
    this.#keys = [];
    await emitAll(order, this.output, this.context, (i) => values[i]);
    this.#values = [];
  }
}
