import type { Logger, PartitionsLostNotice } from '@weft/shuffle-api';

/** Takes one notice (JobMaster.partitionsLost). */
export type PartitionsLostListener = (notice: PartitionsLostNotice) => void;

/**
 * Carries the blocking shuffle master's notices of lost partitions (JobShuffleContext.partitionsLost, the
 * callback JobSession registers the job with) to the job master, which is built after the job is
 * registered (a resumed run lists the job's partitions first). Notices that come before a listener is
 * attached are kept and handed to it when it is; none is taken after `close()`. What the listener throws is
 * logged, never thrown at the shuffle master.
 */
export class PartitionsLostRelay {
  readonly #logger: Logger;
  readonly #early: PartitionsLostNotice[] = [];
  #listener: PartitionsLostListener | undefined;
  #closed = false;

  constructor(logger: Logger) {
    this.#logger = logger;
  }

  /** The callback a JobShuffleContext carries. */
  readonly notify = (notice: PartitionsLostNotice): void => {
    if (this.#closed) return;
    if (this.#listener === undefined) this.#early.push(notice);
    else this.#deliver(this.#listener, notice);
  };

  /** Hands every notice so far, then each later one, to `listener` (the last one attached). */
  attach(listener: PartitionsLostListener): void {
    this.#listener = listener;
    for (const notice of this.#early.splice(0)) this.#deliver(listener, notice);
  }

  close(): void {
    this.#closed = true;
    this.#listener = undefined;
    this.#early.length = 0;
  }

  #deliver(listener: PartitionsLostListener, notice: PartitionsLostNotice): void {
    try {
      listener(notice);
    } catch (error) {
      this.#logger.warn({ jobId: notice?.jobId, error: (error as Error)?.message ?? String(error) }, 'taking a notice of lost partitions failed');
    }
  }
}
