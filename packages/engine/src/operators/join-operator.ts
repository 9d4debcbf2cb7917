import type { KeySelector, KeyValue } from '../api/functions.js';
import type { JoinType } from '../api/logical-graph.js';
import { HybridHashJoin } from '../memory/hybrid-hash-join.js';
import { checkKey } from '../runtime/key-hash.js';
import { userFunctionError } from '../runtime/user-function-error.js';
import type { OperatorContext, Output, StreamOperator } from './stream-operator.js';

/**
 * Hash join of two keyed inputs: input `build` is read first, whole, into a HybridHashJoin (kept in
 * memory while the task's budget allows, partitions past it spilled and joined partition by partition,
 * recursively, at the end); then every record of the other (probe) input is joined with the build
 * records of its key, `fn(left, right)` each. Outer joins (`type` 'left', 'right', 'full') also emit
 * every record of their outer side(s) that no record of the other side matched, with `null` for the
 * missing side: `fn(left, null)` / `fn(null, right)`. Output order is not defined.
 */
export class JoinOperator implements StreamOperator {
  readonly inputPhases: readonly (readonly number[])[];
  readonly #join: HybridHashJoin;
  #buildEnded = false;
  #paused = 0;

  constructor(
    private readonly spec: {
      readonly leftKey: KeySelector<unknown, KeyValue>;
      readonly rightKey: KeySelector<unknown, KeyValue>;
      readonly fn: (left: unknown, right: unknown) => unknown;
      readonly build: 0 | 1;
      readonly type?: JoinType;
    },
    private readonly output: Output,
    private readonly context: OperatorContext,
  ) {
    this.inputPhases = spec.build === 1 ? [[1], [0]] : [[0], [1]];
    const type = spec.type ?? 'inner';
    const leftOuter = type === 'left' || type === 'full';
    const rightOuter = type === 'right' || type === 'full';
    const fn = spec.fn;
    const emit =
      spec.build === 1
        ? (build: unknown, probe: unknown): void => output.collect(this.#call(fn, probe, build))
        : (build: unknown, probe: unknown): void => output.collect(this.#call(fn, build, probe));
    this.#join = new HybridHashJoin({
      operator: context.operatorName,
      consumer: context.memory.manager.consumer(context.operatorName),
      spill: context.memory.spill,
      keys: context.memory.keySerializer(),
      values: context.memory.serializer(),
      buildOuter: spec.build === 1 ? rightOuter : leftOuter,
      probeOuter: spec.build === 1 ? leftOuter : rightOuter,
      emit,
      pause: () => this.#pause(),
    });
  }

  /** Whether the build side outgrew the budget (some partitions are joined from disk). */
  get spilled(): boolean {
    return this.#join.spilled;
  }

  /** The hybrid join's counters: partitions spilled, deepest level, nested-loop fallbacks, page bytes allocated. */
  get stats(): { readonly partitionsSpilled: number; readonly deepestLevel: number; readonly nestedLoops: number; readonly pageBytesAllocated: number } {
    const { partitionsSpilled, deepestLevel, nestedLoops, pageBytesAllocated } = this.#join;
    return { partitionsSpilled, deepestLevel, nestedLoops, pageBytesAllocated };
  }

  collect(value: unknown): void {
    this.processInput(value, 0);
  }

  processInput(value: unknown, input: number): void {
    const { spec, context } = this;
    let key: KeyValue;
    try {
      key = checkKey(input === 0 ? spec.leftKey(value) : spec.rightKey(value));
    } catch (error) {
      throw userFunctionError(context, error, `${input === 0 ? 'left' : 'right'} key selector`);
    }
    if (input === spec.build) {
      this.#join.build(key, value);
      return;
    }
    if (!this.#buildEnded) this.#endBuild();
    this.#join.probe(key, value);
  }

  async finish(): Promise<void> {
    if (!this.#buildEnded) this.#endBuild();
    await this.#join.finish();
  }

  close(): void {
    this.#join.close();
  }

  #endBuild(): void {
    this.#buildEnded = true;
    this.#join.endBuild();
  }

  #call(fn: (left: unknown, right: unknown) => unknown, left: unknown, right: unknown): unknown {
    try {
      return fn(left, right);
    } catch (error) {
      throw userFunctionError(this.context, error, 'join function');
    }
  }

  /** Between records of the finish phase: waits out backpressure, checks for cancellation and yields every 16 Ki records. */
  #pause(): Promise<void> | undefined {
    const { backpressure, signal } = this.context;
    if ((++this.#paused & 0x3fff) === 0) {
      if (signal.aborted) return Promise.reject(signal.reason);
      return new Promise<void>((resolve) => setImmediate(resolve)).then(() => (backpressure.blocked ? backpressure.wait() : undefined));
    }
    return backpressure.blocked ? backpressure.wait() : undefined;
  }
}
