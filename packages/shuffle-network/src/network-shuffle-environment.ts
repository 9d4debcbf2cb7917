import { FramingResultPartitionWriter } from '@weft/shuffle-api';
import {
  type ApproximateLosses,
  type CreateInputGateRequest,
  type CreateWriterRequest,
  type InputChannelInfo,
  type InputGate,
  type Logger,
  type ResultPartitionId,
  type ResultPartitionWriter,
  type ShuffleDescriptor,
  type ShuffleEnvironment,
  type ShuffleLocation,
  type TaskExecutorId,
  closedError,
  invalidArgument,
  noopLogger,
  validateId,
  validateResumeFrom,
  validateShuffleDescriptor,
  validateSubpartitionRange,
} from '@weft/shuffle-api';
import type { ControlRequest } from './client/control-client.js';
import { type GateInput, NetworkInputGate } from './client/network-input-gate.js';
import { readDetails } from './network-descriptor-details.js';
import { NETWORK_SHUFFLE_SERVICE_ID } from './network-shuffle-master.js';
import type { ResolvedNetworkShuffleOptions } from './network-shuffle-options.js';
import { PartitionServer } from './server/partition-server.js';
import type { LocalSocket } from './wire/local-socket.js';
import { ProducedPartitionRegistry } from './server/produced-partition-registry.js';
import type { TaskExecutorAddress, TaskExecutorDirectory } from './task-executor-directory.js';

/** Largest frame a consumer accepts: a buffer, or an event with a large user payload. */
const MAX_DATA_FRAME_BYTES = 64 * 1024 * 1024 + 64;
/** Largest frame the partition server accepts: requests, credits, control messages. */
const MAX_REQUEST_FRAME_BYTES = 16 * 1024 * 1024;

export interface NetworkShuffleEnvironmentOptions {
  readonly taskExecutorId: TaskExecutorId;
  readonly options: ResolvedNetworkShuffleOptions;
  /** The factory's directory, told this environment's address once it listens. */
  readonly directory?: TaskExecutorDirectory;
  readonly logger?: Logger;
}

/**
 * The worker side of the network shuffle, one per task executor. `start()` listens (host/port options);
 * its master announces the partitions this executor produces over the same port, and consumers anywhere
 * connect to it to read them. Gates connect to the producers their descriptors name.
 */
export class NetworkShuffleEnvironment implements ShuffleEnvironment {
  readonly shuffleServiceId = NETWORK_SHUFFLE_SERVICE_ID;
  readonly taskExecutorId: TaskExecutorId;
  private readonly options: ResolvedNetworkShuffleOptions;
  private readonly logger: Logger;
  private readonly registry: ProducedPartitionRegistry;
  private readonly open = new Set<{ close(): Promise<void> }>();
  /** Open gates, with the consumer each was created for. */
  private readonly gates = new Map<NetworkInputGate, string | undefined>();
  private server: PartitionServer | undefined;
  #started: Promise<void> | undefined;
  #closed: Promise<void> | undefined;

  constructor(private readonly init: NetworkShuffleEnvironmentOptions) {
    this.taskExecutorId = init.taskExecutorId;
    this.options = init.options;
    this.logger = init.logger ?? noopLogger;
    this.registry = new ProducedPartitionRegistry(init.options);
  }

