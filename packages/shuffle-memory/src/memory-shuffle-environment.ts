import { FloatingCredits, FramingResultPartitionWriter, resultPartitionTypeProperties } from '@weft/shuffle-api';
import {
  type ApproximateLosses,
  type CreateInputGateRequest,
  type CreateWriterRequest,
  type InputChannelInfo,
  type InputGate,
  type JobId,
  type Logger,
  type ResultPartitionId,
  type ResultPartitionWriter,
  type ShuffleEnvironment,
  type ShuffleError,
  closedError,
  invalidArgument,
  noopLogger,
  partitionNotFound,
  validateId,
  validateResumeFrom,
  validateShuffleDescriptor,
  validateSubpartitionRange,
} from '@weft/shuffle-api';
import { BlockingPartition } from './blocking-partition.js';
import type { ChannelEntry, SubpartitionReader } from './channel-entry.js';
import { MemoryInputGate } from './memory-input-gate.js';
import { MEMORY_SHUFFLE_SERVICE_ID } from './memory-shuffle-master.js';
import type { MemoryShuffleRegistry } from './memory-shuffle-registry.js';

/** A reader that yields one error: how an unknown or consumed partition shows up on a channel. */
function failedReader(error: ChannelEntry & { kind: 'error' }): SubpartitionReader {
  let delivered = false;
  return {
    get hasNext() {
      return !delivered;
    },
    poll: () => {
      if (delivered) return undefined;
      delivered = true;
      return error;
    },
    recycle() {},
    release() {
      delivered = true;
    },
  };
}

/** The worker side of the in-memory shuffle: writers and gates over the process's registry. */
export class MemoryShuffleEnvironment implements ShuffleEnvironment {
  readonly shuffleServiceId = MEMORY_SHUFFLE_SERVICE_ID;
  private readonly open = new Set<{ close(): Promise<void> }>();
  #closed: Promise<void> | undefined;

  constructor(
    private readonly registry: MemoryShuffleRegistry,
    private readonly logger: Logger = noopLogger,
  ) {}

  async createResultPartitionWriter(request: CreateWriterRequest): Promise<ResultPartitionWriter> {
    this.checkOpen();
    const descriptor = validateShuffleDescriptor(request?.descriptor, MEMORY_SHUFFLE_SERVICE_ID);
    const sink = this.registry.claimForWriter(descriptor, this);
    const { bufferSizeBytes, maxRecordBytes, flushTimeoutMs } = this.registry.options;
    const writer: FramingResultPartitionWriter = new FramingResultPartitionWriter({
      partitionId: descriptor.partition.partitionId,
      sink,
      bufferSizeBytes,
      maxRecordBytes,
      // a blocking partition is read once complete: only a pipelined one's readers wait for a partly filled buffer
      ...(resultPartitionTypeProperties(descriptor.partition.partitionType).canBePipelined ? { flushTimeoutMs } : {}),
      logger: request.logger ?? this.logger,
      commitRefusal: () => this.registry.commitRefusal(descriptor, sink),
      onDone: () => this.open.delete(writer),
    });
    this.open.add(writer);
    return writer;
  }

  async createInputGate(request: CreateInputGateRequest): Promise<InputGate> {
    this.checkOpen();
    if (!Array.isArray(request?.inputs) || request.inputs.length === 0) {
      throw invalidArgument('inputs', 'expected at least one partition descriptor');
    }
    const jobId = validateId('jobId', request.jobId) as JobId;
    const descriptors = request.inputs.map((d, i) => validateShuffleDescriptor(d, MEMORY_SHUFFLE_SERVICE_ID, `inputs[${i}]`));
    descriptors.forEach((d, i) => {
      if (d.jobId !== jobId) {
        throw invalidArgument(`inputs[${i}].jobId`, `partition ${d.partition.partitionId} belongs to job ${d.jobId}, but the gate reads for job ${jobId}`);
      }
    });
    const infos: InputChannelInfo[] = [];
    for (const descriptor of descriptors) {
      const range = validateSubpartitionRange(request.subpartitions, descriptor.partition.numberOfSubpartitions);
      for (let s = range.start; s <= range.end; s++) {
        infos.push({ channelIndex: infos.length, partitionId: descriptor.partition.partitionId, subpartition: s });
      }
    }
    const resumeFrom = validateResumeFrom(request.resumeFrom, infos.length);
    const { buffersPerChannel, floatingBuffersPerGate, maxRecordBytes } = this.registry.options;
    const floating = new FloatingCredits(floatingBuffersPerGate);
    const gate = new MemoryInputGate(
      infos,
      maxRecordBytes,
      (info, listener) => this.bind(jobId, info, { buffersPerChannel, floating, listener }, resumeFrom?.[info.channelIndex]),
      (info, gone, listener, onBound) => this.rebind(jobId, info, gone, { buffersPerChannel, floating, listener }, onBound),
    );
    this.open.add(gate);
    const close = gate.close.bind(gate);
    gate.close = async () => {
      this.open.delete(gate);
      await close();
    };
    return gate;
  }

