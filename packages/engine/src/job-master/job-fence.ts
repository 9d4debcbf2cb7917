import type { JobId, Logger } from '@weft/shuffle-api';
import { EngineError } from '../errors/engine-error.js';
import { findFencingRefusal } from '../errors/fencing-refusal.js';

/**
 * Whether this job master run has learned that a newer one took its job over (issue 11: an old master
 * that wakes up — SIGSTOP/SIGCONT, a long pause — cannot change anything). It learns it from a refusal:
 * an event log append refused with WEFT_ERR_FENCED, or a shuffle call (a registration, a release, a
 * task's commit) refused with SHF_ERR_FENCED, anywhere in an error's cause chain.
 *
 * From then on the run is hands-off: its collaborators ask `isFenced` before anything that deletes or
 * publishes — no sink discard, no garbage release, no `unregisterJob` — its tasks are stopped, and the
 * run fails with `error` (WEFT_ERR_FENCED naming the newer epoch). `onFenced` is told once.
 *
 * Not in it: a probe of the lease. A master that is never refused (nothing it does reaches a store)
 * does not know it is fenced; every store it could change refuses it instead.
 */
export class JobFence {
  readonly #jobId: JobId;
  readonly #epoch: number | undefined;
  readonly #logger: Logger;
  readonly #listeners: ((error: EngineError) => void)[] = [];
  #error: EngineError | undefined;

  constructor(request: { readonly jobId: JobId; readonly epoch: number | undefined; readonly logger: Logger }) {
    this.#jobId = request.jobId;
    this.#epoch = request.epoch;
    this.#logger = request.logger;
  }

  /** True once a refusal said a newer job master run took the job over. */
  get isFenced(): boolean {
    return this.#error !== undefined;
  }

  /** The run's error once fenced: WEFT_ERR_FENCED, naming this run's epoch and the newer one. */
  get error(): EngineError | undefined {
    return this.#error;
  }

  /** Calls `listener` once, when the run learns it is fenced (at once if it already did). */
  onFenced(listener: (error: EngineError) => void): void {
    if (this.#error !== undefined) listener(this.#error);
    else this.#listeners.push(listener);
  }

  /**
   * Looks for a fencing refusal in `error`'s cause chain (the run is fenced from then on); true when the
   * run is fenced, by this error or an earlier one — the caller then leaves the job alone.
   */
  observe(error: unknown): boolean {
    if (this.#error === undefined) {
      const found = findFencingRefusal(error);
      if (found !== undefined) this.#fence(found.error, found.newestEpoch);
    }
    return this.#error !== undefined;
  }

  #fence(cause: Error, newestEpoch: number | undefined): void {
    const own = this.#epoch === undefined ? 'this job master' : `this job master (epoch ${this.#epoch})`;
    // a newest epoch not above this run's: no newer run exists, the store forgot the lease (its data was lost)
    const lostLease = newestEpoch !== undefined && this.#epoch !== undefined && newestEpoch <= this.#epoch;
    const why = lostLease
      ? `the store no longer holds this run's lease (its newest epoch for the job is ${newestEpoch}: the store lost data?)`
      : `${newestEpoch === undefined ? 'a newer job master run' : `epoch ${newestEpoch}`} took the job over`;
    const error = new EngineError(
      'WEFT_ERR_FENCED',
      `job ${this.#jobId}: ${own} was fenced: ${why}; this run stopped its tasks and changed nothing (no sink discarded, no partition released, the job not unregistered)`,
      { cause, context: { jobId: this.#jobId, ...(this.#epoch === undefined ? {} : { epoch: this.#epoch }), ...(newestEpoch === undefined ? {} : { newestEpoch }) } },
    );
    this.#error = error;
    this.#logger.warn({ jobId: this.#jobId, epoch: this.#epoch, newestEpoch, error: cause.message }, lostLease ? 'running -> fenced: the store lost the job lease' : 'running -> fenced: a newer job master run took the job over');
    for (const listener of this.#listeners.splice(0)) listener(error);
  }
}
