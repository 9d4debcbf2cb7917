import { EngineError } from '../errors/engine-error.js';
import { computeKeyGroupRangeForOperatorIndex } from '../keygroups/key-group-range-assignment.js';
import { KeyedStateBackend } from '../state/keyed-state-backend.js';
import { OperatorStateBackend } from '../state/operator-state-backend.js';
import type { OperatorStateAccess, OperatorStateSnapshot } from './task-checkpointing.js';

export interface OperatorStateHolderOptions {
  readonly operator: string;
  readonly subtask: number;
  readonly parallelism: number;
  /** The max parallelism of the operator's keyed input; undefined for an operator without one. */
  readonly maxParallelism: number | undefined;
  readonly restored: { readonly keyed: readonly Uint8Array[]; readonly operator: readonly Uint8Array[] } | undefined;
}

/**
 * One operator's state backends in one task attempt: made (or restored from the checkpoint the task
 * starts from) when the operator first asks, snapshotted whole at each checkpoint. An operator with a
 * keyed input always snapshots its keyed backend, empty or not, so the key groups stay covered.
 */
export class OperatorStateHolder implements OperatorStateAccess {
  readonly #options: OperatorStateHolderOptions;
  #keyed: KeyedStateBackend | undefined;
  #operator: OperatorStateBackend | undefined;

  constructor(options: OperatorStateHolderOptions) {
    this.#options = options;
  }

  get restored(): boolean {
    return this.#options.restored !== undefined;
  }

  keyed(): KeyedStateBackend {
    if (this.#keyed !== undefined) return this.#keyed;
    const { maxParallelism, subtask, parallelism, restored, operator } = this.#options;
    if (maxParallelism === undefined) throw new EngineError('WEFT_ERR_ILLEGAL_STATE', `operator ${JSON.stringify(operator)} has no keyed input, so it has no keyed state`);
    const range = computeKeyGroupRangeForOperatorIndex(maxParallelism, parallelism, subtask);
    const keyGroupRange = { startKeyGroup: range.startKeyGroup, endKeyGroup: range.endKeyGroup };
    this.#keyed = restored === undefined || restored.keyed.length === 0 ? new KeyedStateBackend({ maxParallelism, keyGroupRange }) : KeyedStateBackend.restore({ maxParallelism, keyGroupRange, snapshots: restored.keyed });
    return this.#keyed;
  }

  operator(): OperatorStateBackend {
    if (this.#operator !== undefined) return this.#operator;
    const { subtask, parallelism, restored } = this.#options;
    this.#operator = restored === undefined || restored.operator.length === 0 ? new OperatorStateBackend() : OperatorStateBackend.restore({ subtask, parallelism, snapshots: restored.operator });
    return this.#operator;
  }

  snapshot(): OperatorStateSnapshot {
    return {
      ...(this.#options.maxParallelism === undefined ? {} : { keyed: this.keyed().snapshot() }),
      operator: this.operator().snapshot(),
    };
  }
}