  /**
   * Releases the partitions with these ids that this environment produced (its writers wrote, or are
   * writing, their current attempt), in any job: their buffers are dropped and readers get
   * SHF_ERR_PARTITION_NOT_FOUND, as after `releasePartitionExternally`. Partitions other environments
   * produced, and unknown or already released ids, are left alone. Works after `close()` too, since
   * partitions outlive the writers that produced them.
   */
  /**
   * What the PIPELINED_APPROXIMATE partitions of `jobId` this environment writes (or wrote, until the job is
   * unregistered) lost to readers that went away (ShuffleEnvironment.approximateLosses), summed.
   */
  approximateLosses(jobId: JobId): ApproximateLosses {
    return this.registry.approximateLosses(validateId('jobId', jobId) as JobId, this);
  }

  async releasePartitionsLocally(partitionIds: readonly ResultPartitionId[]): Promise<void> {
    if (!Array.isArray(partitionIds)) throw invalidArgument('partitionIds', 'expected an array of partition ids');
    partitionIds.forEach((id, i) => validateId(`partitionIds[${i}]`, id));
    const released = this.registry.releaseProducedBy(this, partitionIds);
    if (released > 0) this.logger.debug({ partitions: released }, 'produced partitions released locally');
  }

  close(): Promise<void> {
    this.#closed ??= this.#close();
    return this.#closed;
  }

  async #close(): Promise<void> {
    const pending = [...this.open];
    this.open.clear();
    const results = await Promise.allSettled(pending.map((resource) => resource.close()));
    const failure = results.find((r): r is PromiseRejectedResult => r.status === 'rejected');
    if (failure !== undefined) throw failure.reason;
  }

  [Symbol.asyncDispose](): Promise<void> {
    return this.close();
  }

  private bind(
    jobId: CreateInputGateRequest['jobId'],
    info: InputChannelInfo,
    credit: { buffersPerChannel: number; floating: FloatingCredits; listener: () => void },
    resumeFrom: number | undefined,
  ): SubpartitionReader {
    let partition;
    try {
      partition = this.registry.find(jobId, info.partitionId);
    } catch (error) {
      return failedReader({ kind: 'error', error: error as ShuffleError });
    }
    if (partition instanceof BlockingPartition) return partition.openReader(info.subpartition, credit.listener);
    const reader = partition.openReader(info.subpartition, credit.buffersPerChannel, credit.floating, credit.listener, resumeFrom);
    if (reader !== undefined) return reader;
    return failedReader({
      kind: 'error',
      error: partitionNotFound(info.partitionId, `subpartition ${info.subpartition} of this pipelined partition was already consumed`),
    });
  }

  /**
   * Binds an approximate input's channel to the newest attempt of its partition once it is not `gone`:
   * now if it is registered already, else at its registration (MemoryShuffleRegistry.whenRegistered).
   */
  private rebind(
    jobId: CreateInputGateRequest['jobId'],
    info: InputChannelInfo,
    gone: object | undefined,
    credit: { buffersPerChannel: number; floating: FloatingCredits; listener: () => void },
    onBound: (reader: SubpartitionReader) => void,
  ): () => void {
    let cancel: () => void = () => {};
    const attempt = (): void => {
      let partition;
      try {
        partition = this.registry.find(jobId, info.partitionId);
      } catch {
        partition = undefined;
      }
      const reader = partition === undefined || partition === gone || partition instanceof BlockingPartition ? undefined : partition.openReader(info.subpartition, credit.buffersPerChannel, credit.floating, credit.listener);
      if (reader !== undefined) onBound(reader);
      else cancel = this.registry.whenRegistered(jobId, info.partitionId, attempt);
    };
    attempt();
    return () => cancel();
  }

  private checkOpen(): void {
    if (this.#closed !== undefined) throw closedError('memory shuffle environment');
  }
}
