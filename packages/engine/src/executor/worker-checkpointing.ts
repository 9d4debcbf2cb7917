import { EngineError } from '../errors/engine-error.js';
import { deserializeTaskError } from '../runtime/task-error-serialization.js';
import type { TaskCheckpointing } from '../runtime/task-checkpointing.js';
import type { TaskDeployment } from '../runtime/task-deployment.js';
import type { FromWorkerCheckpointMessage, ToWorkerCheckpointMessage } from './worker-protocol.js';

/**
 * How many ended attempts a worker remembers, to drop a link the job master sent with an attempt's
 * deployment that arrives after the attempt ended (it failed before the message was handled).
 */
const ENDED_REMEMBERED = 1024;

/** One attempt's proxy, worker side. */
interface ProxiedAttempt {
  trigger: ((checkpointId: number, timestampMs: number) => void) | undefined;
  complete: ((checkpointId: number) => void) | undefined;
  /** Waiting for the final checkpoint, in the order asked (the job master answers in that order). */
  readonly finals: ((checkpointId: number | undefined) => void)[];
}

/**
 * A worker process's end of the checkpoint link with its job master (the other end is
 * WorkerCheckpointRelay): `provider` is the worker's TaskCheckpointingProvider — a task attempt starting
 * gets a proxy of its TaskCheckpointing, whose restore state the job master sent with the deployment (or,
 * not there yet, asks for it and waits for the answer); its subscriptions, acknowledgements (with the
 * snapshot bytes) and declines go to the job master as messages, and triggers, completions and the final
 * checkpoint come back through `handle`.
 *
 * An attempt is forgotten once it ended (`detach`, on its terminal task event): whatever the job master
 * still sends for it is ignored, and its proxy sends nothing more. `close` (the job master is gone)
 * rejects the attempts still waiting for their answer, and releases those waiting for a final checkpoint
 * with none. Calls arrive on the worker's event loop; none of them throws.
 */
export class WorkerCheckpointing {
  readonly #send: (message: FromWorkerCheckpointMessage) => void;
  readonly #attaching = new Map<string, { readonly resolve: (c: TaskCheckpointing) => void; readonly reject: (error: Error) => void }>();
  readonly #attempts = new Map<string, ProxiedAttempt>();
  /** Links the job master sent with the deployment, before the task asked (`provider` takes them). */
  readonly #early = new Map<string, Extract<ToWorkerCheckpointMessage, { type: 'checkpoint-attached' }>>();
  /** Attempts that ended lately (oldest first, at most ENDED_REMEMBERED): a link that arrives for one after it ended is dropped, not kept in `#early`. */
  readonly #ended = new Set<string>();
  #closed = false;

  constructor(send: (message: FromWorkerCheckpointMessage) => void) {
    this.#send = send;
  }

