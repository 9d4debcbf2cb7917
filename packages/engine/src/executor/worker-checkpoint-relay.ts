import { type Logger, noopLogger } from '@weft/shuffle-api';
import type { TaskCheckpointing, TaskCheckpointingProvider } from '../runtime/task-checkpointing.js';
import type { TaskDeployment } from '../runtime/task-deployment.js';
import { EngineError } from '../errors/engine-error.js';
import { serializeTaskError } from '../runtime/task-error-serialization.js';
import type { FromWorkerCheckpointMessage, ToWorkerCheckpointMessage } from './worker-protocol.js';

export interface WorkerCheckpointRelayOptions {
  /** The job master's side (JobCheckpointing.forTask): one TaskCheckpointing per task attempt. */
  readonly provider: TaskCheckpointingProvider;
  /** To the worker; a message to a worker that is gone is dropped by the caller. */
  readonly send: (message: ToWorkerCheckpointMessage) => void;
  readonly logger?: Logger | undefined;
}

/** One attempt's link, job master side. */
interface RelayedAttempt {
  checkpointing: TaskCheckpointing | undefined;
  unsubscribeTrigger: (() => void) | undefined;
  unsubscribeComplete: (() => void) | undefined;
  detached: boolean;
  /** Whether the worker asked for the link (`checkpoint-attach`), or it was taken unasked at the deployment. */
  asked: boolean;
}

/**
 * The job master's end of the checkpoint link with one worker process (its WorkerProcessTaskExecutor
 * owns it): for each task attempt that asks (`checkpoint-attach`, when it starts) it takes the attempt's
 * TaskCheckpointing from the provider — the job's one JobCheckpointing stays the coordinator — answers with
 * its mode and restore state, subscribes to triggers and completions on the worker's behalf and forwards
 * them, and hands the worker's acknowledgements and declines to it. The other end is WorkerCheckpointing.
 *
 * An attempt is detached when it ended (its terminal task event) or its worker was lost (`detachAll`):
 * its subscriptions are dropped at once — a source on a dead worker no longer counts as running, so the
 * next trigger fails instead of waiting for a barrier that never comes — and whatever the worker still
 * sends for it is ignored. Calls arrive on the job master's event loop; none of them throws.
 */
export class WorkerCheckpointRelay {
  readonly #options: WorkerCheckpointRelayOptions;
  readonly #logger: Logger;
  readonly #attempts = new Map<string, RelayedAttempt>();
  /** Attempts deployed through this executor and not ended: the only ones linked (`checkpoint-attach`). */
  readonly #deployed = new Set<string>();

  constructor(options: WorkerCheckpointRelayOptions) {
    this.#options = options;
    this.#logger = options.logger ?? noopLogger;
  }

  /**
   * These attempts were deployed to the worker: each is linked at once — its TaskCheckpointing taken and
   * `checkpoint-attached` sent with its restore state, unasked, while the worker still sets the task up
   * (Flink hands the restore state over with the deployment: one round trip less on a restart) — and may
   * also ask (`checkpoint-attach`: answered by that same link). An attempt this job master never deployed
   * (a dead job master's, still running on a cluster executor this one took over) is refused.
   */
  deployed(tasks: readonly TaskDeployment[]): void {
    for (const task of tasks) this.#deployed.add(task.attemptId);
    for (const task of tasks) this.#attach(task.attemptId, task, false);
  }

  /** A checkpoint message from the worker. */
  handle(message: FromWorkerCheckpointMessage): void {
    if (message.type === 'checkpoint-attach') {
      this.#attach(message.task.attemptId, message.task, true);
      return;
    }
    const attempt = this.#attempts.get(message.attemptId);
    const checkpointing = attempt?.checkpointing;
    if (attempt === undefined || attempt.detached || checkpointing === undefined) return;
    const { attemptId } = message;
    switch (message.type) {
      case 'checkpoint-listen':
        if (message.to === 'trigger') {
          attempt.unsubscribeTrigger?.();
          attempt.unsubscribeTrigger = message.listening ? checkpointing.onTrigger((checkpointId, timestampMs) => this.#options.send({ type: 'checkpoint-trigger', attemptId, checkpointId, timestampMs })) : undefined;
        } else {
          attempt.unsubscribeComplete?.();
          attempt.unsubscribeComplete = message.listening ? checkpointing.onComplete((checkpointId) => this.#options.send({ type: 'checkpoint-complete', attemptId, checkpointId })) : undefined;
        }
        return;
      case 'checkpoint-await-final':
        void checkpointing.awaitFinalCheckpoint().then((checkpointId) => {
          if (!attempt.detached) this.#options.send({ type: 'checkpoint-final', attemptId, checkpointId });
        });
        return;
      case 'checkpoint-acknowledge':
        checkpointing.acknowledge(message.snapshot);
        return;
      case 'checkpoint-decline':
        checkpointing.decline(message.checkpointId, message.message, message.reason);
        return;
    }
  }

  /** The attempt ended: its subscriptions go, and what the worker still sends for it is ignored. */
  detach(attemptId: string): void {
    this.#deployed.delete(attemptId);
    const attempt = this.#attempts.get(attemptId);
    if (attempt === undefined) return;
    this.#attempts.delete(attemptId);
    attempt.detached = true;
    attempt.unsubscribeTrigger?.();
    attempt.unsubscribeComplete?.();
  }

  /** The worker is gone (lost or closed): every attempt it ran is detached. */
  detachAll(): void {
    this.#deployed.clear();
    for (const attemptId of [...this.#attempts.keys()]) this.detach(attemptId);
  }

  /** `asked`: the worker asked (`checkpoint-attach`); unasked (at the deployment) a failure is left for its ask to report. */
  #attach(attemptId: string, task: TaskDeployment, asked: boolean): void {
    const linking = this.#attempts.get(attemptId);
    if (linking !== undefined) {
      // asked while the unasked link was still being taken: the answer goes out once it is (below)
      if (asked) linking.asked = true;
      return;
    }
    if (!this.#deployed.has(attemptId)) {
      this.#options.send({ type: 'checkpoint-attach-failed', attemptId, error: serializeTaskError(new EngineError('WEFT_ERR_TASK_CANCELLED', `task ${attemptId} was not deployed by this job master: it is not linked to its checkpoints`, { context: { executionAttemptId: attemptId } })) });
      return;
    }
    const attempt: RelayedAttempt = { checkpointing: undefined, unsubscribeTrigger: undefined, unsubscribeComplete: undefined, detached: false, asked };
    this.#attempts.set(attemptId, attempt);
    const failed = (error: Error): void => {
      if (attempt.detached) return;
      if (attempt.asked) {
        this.#options.send({ type: 'checkpoint-attach-failed', attemptId, error: serializeTaskError(error) });
        return;
      }
      // unasked: forget it, so that the worker's own ask (if it comes) is answered, with this failure or another
      if (this.#attempts.get(attemptId) === attempt) this.#attempts.delete(attemptId);
    };
    this.#options.provider(task).then(
      (checkpointing) => {
        if (attempt.detached) return;
        if (checkpointing === undefined) {
          failed(new Error(`task ${attemptId} asked for its checkpoints, but the job takes none`));
          return;
        }
        attempt.checkpointing = checkpointing;
        this.#options.send({ type: 'checkpoint-attached', attemptId, mode: checkpointing.mode, restore: checkpointing.restore });
      },
      (error: unknown) => {
        this.#logger.warn({ attemptId, error: (error as Error).message }, 'a task on a worker could not be linked to its checkpoints');
        failed(error as Error);
      },
    );
  }
}
