import {
  type JobId,
  type JobShuffleContext,
  type Logger,
  type RegisterPartitionRequest,
  type ShuffleDescriptor,
  type ShuffleMaster,
  type StoredPartition,
  closedError,
  invalidArgument,
  noopLogger,
  validateEpoch,
  validateId,
  validatePartitionDescriptor,
  validateProducerDescriptor,
  validateShuffleDescriptor,
} from '@weft/shuffle-api';
import type { MemoryShuffleRegistry } from './memory-shuffle-registry.js';

export const MEMORY_SHUFFLE_SERVICE_ID = 'memory';

const SUPPORTED_TYPES = new Set(['PIPELINED', 'PIPELINED_BOUNDED', 'PIPELINED_APPROXIMATE', 'BLOCKING', 'BLOCKING_PERSISTENT']);

/**
 * The control side of the in-memory shuffle. Partitions live in the process's registry, shared with the
 * MemoryShuffleEnvironments of the same factory; descriptors carry no details.
 *
 * Fencing: this master's epoch for a job is the one it registered the job with (else the newest it
 * registered a partition with); once the registry saw a newer one, its releases and `unregisterJob` for
 * the job are refused (SHF_ERR_FENCED) — the check and the release are one synchronous step.
 */
export class MemoryShuffleMaster implements ShuffleMaster {
  readonly shuffleServiceId = MEMORY_SHUFFLE_SERVICE_ID;
  #closed: Promise<void> | undefined;
  /** This master's job master epoch per job (JobShuffleContext.epoch, else its registrations'). */
  readonly #epochs = new Map<JobId, number>();

  constructor(
    private readonly registry: MemoryShuffleRegistry,
    private readonly logger: Logger = noopLogger,
  ) {}

  async start(): Promise<void> {
    this.checkOpen();
  }

  close(): Promise<void> {
    this.#closed ??= Promise.resolve().then(() => this.registry.clear());
    return this.#closed;
  }

  [Symbol.asyncDispose](): Promise<void> {
    return this.close();
  }

  async registerJob(context: JobShuffleContext): Promise<void> {
    this.checkOpen();
    const jobId = validateId('jobId', context?.jobId) as JobId;
    const epoch = validateEpoch('epoch', context.epoch);
    this.registry.registerJob(jobId, epoch);
    if (epoch !== undefined) this.#epochs.set(jobId, epoch);
  }

  async unregisterJob(jobId: JobId): Promise<void> {
    this.checkOpen();
    validateId('jobId', jobId);
    this.registry.checkEpoch(jobId, this.#epochs.get(jobId), 'unregisterJob');
    this.registry.unregisterJob(jobId);
    this.#epochs.delete(jobId);
  }

  async registerPartitionWithProducer(request: RegisterPartitionRequest): Promise<ShuffleDescriptor> {
    this.checkOpen();
    validateId('jobId', request?.jobId);
    const partition = validatePartitionDescriptor(request.partition);
    const producer = validateProducerDescriptor(request.producer);
    const epoch = validateEpoch('epoch', request.epoch);
    if (!SUPPORTED_TYPES.has(partition.partitionType)) {
      throw invalidArgument('partition.partitionType', `the memory shuffle supports ${[...SUPPORTED_TYPES].join(', ')}, not ${partition.partitionType}`);
    }
    const descriptor: ShuffleDescriptor = {
      shuffleServiceId: MEMORY_SHUFFLE_SERVICE_ID,
      jobId: request.jobId,
      partition: { ...partition },
      producer: { ...producer },
      details: null,
    };
    this.registry.register(descriptor, epoch);
    if (epoch !== undefined && epoch > (this.#epochs.get(request.jobId) ?? -1)) this.#epochs.set(request.jobId, epoch);
    this.logger.debug({ jobId: request.jobId, partitionId: partition.partitionId, attempt: producer.attempt }, 'partition registered');
    return descriptor;
  }

  async releasePartitionExternally(descriptor: ShuffleDescriptor): Promise<void> {
    this.checkOpen();
    const d = validateShuffleDescriptor(descriptor, MEMORY_SHUFFLE_SERVICE_ID);
    this.registry.checkEpoch(d.jobId, this.#epochs.get(d.jobId), `release of partition ${d.partition.partitionId}`);
    this.registry.release(d.jobId, d.partition.partitionId, 'released by the scheduler');
  }

  async listPartitions(jobId: JobId): Promise<readonly StoredPartition[]> {
    this.checkOpen();
    return this.registry.finished(validateId('jobId', jobId) as JobId).map(({ descriptor, subpartitionBytes }) => ({
      descriptor,
      subpartitionBytes,
      totalBytes: subpartitionBytes.reduce((a, b) => a + b, 0),
    }));
  }

  private checkOpen(): void {
    if (this.#closed !== undefined) throw closedError('memory shuffle master');
  }
}
