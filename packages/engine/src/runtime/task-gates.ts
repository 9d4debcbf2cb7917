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

interface Opening {
  readonly gate: Promise<InputGate>;
  readonly reservedBytes: number;
}

/**
 * The input gates of one task attempt. A gate is opened when the task reads its input, or earlier
 * (`openEarly`) — a task reading one pipelined input opens it before its operators are built and their
 * state restored, so the partition request's round trip to another process overlaps that (a restarted
 * task reads again sooner). Each open gate's read buffers are reserved from the task's budget until it is read to its end
 * (`read`), or the task ends; `close` closes every gate opened, one opened early and never read included.
 */
export class TaskGates {
  readonly #options: TaskGatesOptions;
  readonly #early = new Map<InputDeployment, Opening>();
  readonly #opened: Promise<InputGate>[] = [];
  readonly #gates: InputGate[] = [];

  constructor(options: TaskGatesOptions) {
    this.#options = options;
  }

  /**
   * Opens `input`'s gate now, for `read` to take; resolves once it is open (its partition requests sent)
   * or failed to open, or at the event loop's next turn when it cannot open at once (an approximate input
   * waiting for its producer's registration): the task builds its operators meanwhile. What opening it
   * throws is `read`'s to report.
   */
  async openEarly(input: InputDeployment): Promise<void> {
    if (input.partitions.length === 0 || this.#early.has(input)) return;
    const opening = this.#open(input);
    this.#early.set(input, opening);
    const settled = opening.gate.then(
      () => {},
      () => {},
    );
    await Promise.race([settled, new Promise<void>((resolve) => setImmediate(resolve))]);
  }

  /**
   * Reads `input` through `consume` with its gate open (opened early, or now), then closes it: its
   * buffers go back now, not when the task ends (a join's build side, before its probe side and finish).
   * An approximate input whose producers all finished before this attempt has nothing to read.
   */
  async read(input: InputDeployment, consume: (gate: InputGate) => Promise<void>): Promise<void> {
    if (input.partitions.length === 0) return;
    const opening = this.#early.get(input) ?? this.#open(input);
    this.#early.delete(input);
    try {
      const gate = await opening.gate;
      await consume(gate);
      await gate.close();
    } finally {
      this.#options.memory.release(opening.reservedBytes);
    }
  }

  /** Closes the open gates without waiting (the task is cancelled: their reads end). */
  abort(): void {
    for (const gate of this.#gates) void gate.close().catch(() => {});
  }

  /**
   * Closes every gate opened, once those still opening settled (a task's gates settle: an abort or a
   * timeout ends each wait); releases what gates opened early and never read reserved.
   */
  async close(): Promise<void> {
    for (const { reservedBytes } of this.#early.values()) this.#options.memory.release(reservedBytes);
    this.#early.clear();
    await Promise.allSettled(this.#opened);
    let failure: unknown;
    for (const gate of this.#gates) {
      try {
        await gate.close();
      } catch (error) {
        failure ??= error;
      }
    }
    if (failure !== undefined) throw failure;
  }

  #open(input: InputDeployment): Opening {
    const { memory, createGate, resumeFrom } = this.#options;
    const reservedBytes = gateReservedBytes(memory.manager.budgetBytes);
    memory.forceReserve(reservedBytes);
    const gate = (async () => createGate(input, gateMemoryBytes(memory.manager.budgetBytes), resumeFrom(input)))().then((opened) => {
      this.#gates.push(opened);
      return opened;
    });
    gate.catch(() => {}); // the reader reports it; a gate opened early and never read fails nobody
    this.#opened.push(gate);
    return { gate, reservedBytes };
  }
}
