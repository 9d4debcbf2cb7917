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
  validateId,
  validatePartitionDescriptor,
  validateProducerDescriptor,
  validateShuffleDescriptor,
} from '@weft/shuffle-api';
import type { MemoryShuffleRegistry } from './memory-shuffle-registry.js';

export const MEMORY_SHUFFLE_SERVICE_ID = 'memory';

const SUPPORTED_TYPES = new Set(['PIPELINED', 'PIPELINED_BOUNDED', 'BLOCKING', 'BLOCKING_PERSISTENT']);

/**
 * The control side of the in-memory shuffle. Partitions live in the process's registry, shared with the
 * MemoryShuffleEnvironments of the same factory; descriptors carry no details.
 */
export class MemoryShuffleMaster implements ShuffleMaster {
  readonly shuffleServiceId = MEMORY_SHUFFLE_SERVICE_ID;
  private closed = false;

  constructor(
    private readonly registry: MemoryShuffleRegistry,
    private readonly logger: Logger = noopLogger,
  ) {}

  async start(): Promise<void> {
    this.checkOpen();
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.registry.clear();
  }

  [Symbol.asyncDispose](): Promise<void> {
    return this.close();
  }

  async registerJob(context: JobShuffleContext): Promise<void> {
    this.checkOpen();
    this.registry.registerJob(validateId('jobId', context?.jobId) as JobId);
  }

  async unregisterJob(jobId: JobId): Promise<void> {
    this.checkOpen();
    this.registry.unregisterJob(validateId('jobId', jobId) as JobId);
  }

  async registerPartitionWithProducer(request: RegisterPartitionRequest): Promise<ShuffleDescriptor> {
    this.checkOpen();
    validateId('jobId', request?.jobId);
    const partition = validatePartitionDescriptor(request.partition);
    const producer = validateProducerDescriptor(request.producer);
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
    this.registry.register(descriptor);
    this.logger.debug({ jobId: request.jobId, partitionId: partition.partitionId, attempt: producer.attempt }, 'partition registered');
    return descriptor;
  }

  async releasePartitionExternally(descriptor: ShuffleDescriptor): Promise<void> {
    this.checkOpen();
    const d = validateShuffleDescriptor(descriptor, MEMORY_SHUFFLE_SERVICE_ID);
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
    if (this.closed) throw closedError('memory shuffle master');
  }
}