  /** Listens for consumers and the master; SHF_ERR_INVALID_CONFIG naming `port`/`host` when it cannot. Idempotent. */
  start(): Promise<void> {
    if (this.#closed !== undefined) return Promise.reject(closedError('network shuffle environment'));
    this.#started ??= (async () => {
      this.server = await PartitionServer.listen({
        host: this.options.host,
        port: this.options.port,
        registry: this.registry,
        control: async (request) => this.onControl(request),
        logger: this.logger,
        maxFrameBytes: MAX_REQUEST_FRAME_BYTES,
      });
      if (this.#closed !== undefined) {
        await this.server.close();
        throw closedError('network shuffle environment');
      }
      this.init.directory?.set(this.address);
      this.logger.info({ address: `${this.address.host}:${this.address.port}` }, 'stopped -> listening');
    })();
    return this.#started;
  }

  /** Where this environment serves its partitions (ShuffleEnvironment.location): its address once started, else undefined. */
  get location(): ShuffleLocation | undefined {
    if (this.server === undefined) return undefined;
    const { host, port } = this.address;
    return { host, port };
  }

  /** Where this environment listens, as a master's `registerTaskExecutor` takes it; only after `start()`. */
  get address(): TaskExecutorAddress {
    if (this.server === undefined) throw invalidArgument('state', 'the network shuffle environment has no address before start()');
    const { host, port } = this.server.address;
    return { taskExecutorId: this.taskExecutorId, host: this.options.advertisedHost || host, port };
  }

  async createResultPartitionWriter(request: CreateWriterRequest): Promise<ResultPartitionWriter> {
    this.checkOpen();
    const descriptor = validateShuffleDescriptor(request?.descriptor, NETWORK_SHUFFLE_SERVICE_ID);
    readDetails(descriptor, 'descriptor');
    await this.start();
    this.checkOpen();
    const partition = this.registry.claimForWriter(descriptor);
    const writer: FramingResultPartitionWriter = new FramingResultPartitionWriter({
      partitionId: descriptor.partition.partitionId,
      sink: partition,
      bufferSizeBytes: this.options.bufferSizeBytes,
      maxRecordBytes: this.options.maxRecordBytes,
      flushTimeoutMs: this.options.flushTimeoutMs,
      logger: request.logger ?? this.logger,
      commitRefusal: () => this.registry.commitRefusal(descriptor, partition),
      onDone: () => this.open.delete(writer),
    });
    this.open.add(writer);
    return writer;
  }

  async createInputGate(request: CreateInputGateRequest): Promise<InputGate> {
    this.checkOpen();
    if (!Array.isArray(request?.inputs) || request.inputs.length === 0) throw invalidArgument('inputs', 'expected at least one partition descriptor');
    const jobId = validateId('jobId', request.jobId);
    const channels: InputChannelInfo[] = [];
    const inputs: GateInput[] = [];
    request.inputs.forEach((d, i) => {
      const descriptor = validateShuffleDescriptor(d, NETWORK_SHUFFLE_SERVICE_ID, `inputs[${i}]`);
      if (descriptor.jobId !== jobId) {
        throw invalidArgument(`inputs[${i}].jobId`, `partition ${descriptor.partition.partitionId} belongs to job ${descriptor.jobId}, but the gate reads for job ${jobId}`);
      }
      const { host, port } = readDetails(descriptor, `inputs[${i}]`);
      const range = validateSubpartitionRange(request.subpartitions, descriptor.partition.numberOfSubpartitions);
      inputs.push({
        host,
        port,
        jobId,
        partitionId: descriptor.partition.partitionId,
        producerId: descriptor.producer.producerId,
        firstChannel: channels.length,
        start: range.start,
        end: range.end,
        approximate: descriptor.partition.partitionType === 'PIPELINED_APPROXIMATE',
      });
      for (let s = range.start; s <= range.end; s++) channels.push({ channelIndex: channels.length, partitionId: descriptor.partition.partitionId, subpartition: s });
    });
    const resumeFrom = validateResumeFrom(request.resumeFrom, channels.length);
    const gate: NetworkInputGate = new NetworkInputGate({
      jobId,
      channels,
      inputs,
      buffersPerChannel: this.options.buffersPerChannel,
      floatingBuffersPerGate: this.options.floatingBuffersPerGate,
      maxRecordBytes: this.options.maxRecordBytes,
      connectTimeoutMs: this.options.connectTimeoutMs,
      reconnectTimeoutMs: this.options.reconnectTimeoutMs,
      ...(resumeFrom === undefined ? {} : { resumeFrom }),
      readProducer: (d) => {
        const descriptor = validateShuffleDescriptor(d, NETWORK_SHUFFLE_SERVICE_ID, 'descriptor');
        if (descriptor.jobId !== jobId) throw invalidArgument('descriptor.jobId', `partition ${descriptor.partition.partitionId} belongs to job ${descriptor.jobId}, but the gate reads for job ${jobId}`);
        return { partitionId: descriptor.partition.partitionId, producerId: descriptor.producer.producerId, ...readDetails(descriptor, 'descriptor') };
      },
      maxFrameBytes: MAX_DATA_FRAME_BYTES,
      connectLocal: (host, port) => this.connectLocal(host, port),
      onClose: () => {
        this.open.delete(gate);
        this.gates.delete(gate);
      },
    });
    this.open.add(gate);
    this.gates.set(gate, request.consumerId);
    return gate;
  }

  /** An in-process connection to this environment's own server, for a producer at `host:port` that is this environment; else undefined (TCP). */
  private connectLocal(host: string, port: number): LocalSocket | undefined {
    const server = this.server;
    if (server === undefined) return undefined;
    const own = this.address;
    return port === own.port && host === own.host ? server.connectLocal() : undefined;
  }

  /**
   * What the PIPELINED_APPROXIMATE partitions of `jobId` this environment produces (or produced) lost to
   * consumers that went away before their end, summed (counted, not estimated): `buffersDropped`,
   * `recordsDropped` (records whose first byte was in a dropped buffer), `partialRecordsSkipped` (tails
   * cut so that a new consumer starts at a whole record) and `reconnects` (consumers that attached again).
   * Kept until the job is unregistered at the master; zeros for a job without approximate partitions here.
   */
  approximateLosses(jobId: string): ApproximateLosses {
    return this.registry.approximateLosses(validateId('jobId', jobId));
  }

  /**
   * A new attempt of a PIPELINED_APPROXIMATE partition (ShuffleEnvironment.updatePartitionInfo): every open
   * gate here that reads it (of `consumerId` only, when given) reads the new attempt once its channels lost
   * the old one. Returns how many gates were told.
   */
  updatePartitionInfo(descriptor: ShuffleDescriptor, consumerId?: string): number {
    this.checkOpen();
    const d = validateShuffleDescriptor(descriptor, NETWORK_SHUFFLE_SERVICE_ID, 'descriptor');
    let told = 0;
    for (const [gate, consumer] of this.gates) {
      if (consumerId !== undefined && consumer !== consumerId) continue;
      if (!gate.channels.some((c) => c.partitionId === d.partition.partitionId) || gate.jobId !== d.jobId) continue;
      gate.updatePartitionInfo(d);
      told++;
    }
    return told;
  }

  /**
   * Drops the partitions with these ids that this environment produces (in any job): their buffers are
   * recycled and readers get SHF_ERR_PARTITION_NOT_FOUND. Unknown ids are ignored. Works after close() too.
   */
  async releasePartitionsLocally(partitionIds: readonly ResultPartitionId[]): Promise<void> {
    if (!Array.isArray(partitionIds)) throw invalidArgument('partitionIds', 'expected an array of partition ids');
    partitionIds.forEach((id, i) => validateId(`partitionIds[${i}]`, id));
    const released = this.registry.releaseIds(partitionIds, 'released locally by the environment that produced it');
    if (released > 0) this.logger.debug({ partitions: released }, 'produced partitions released locally');
  }

  close(): Promise<void> {
    this.#closed ??= this.#close();
    return this.#closed;
  }

  async #close(): Promise<void> {
    const pending = [...this.open];
    this.open.clear();
    // writers abort (their consumers get SHF_ERR_PRODUCER_FAILED) and what is left is released (readers get
    // SHF_ERR_PARTITION_NOT_FOUND) before the connections end, so consumers read why rather than a lost connection
    const results = await Promise.allSettled(pending.map((resource) => resource.close()));
    this.registry.clear('the network shuffle environment closed');
    results.push(...(await Promise.allSettled([this.#started?.then(() => this.server?.close(), () => undefined)])));
    const failure = results.find((r): r is PromiseRejectedResult => r.status === 'rejected');
    if (failure !== undefined) throw failure.reason;
  }

  [Symbol.asyncDispose](): Promise<void> {
    return this.close();
  }

  private onControl(request: unknown): void {
    this.checkOpen();
    const r = request as ControlRequest;
    switch (r?.op) {
      case 'register': {
        const descriptor = validateShuffleDescriptor(r.descriptor, NETWORK_SHUFFLE_SERVICE_ID);
        if (descriptor.producer.taskExecutorId !== this.taskExecutorId) {
          throw invalidArgument('descriptor.producer.taskExecutorId', `partition ${descriptor.partition.partitionId} is for task executor ${descriptor.producer.taskExecutorId}, but this is ${this.taskExecutorId}`);
        }
        this.registry.register(descriptor);
        return;
      }
      case 'release':
        this.registry.release(r.jobId, r.partitionId, r.producerId, 'released by the scheduler');
        return;
      case 'release-job':
        this.registry.releaseJob(r.jobId, 'its job was unregistered');
        return;
      default:
        throw invalidArgument('request.op', `unknown control request ${JSON.stringify((request as { op?: unknown })?.op)}`);
    }
  }

  private checkOpen(): void {
    if (this.#closed !== undefined) throw closedError('network shuffle environment');
  }
}
