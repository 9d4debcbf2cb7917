import type { MapFunction, RuntimeContext } from '../api/functions.js';
import { userFunctionError } from '../runtime/user-function-error.js';
import { type OperatorContext, type Output, runtimeContextOf, type StreamOperator } from './stream-operator.js';

export class MapOperator implements StreamOperator {
  constructor(
    private readonly fn: MapFunction<unknown, unknown>,
    private readonly output: Output,
    private readonly context: OperatorContext,
  ) {
    this.runtime = runtimeContextOf(context);
  }

  private readonly runtime: RuntimeContext;

  collect(value: unknown): void {
    let result: unknown;
    try {
      result = this.fn(value, this.runtime);
    } catch (error) {
      throw userFunctionError(this.context, error);
    }
    this.output.collect(result);
  }
}
