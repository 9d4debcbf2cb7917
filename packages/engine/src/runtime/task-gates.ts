import type { InputGate } from '@weft/shuffle-api';
import type { MemoryConsumer } from '../memory/memory-manager.js';
import { gateMemoryBytes, gateReservedBytes } from '../memory/shuffle-buffer-shares.js';
import type { InputDeployment } from './task-deployment.js';

export interface TaskGatesOptions {
  /** Where each open gate's share of the task's budget is reserved (the task's shuffle buffers consumer). */
  readonly memory: MemoryConsumer;
  /** Opens a gate (TaskIo.createGate). */
  readonly createGate: (input: InputDeployment, memoryBytes: number, resumeFrom?: readonly (number | undefined)[]) => Promise<InputGate>;
  /** An approximate input's restored positions to resume from (CreateInputGateRequest.resumeFrom); undefined for the others. */
  readonly resumeFrom: (input: InputDeployment) => readonly (number | undefined)[] | undefined;
}

/**
 * The input gates of one task attempt: each opened when the task reads its input, its read buffers
 * reserved from the task's budget until it is read to its end. `close` closes every gate open when the
 * task ends without waiting for those still opening (an approximate input's gate may wait for its
 * producer's registration until a reconnect timeout): such a gate is closed as soon as it opens.
 */
export class TaskGates {
  readonly #options: TaskGatesOptions;
  readonly #gates = new Set<InputGate>();
  #closed = false;

  constructor(options: TaskGatesOptions) {
    this.#options = options;
  }

  /**
   * Reads `input` through `consume` with its gate open, then closes it: its buffers go back now, not when
   * the task ends (a join's build side, before its probe side and finish). An approximate input whose
   * producers all finished before this attempt has nothing to read.
   */
  async read(input: InputDeployment, consume: (gate: InputGate) => Promise<void>): Promise<void> {
    if (input.partitions.length === 0) return;
    const { memory, createGate, resumeFrom } = this.#options;
    const reservedBytes = gateReservedBytes(memory.manager.budgetBytes);
    memory.forceReserve(reservedBytes);
    try {
      const gate = await createGate(input, gateMemoryBytes(memory.manager.budgetBytes), resumeFrom(input));
      if (this.#closed) {
        // opened after the task ended: nobody reads it
        void gate.close().catch(() => {});
        throw new Error(`the gate of input ${input.inputIndex} opened after its task ended`);
      }
      this.#gates.add(gate);
      await consume(gate);
      this.#gates.delete(gate);
      await gate.close();
    } finally {
      memory.release(reservedBytes);
    }
  }

  /** Closes the open gates without waiting (the task is cancelled: their reads end). */
  abort(): void {
    for (const gate of this.#gates) void gate.close().catch(() => {});
  }

  /** Closes every open gate; one still opening is closed when it opens. Rejects with the first close that failed. */
  async close(): Promise<void> {
    this.#closed = true;
    let failure: unknown;
    for (const gate of this.#gates) {
      try {
        await gate.close();
      } catch (error) {
        failure ??= error;
      }
    }
    this.#gates.clear();
    if (failure !== undefined) throw failure;
  }
}
