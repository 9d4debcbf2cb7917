import type { Output } from '../operators/stream-operator.js';

/**
 * A checkpointed source's output that notes when a record could not be handed on (an operator of the
 * chain threw, a planted fault fired). The source has counted that record as emitted by then, so no
 * checkpoint may be taken of it afterwards — it would skip the record — while the source unwinds (closes
 * its files) and triggers still arrive: the task ignores them once `failed`.
 */
export class GuardedSourceOutput implements Output {
  failed = false;

  constructor(private readonly output: Output) {}

  collect(value: unknown): void {
    try {
      this.output.collect(value);
    } catch (error) {
      this.failed = true;
      throw error;
    }
  }
}
