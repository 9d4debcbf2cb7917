import {
  type JobId,
  type JobShuffleContext,
  type Logger,
  type RegisterPartitionRequest,
  type ShuffleDescriptor,
  type ShuffleMaster,
  type StoredPartition,
  closedError,
  fencedError,
  invalidArgument,
  isShuffleError,
  noopLogger,
  validateEpoch,
  validateId,
  validatePartitionDescriptor,
  validateProducerDescriptor,
  validateShuffleDescriptor,
} from '@weft/shuffle-api';
import { ControlClient, type ControlRequest } from './client/control-client.js';
import type { ResolvedNetworkShuffleOptions } from './network-shuffle-options.js';
import type { TaskExecutorAddress, TaskExecutorDirectory } from './task-executor-directory.js';
import { readDetails } from './network-descriptor-details.js';

export const NETWORK_SHUFFLE_SERVICE_ID = 'network';

const SUPPORTED_TYPES = new Set(['PIPELINED', 'PIPELINED_BOUNDED', 'PIPELINED_APPROXIMATE']);

interface JobState {
  /** The task executors that were asked to hold a partition of the job. */
  readonly executors: Set<string>;
  /** The newest epoch seen for the job, and the one this master registered it with. */
  newestEpoch: number | undefined;
  ownEpoch: number | undefined;
}

/**
 * The control side of the network shuffle. Knows where task executors listen (a TaskExecutorDirectory),
 * puts the producer's address into each descriptor, and announces every partition to the producer's
 * environment before returning its descriptor — so a consumer that connects before the writer exists waits
 * for data, and one asking for a partition never registered is refused at once. Releases go to the same
 * environment. Pipelined data lives only in its producer's memory, so `listPartitions` is always empty.
 */
export class NetworkShuffleMaster implements ShuffleMaster {
  readonly shuffleServiceId = NETWORK_SHUFFLE_SERVICE_ID;
  private readonly jobs = new Map<string, JobState>();
  private readonly clients = new Map<string, ControlClient>();
  #closed: Promise<void> | undefined;

  constructor(
    private readonly directory: TaskExecutorDirectory,
    private readonly options: ResolvedNetworkShuffleOptions,
    private readonly logger: Logger = noopLogger,
  ) {}

  async start(): Promise<void> {
    this.checkOpen();
  }

  /** Tells this master where a task executor's environment listens (`environment.address` of an environment in another process). */
  registerTaskExecutor(address: TaskExecutorAddress): void {
    this.checkOpen();
    this.directory.set(address);
  }

