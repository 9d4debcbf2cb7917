import type { TaskExecutorId } from '@weft/shuffle-api';
import type { RegionDeployment, TaskEvent, TaskExecutor, TaskExecutorListener } from '@weft/engine';

/**
 * A task executor whose subclass scripts what each attempt reports (`deploy`, `cancel`); the reports reach
 * the job master (`listener`) a turn later, as a real executor's do. Runs nothing.
 */
export abstract class ScriptedExecutor implements TaskExecutor {
  readonly kind = 'scripted';
  listener: TaskExecutorListener | undefined;

  constructor(
    readonly id: TaskExecutorId,
    readonly slots: number,
  ) {}

  abstract deploy(deployment: RegionDeployment): void;

  abstract cancel(attemptIds: readonly string[]): void;

  progress(): [] {
    return [];
  }

  async close(): Promise<void> {}

  async [Symbol.asyncDispose](): Promise<void> {}

  protected emit(event: TaskEvent): void {
    setImmediate(() => this.listener?.onTaskEvent(this.id, event));
  }
}
