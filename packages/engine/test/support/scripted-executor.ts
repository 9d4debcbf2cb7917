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

/**
 * Source attempts (`src…`) finish at once; every other attempt runs until it is cancelled or a test calls
 * `finish`. `ran`: every attempt deployed here, in order.
 */
export class SourcesFinishExecutor extends ScriptedExecutor {
  readonly ran: string[] = [];
  readonly running = new Set<string>();

  deploy(deployment: RegionDeployment): void {
    for (const { attemptId } of deployment.tasks) {
      this.ran.push(attemptId);
      this.emit({ type: 'running', attemptId });
      if (attemptId.startsWith('src')) this.finish(attemptId);
      else this.running.add(attemptId);
    }
  }

  cancel(attemptIds: readonly string[]): void {
    for (const attemptId of attemptIds) if (this.running.delete(attemptId)) this.emit({ type: 'cancelled', attemptId });
  }

  finish(attemptId: string): void {
    this.running.delete(attemptId);
    this.emit({ type: 'finished', attemptId, result: { attemptId, durationMs: 0, metrics: { recordsIn: 0, outputs: [] }, sinks: [] } });
  }
}
