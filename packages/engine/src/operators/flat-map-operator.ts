import type { FlatMapFunction, RuntimeContext } from '../api/functions.js';
import { userFunctionError } from '../runtime/user-function-error.js';
import { type OperatorContext, type Output, runtimeContextOf, type StreamOperator } from './stream-operator.js';

export class FlatMapOperator implements StreamOperator {
  constructor(
    private readonly fn: FlatMapFunction<unknown, unknown>,
    private readonly output: Output,
    private readonly context: OperatorContext,
  ) {
    this.runtime = runtimeContextOf(context);
  }

  private readonly runtime: RuntimeContext;

  collect(value: unknown): void {
    let result: Iterable<unknown> | null | undefined;
    try {
      result = this.fn(value, this.runtime);
    } catch (error) {
      throw userFunctionError(this.context, error);
    }
    if (result === null || result === undefined) return;
    const output = this.output;
    if (Array.isArray(result)) {
      for (let i = 0; i < result.length; i++) output.collect(result[i]);
      return;
    }
    let iterator: Iterator<unknown>;
    try {
      iterator = (result as Iterable<unknown>)[Symbol.iterator]();
    } catch (error) {
      throw userFunctionError(this.context, new TypeError(`flatMap must return an iterable, null or undefined, got ${typeof result}`, { cause: error }));
    }
    for (;;) {
      let step: IteratorResult<unknown>;
      try {
        step = iterator.next();
      } catch (error) {
        throw userFunctionError(this.context, error);
      }
      if (step.done === true) return;
      output.collect(step.value);
    }
  }
}