  /** The TaskCheckpointing of a task attempt about to run (InProcessTaskExecutorOptions.checkpointing). */
  readonly provider = (task: TaskDeployment): Promise<TaskCheckpointing> =>
    new Promise<TaskCheckpointing>((resolve, reject) => {
      if (this.#closed) return reject(new Error(`task ${task.attemptId} cannot reach its job master for its checkpoints: the link is closed`));
      const early = this.#early.get(task.attemptId);
      if (early !== undefined) {
        // the job master linked it with the deployment: no round trip
        this.#early.delete(task.attemptId);
        return resolve(this.#linked(early));
      }
      this.#attaching.set(task.attemptId, { resolve, reject });
      this.#send({ type: 'checkpoint-attach', task });
    });

  /** A checkpoint message from the job master. */
  handle(message: ToWorkerCheckpointMessage): void {
    const { attemptId } = message;
    if (message.type === 'checkpoint-attached' || message.type === 'checkpoint-attach-failed') {
      const waiting = this.#attaching.get(attemptId);
      if (waiting === undefined) {
        // linked with the deployment, before the task asked: kept until it does (or ends)
        if (message.type === 'checkpoint-attached' && !this.#attempts.has(attemptId) && !this.#ended.has(attemptId)) this.#early.set(attemptId, message);
        return;
      }
      this.#attaching.delete(attemptId);
      if (message.type === 'checkpoint-attach-failed') {
        waiting.reject(deserializeTaskError(message.error));
        return;
      }
      waiting.resolve(this.#linked(message));
      return;
    }
    const attempt = this.#attempts.get(attemptId);
    if (attempt === undefined) return;
    switch (message.type) {
      case 'checkpoint-trigger':
        attempt.trigger?.(message.checkpointId, message.timestampMs);
        return;
      case 'checkpoint-complete':
        attempt.complete?.(message.checkpointId);
        return;
      case 'checkpoint-final':
        attempt.finals.shift()?.(message.checkpointId);
        return;
    }
  }

  /** The attempt ended: nothing more goes to it or from it. */
  detach(attemptId: string): void {
    this.#early.delete(attemptId);
    this.#ended.add(attemptId);
    if (this.#ended.size > ENDED_REMEMBERED) this.#ended.delete(this.#ended.values().next().value as string);
    const attempt = this.#attempts.get(attemptId);
    this.#attempts.delete(attemptId);
    for (const resolve of attempt?.finals.splice(0) ?? []) resolve(undefined);
  }

  /** The job master is gone: attempts waiting for their link fail, those waiting for a final checkpoint get none. Idempotent. */
  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    for (const [attemptId, { reject }] of this.#attaching) reject(new EngineError('WEFT_ERR_TASK_CANCELLED', `task ${attemptId} lost its job master before it was linked to its checkpoints`, { context: { executionAttemptId: attemptId } }));
    this.#attaching.clear();
    for (const attemptId of [...this.#attempts.keys()]) this.detach(attemptId);
    this.#early.clear();
  }

  /** The proxy of an attempt the job master linked (`checkpoint-attached`). */
  #linked(attached: Extract<ToWorkerCheckpointMessage, { type: 'checkpoint-attached' }>): TaskCheckpointing {
    const attempt: ProxiedAttempt = { trigger: undefined, complete: undefined, finals: [] };
    this.#attempts.set(attached.attemptId, attempt);
    return this.#proxy(attached.attemptId, attempt, attached);
  }

  #proxy(attemptId: string, attempt: ProxiedAttempt, attached: Extract<ToWorkerCheckpointMessage, { type: 'checkpoint-attached' }>): TaskCheckpointing {
    const live = (): boolean => this.#attempts.get(attemptId) === attempt;
    const send = (message: FromWorkerCheckpointMessage): void => {
      if (live()) this.#send(message);
    };
    const subscribe = <L>(to: 'trigger' | 'complete', listener: L, set: (l: L | undefined) => void, get: () => L | undefined): (() => void) => {
      set(listener);
      send({ type: 'checkpoint-listen', attemptId, to, listening: true });
      return () => {
        if (get() !== listener) return;
        set(undefined);
        send({ type: 'checkpoint-listen', attemptId, to, listening: false });
      };
    };
    return {
      mode: attached.mode,
      restore: attached.restore,
      onTrigger: (listener) =>
        subscribe(
          'trigger',
          listener,
          (l) => (attempt.trigger = l),
          () => attempt.trigger,
        ),
      onComplete: (listener) =>
        subscribe(
          'complete',
          listener,
          (l) => (attempt.complete = l),
          () => attempt.complete,
        ),
      awaitFinalCheckpoint: () =>
        new Promise<number | undefined>((resolve) => {
          if (!live()) return resolve(undefined);
          attempt.finals.push(resolve);
          this.#send({ type: 'checkpoint-await-final', attemptId });
        }),
      acknowledge: (snapshot) => send({ type: 'checkpoint-acknowledge', attemptId, snapshot }),
      decline: (checkpointId, message, reason) => send({ type: 'checkpoint-decline', attemptId, checkpointId, message, reason }),
    };
  }
}
