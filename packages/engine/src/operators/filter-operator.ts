import type { FilterFunction, RuntimeContext } from '../api/functions.js';
import { userFunctionError } from '../runtime/user-function-error.js';
import { type OperatorContext, type Output, runtimeContextOf, type StreamOperator } from './stream-operator.js';

export class FilterOperator implements StreamOperator {
  constructor(
    private readonly fn: FilterFunction<unknown>,
    private readonly output: Output,
    private readonly context: OperatorContext,
  ) {
    this.runtime = runtimeContextOf(context);
  }

  private readonly runtime: RuntimeContext;

  collect(value: unknown): void {
    let keep: boolean;
    try {
      keep = this.fn(value, this.runtime);
    } catch (error) {
      throw userFunctionError(this.context, error);
    }
    if (keep) this.output.collect(value);
  }
}
