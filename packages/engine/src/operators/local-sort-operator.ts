import type { KeySelector, KeyValue } from '../api/functions.js';
import { ExternalSorter } from '../memory/external-sorter.js';
import { checkKey } from '../runtime/key-hash.js';
import { userFunctionError } from '../runtime/user-function-error.js';
import { emitAll, type OperatorContext, type Output, type StreamOperator } from './stream-operator.js';

/**
 * Sort, step 4: collects one range's `[range, value]` records, sorts the values by key, emits them —
 * stable, in the order of compareKeys (reversed when descending). An ExternalSorter holds them
 * serialized within the task's memory budget and spills sorted runs to the task's spill directory
 * when it is full, merging them at the end; the output order is the same either way.
 */
export class LocalSortOperator implements StreamOperator {
  readonly #sorter: ExternalSorter;

  constructor(
    private readonly key: KeySelector<unknown, KeyValue>,
    descending: boolean,
    private readonly output: Output,
    private readonly context: OperatorContext,
  ) {
    const name = context.operatorName;
    this.#sorter = new ExternalSorter({
      operator: name,
      consumer: context.memory.manager.consumer(name),
      spill: context.memory.spill,
      values: context.memory.serializer(),
      keys: context.memory.keySerializer(),
      descending,
    });
  }

  /** Runs spilled so far (merge passes included). */
  get runsSpilled(): number {
    return this.#sorter.runsSpilled;
  }

  /** The sort buffer's pages (ExternalSorter.pages). */
  get pages(): { readonly allocated: number; readonly pageBytes: number } {
    return this.#sorter.pages;
  }

  collect(record: unknown): void {
    const value = (record as [number, unknown])[1];
    let key: KeyValue;
    try {
      key = checkKey(this.key(value));
    } catch (error) {
      throw userFunctionError(this.context, error, 'key selector');
    }
    this.#sorter.add(key, value);
  }

  async finish(): Promise<void> {
    await emitAll(this.#sorter.sorted(), this.output, this.context, (value) => value);
  }

  close(): void {
    this.#sorter.close();
  }
}
