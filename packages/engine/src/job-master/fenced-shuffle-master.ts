import type { JobId, JobShuffleContext, RegisterPartitionRequest, ShuffleDescriptor, ShuffleFailureReport, ShuffleMaster, StoredPartition } from '@weft/shuffle-api';
import type { JobFence } from './job-fence.js';

/**
 * The job's blocking ShuffleMaster as its job master run uses it, behind the run's JobFence: every call
 * that changes the shuffle (registerJob, registerPartitionWithProducer, releasePartitionExternally,
 * unregisterJob) is refused with the fence's WEFT_ERR_FENCED without reaching the shuffle once the run is
 * fenced, and a refusal the shuffle answers with SHF_ERR_FENCED fences the run. Reads (listPartitions),
 * failure reports, start and close pass through. So every collaborator that releases — partition releases
 * during the job, restarts, a resume's garbage — is hands-off from the first refusal on.
 */
export class FencedShuffleMaster implements ShuffleMaster {
  readonly #master: ShuffleMaster;
  readonly #fence: JobFence;

  constructor(master: ShuffleMaster, fence: JobFence) {
    this.#master = master;
    this.#fence = fence;
  }

  get shuffleServiceId(): string {
    return this.#master.shuffleServiceId;
  }

  start(): Promise<void> {
    return this.#master.start();
  }

  close(): Promise<void> {
    return this.#master.close();
  }

  [Symbol.asyncDispose](): Promise<void> {
    return this.close();
  }

  registerJob(context: JobShuffleContext): Promise<void> {
    return this.#guard(() => this.#master.registerJob(context));
  }

  unregisterJob(jobId: JobId): Promise<void> {
    return this.#guard(() => this.#master.unregisterJob(jobId));
  }

  registerPartitionWithProducer(request: RegisterPartitionRequest): Promise<ShuffleDescriptor> {
    return this.#guard(() => this.#master.registerPartitionWithProducer(request));
  }

  releasePartitionExternally(descriptor: ShuffleDescriptor): Promise<void> {
    return this.#guard(() => this.#master.releasePartitionExternally(descriptor));
  }

  listPartitions(jobId: JobId): Promise<readonly StoredPartition[]> {
    return this.#master.listPartitions(jobId);
  }

  get reportFailure(): ((report: ShuffleFailureReport) => Promise<void>) | undefined {
    const report = this.#master.reportFailure;
    return report === undefined ? undefined : (r) => report.call(this.#master, r);
  }

  async #guard<T>(call: () => Promise<T>): Promise<T> {
    if (this.#fence.error !== undefined) throw this.#fence.error;
    try {
      return await call();
    } catch (error) {
      if (this.#fence.observe(error)) throw this.#fence.error;
      throw error;
    }
  }
}
