import { createTaskMemory } from '../../src/memory/task-memory.js';
import type { OperatorContext, Output } from '../../src/operators/stream-operator.js';
import { TaskBackpressure } from '../../src/runtime/backpressure.js';

/** An operator context for in-process operator tests: a task memory of `budgetBytes` spilling under `spillDir`. */
export function testingOperatorContext(options: { budgetBytes: number; spillDir: string; signal?: AbortSignal; name?: string }): OperatorContext {
  const name = options.name ?? 'op';
  return {
    operatorName: name,
    operatorKind: name,
    vertexId: 'v',
    subtask: 0,
    parallelism: 1,
    attempt: 0,
    attemptId: 'v#0@0',
    jobId: 'job',
    backpressure: new TaskBackpressure(),
    signal: options.signal ?? new AbortController().signal,
    cwd: options.spillDir,
    fileSystems: [],
    outputConsumers: 0,
    memory: createTaskMemory({ budgetBytes: options.budgetBytes, spillDir: options.spillDir, name: 'v#0@0' }),
  };
}

/** An Output that keeps what it is given. */
export class CollectingOutput implements Output {
  readonly values: unknown[] = [];
  collect(value: unknown): void {
    this.values.push(value);
  }
}
