import type { FilterFunction } from '../api/functions.js';
import { userFunctionError } from '../runtime/user-function-error.js';
import type { OperatorContext, Output, StreamOperator } from './stream-operator.js';

export class FilterOperator implements StreamOperator {
  constructor(
    private readonly fn: FilterFunction<unknown>,
    private readonly output: Output,
    private readonly context: OperatorContext,
  ) {}

  collect(value: unknown): void {
    let keep: boolean;
    try {
      keep = this.fn(value);
    } catch (error) {
      throw userFunctionError(this.context, error);
    }
    if (keep) this.output.collect(value);
  }
}
