import { EngineError } from '../errors/engine-error.js';
import type { CheckpointFaultMoment, TaskFault } from '../faults/fault-injector.js';
import type { Output } from '../operators/stream-operator.js';

/**
 * Fires a planted TaskFault (see FaultInjector) in one task attempt: at record `atRecord`, or at the end
 * of the task's input when it has fewer records. Costs nothing when no fault is planted: a task has no
 * trigger then, and one with a trigger compares `atRecord` once per input batch.
 */
export class FaultTrigger {
  readonly #fault: TaskFault;
  readonly #attemptId: string;
  readonly #killProcess: (() => void) | undefined;
  #fired = false;

  constructor(fault: TaskFault, attemptId: string, killProcess: (() => void) | undefined) {
    this.#fault = fault;
    this.#attemptId = attemptId;
    this.#killProcess = killProcess;
  }

  get atRecord(): number {
    return this.#fault.atRecord;
  }

  /**
   * Whether this checkpoint fault fires at `moment` of checkpoint `checkpointId`: the first checkpoint from
   * its `atCheckpoint.checkpointId` on that reaches its moment in this task (one aborted before it did is
   * passed over, so a busy machine still gets its fault).
   */
  firesAtCheckpoint(checkpointId: number, moment: CheckpointFaultMoment): boolean {
    const at = this.#fault.atCheckpoint;
    return !this.#fired && at !== undefined && checkpointId >= at.checkpointId && at.moment === moment;
  }

  /** Fires the fault: kills this process (kill-process, in a worker) or throws `WEFT_ERR_INJECTED_FAULT`. */
  fire(record: number): never {
    return this.#fire(`at record ${record}`, { record });
  }

  /** Fires a checkpoint fault (see `firesAtCheckpoint`). */
  fireAtCheckpoint(checkpointId: number, moment: CheckpointFaultMoment): never {
    return this.#fire(`when checkpoint ${checkpointId} was ${moment}`, { checkpointId, moment });
  }

  #fire(when: string, context: Record<string, string | number>): never {
    this.#fired = true;
    const { kind } = this.#fault;
    if (kind === 'kill-process' && this.#killProcess !== undefined) this.#killProcess();
    throw new EngineError('WEFT_ERR_INJECTED_FAULT', `injected fault: task ${this.#attemptId} ${kind === 'throw' ? 'threw' : 'was to kill its process (not a worker process, so it threw)'} ${when}`, {
      context: { executionAttemptId: this.#attemptId, kind, ...context },
    });
  }

  /** At the end of the input: fires when the task had fewer records than `atRecord`. */
  fireIfPending(records: number): void {
    if (!this.#fired) this.fire(records);
  }

  /** An Output that counts what a source emits and fires at `atRecord`. */
  wrap(output: Output): Output & { readonly count: number } {
    const at = this.#fault.atRecord;
    let count = 0;
    const fire = (n: number): never => this.fire(n);
    return {
      get count() {
        return count;
      },
      collect(value: unknown): void {
        if (count === at) fire(count);
        count++;
        output.collect(value);
      },
    };
  }
}
