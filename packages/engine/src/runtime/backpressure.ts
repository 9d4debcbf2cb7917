/** Something a task must wait for before producing more: a writer's `ready()`, a sink's pending write. */
export interface Waitable {
  ready(): Promise<void>;
}

/**
 * The backpressure of one task, without a promise per record: outputs call `block` when a writer refuses
 * more (`emitRecord` returned false) or a write is pending; the task's loops read `blocked` after each
 * batch (a field read) and `await wait()` when set. One record may overshoot, as the shuffle API allows.
 */
export class TaskBackpressure {
  blocked = false;
  #waitables: Waitable[] = [];
  #promises: Promise<unknown>[] = [];

  block(waitable: Waitable): void {
    this.#waitables.push(waitable);
    this.blocked = true;
  }

  blockOn(promise: Promise<unknown>): void {
    this.#promises.push(promise);
    this.blocked = true;
  }

  /** Resolves once everything that blocked is ready; rejects with the first failure. */
  async wait(): Promise<void> {
    while (this.blocked) {
      const waitables = this.#waitables;
      const promises = this.#promises;
      this.#waitables = [];
      this.#promises = [];
      this.blocked = false;
      for (const w of waitables) await w.ready();
      for (const p of promises) await p;
    }
  }
}
