import { EngineError } from '../errors/engine-error.js';
import type { JobEvent, JobEventListener } from './job-events.js';

/**
 * Hands a job's events to its JobEventListener, in the order they are emitted, and keeps what the
 * scheduler needs of each: whether it was taken (`true`: at once; a promise: once the listener's promise
 * settles, `true` when it resolved), and the first failure. A listener that throws or rejects is never
 * ignored: `onFailure` is told (once per failed event, after the current step when the listener threw, so
 * the scheduler is never re-entered mid-transition) with a `WEFT_ERR_EVENT_LOG` error, and `failure`
 * keeps the first one. `settled()` resolves once every promise the listener returned settled.
 */
export class JobEventEmitter {
  readonly #listener: JobEventListener;
  readonly #onFailure: (error: EngineError) => void;
  readonly #pending = new Set<Promise<boolean>>();
  #failure: EngineError | undefined;

  constructor(listener: JobEventListener, onFailure: (error: EngineError) => void) {
    this.#listener = listener;
    this.#onFailure = onFailure;
  }

  /** The first event the listener failed to take, as a `WEFT_ERR_EVENT_LOG` error. */
  get failure(): EngineError | undefined {
    return this.#failure;
  }

  /** Tells the listener of `event`: true when it took it at once, false when it threw, else a promise of either. */
  emit(event: JobEvent): boolean | Promise<boolean> {
    let returned: unknown;
    try {
      returned = this.#listener.onJobEvent(event);
    } catch (error) {
      const failure = this.#failed(event, error);
      queueMicrotask(() => this.#onFailure(failure));
      return false;
    }
    if (!isPromiseLike(returned)) return true;
    const stored = Promise.resolve(returned).then(
      () => true,
      (error: unknown) => {
        this.#onFailure(this.#failed(event, error));
        return false;
      },
    );
    this.#pending.add(stored);
    void stored.then(() => this.#pending.delete(stored));
    return stored;
  }

  /** Resolves once every promise the listener returned so far (and while waiting) settled. */
  async settled(): Promise<void> {
    while (this.#pending.size > 0) await Promise.all([...this.#pending]);
  }

  #failed(event: JobEvent, error: unknown): EngineError {
    const message = error instanceof Error ? error.message : String(error);
    const failure = new EngineError('WEFT_ERR_EVENT_LOG', `the job event listener failed to take a ${event.type} event: ${message}`, { cause: error, context: { event: event.type } });
    this.#failure ??= failure;
    return failure;
  }
}

function isPromiseLike(value: unknown): value is PromiseLike<unknown> {
  return typeof value === 'object' && value !== null && typeof (value as { then?: unknown }).then === 'function';
}