  close(): Promise<void> {
    this.#closed ??= Promise.resolve().then(() => {
      for (const client of this.clients.values()) client.close();
      this.clients.clear();
    });
    return this.#closed;
  }

  [Symbol.asyncDispose](): Promise<void> {
    return this.close();
  }

  async registerJob(context: JobShuffleContext): Promise<void> {
    this.checkOpen();
    const jobId = validateId('jobId', context?.jobId);
    const epoch = validateEpoch('epoch', context.epoch);
    const job = this.job(jobId);
    if (epoch !== undefined) {
      this.raiseEpoch(jobId, job, epoch, 'registration');
      job.ownEpoch = epoch;
    }
  }

  async unregisterJob(jobId: JobId): Promise<void> {
    this.checkOpen();
    validateId('jobId', jobId);
    const job = this.jobs.get(jobId);
    if (job === undefined) return;
    this.checkEpoch(jobId, job, 'unregisterJob');
    this.jobs.delete(jobId);
    await Promise.all([...job.executors].map((id) => this.tell(id, { op: 'release-job', jobId })));
  }

  async registerPartitionWithProducer(request: RegisterPartitionRequest): Promise<ShuffleDescriptor> {
    this.checkOpen();
    const jobId = validateId('jobId', request?.jobId);
    const partition = validatePartitionDescriptor(request.partition);
    const producer = validateProducerDescriptor(request.producer);
    const epoch = validateEpoch('epoch', request.epoch);
    if (!SUPPORTED_TYPES.has(partition.partitionType)) {
      throw invalidArgument('partition.partitionType', `the network shuffle supports ${[...SUPPORTED_TYPES].join(', ')}, not ${partition.partitionType}`);
    }
    const job = this.jobs.get(jobId);
    if (job === undefined) throw invalidArgument('jobId', `job ${jobId} is not registered; call registerJob first`);
    if (epoch !== undefined) this.raiseEpoch(jobId, job, epoch, `registration of partition ${partition.partitionId}`, partition.partitionId);
    // the engine placed the producer and says where its executor listens (ProducerDescriptor.location)
    if (producer.location !== undefined) this.directory.set({ taskExecutorId: producer.taskExecutorId, host: producer.location.host, port: producer.location.port });
    const address = this.directory.get(producer.taskExecutorId);
    if (address === undefined) {
      throw invalidArgument(
        'producer.taskExecutorId',
        `no address is known for task executor ${producer.taskExecutorId}: set producer.location, start its network shuffle environment in this factory, call registerTaskExecutor with its address, or list it in the taskExecutors option`,
      );
    }
    const descriptor: ShuffleDescriptor = {
      shuffleServiceId: NETWORK_SHUFFLE_SERVICE_ID,
      jobId: request.jobId,
      partition: { ...partition },
      producer: { ...producer },
      details: { host: address.host, port: address.port },
    };
    job.executors.add(producer.taskExecutorId);
    await this.client(address).request({ op: 'register', descriptor });
    this.logger.debug({ jobId, partitionId: partition.partitionId, attempt: producer.attempt, at: `${address.host}:${address.port}` }, 'partition registered');
    return descriptor;
  }

  async releasePartitionExternally(descriptor: ShuffleDescriptor): Promise<void> {
    this.checkOpen();
    const d = validateShuffleDescriptor(descriptor, NETWORK_SHUFFLE_SERVICE_ID);
    const job = this.jobs.get(d.jobId);
    if (job !== undefined) this.checkEpoch(d.jobId, job, `release of partition ${d.partition.partitionId}`);
    const { host, port } = readDetails(d, 'descriptor');
    const address = { taskExecutorId: d.producer.taskExecutorId, host, port };
    await this.tellAt(address, { op: 'release', jobId: d.jobId, partitionId: d.partition.partitionId, producerId: d.producer.producerId });
  }

  async listPartitions(jobId: JobId): Promise<readonly StoredPartition[]> {
    this.checkOpen();
    validateId('jobId', jobId);
    return [];
  }

  /** Sends a release; a task executor that cannot be reached holds nothing any more (its process is gone). */
  private async tell(taskExecutorId: string, request: ControlRequest): Promise<void> {
    const address = this.directory.get(taskExecutorId);
    if (address !== undefined) await this.tellAt(address, request);
  }

  private async tellAt(address: TaskExecutorAddress, request: ControlRequest): Promise<void> {
    try {
      await this.client(address).request(request);
    } catch (error) {
      if (!isShuffleError(error, 'SHF_ERR_CONNECTION_LOST')) throw error;
      this.logger.warn({ taskExecutorId: address.taskExecutorId, op: request.op, error: error.message }, 'task executor unreachable; nothing to release there');
    }
  }

  private client(address: TaskExecutorAddress): ControlClient {
    const key = `${address.taskExecutorId}@${address.host}:${address.port}`;
    let client = this.clients.get(key);
    if (client === undefined) {
      client = new ControlClient({
        ...address,
        connectTimeoutMs: this.options.connectTimeoutMs,
        requestTimeoutMs: this.options.requestTimeoutMs,
        maxFrameBytes: 1024 * 1024,
      });
      this.clients.set(key, client);
    }
    return client;
  }

  private job(jobId: string): JobState {
    let job = this.jobs.get(jobId);
    if (job === undefined) this.jobs.set(jobId, (job = { executors: new Set(), newestEpoch: undefined, ownEpoch: undefined }));
    return job;
  }

  private raiseEpoch(jobId: string, job: JobState, epoch: number, what: string, partitionId?: string): void {
    const newest = job.newestEpoch ?? epoch;
    if (epoch < newest) throw fencedError(what, { jobId, epoch, newestEpoch: newest, ...(partitionId === undefined ? {} : { partitionId }) });
    job.newestEpoch = epoch;
    if (job.ownEpoch === undefined || epoch > job.ownEpoch) job.ownEpoch = epoch;
  }

  private checkEpoch(jobId: string, job: JobState, what: string): void {
    const { ownEpoch, newestEpoch } = job;
    if (ownEpoch !== undefined && newestEpoch !== undefined && ownEpoch < newestEpoch) throw fencedError(what, { jobId, epoch: ownEpoch, newestEpoch });
  }

  private checkOpen(): void {
    if (this.#closed !== undefined) throw closedError('network shuffle master');
  }
}
