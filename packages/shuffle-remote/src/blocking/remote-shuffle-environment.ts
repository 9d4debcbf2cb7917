import { randomUUID } from 'node:crypto';
import {
  type CreateInputGateRequest,
  type CreateWriterRequest,
  type InputGate,
  type Logger,
  type ResultPartitionId,
  type ResultPartitionWriter,
  type ShuffleEnvironment,
  type ShuffleEnvironmentContext,
  closedError,
  invalidArgument,
  noopLogger,
  partitionNotFound,
  serializeError,
  validateSubpartitionRange,
} from '@weft/shuffle-api';
import type { ResolvedRemoteShuffleOptions } from '../config/remote-shuffle-options.js';
import { requestedProducerMemoryBytes, requestedReadBufferBytes } from '../config/request-memory.js';
import { objectKey } from '../storage/object-key.js';
import { SpillFile } from '../storage/spill-file.js';
import { REMOTE_SHUFFLE_SERVICE_ID, checkRemoteDescriptor } from './descriptor-checks.js';
import { RemoteInputGate } from './remote-input-gate.js';
import { RemoteResultPartitionWriter } from './remote-result-partition-writer.js';
import { StorePair } from './store-pair.js';

/**
 * The worker side of the remote shuffle: writers that persist partitions into the blob store and commit
 * them in the metadata store, and gates that read committed partitions back (from any process).
 *
 * Stores connect on `start()` or on first use, whichever comes first; an unreachable store is
 * SHF_ERR_INVALID_CONFIG naming the setting. `close()` aborts open writers, closes gates and stores.
 */
export class RemoteShuffleEnvironment implements ShuffleEnvironment {
  readonly shuffleServiceId = REMOTE_SHUFFLE_SERVICE_ID;
  private readonly stores: StorePair;
  private readonly logger: Logger;
  private readonly open = new Set<{ close(): Promise<void> }>();
  private closed = false;
  #closing: Promise<void> | undefined;

  constructor(
    private readonly options: ResolvedRemoteShuffleOptions,
    context: ShuffleEnvironmentContext,
  ) {
    this.logger = (context.logger ?? noopLogger).child({ taskExecutorId: context.taskExecutorId });
    this.stores = new StorePair(options, this.logger, context.clock);
  }

  /** Connects the stores now (fail fast); otherwise the first writer or gate does. */
  async start(): Promise<void> {
    this.checkOpen();
    await this.stores.start();
  }

  async createResultPartitionWriter(request: CreateWriterRequest): Promise<ResultPartitionWriter> {
    this.checkOpen();
    const descriptor = checkRemoteDescriptor(request?.descriptor);
    const producerMemoryBytes = requestedProducerMemoryBytes(this.options.producerMemoryBytes, request.memoryBytes);
    await this.stores.start();
    const { jobId } = descriptor;
    const { partitionId } = descriptor.partition;
    const producerId = descriptor.producer.producerId;
    const writeId = randomUUID();
    const key = objectKey({ jobId, partitionId, producerId, writeId });
    const { blob, meta } = this.stores;
    if ((await meta.beginAttempt({ writeId, jobId, partitionId, producerId, objectKey: key })) === 'not-registered') {
      throw partitionNotFound(partitionId, 'it is not registered with a master (released, or never registered)');
    }
    const store = this.options.store;
    let blobWriter;
    let spill: SpillFile | undefined;
    try {
      blobWriter = await blob.createWriter(key);
      if (store.type === 's3' && store.upload !== 'multipart') spill = await SpillFile.create(store.spillDir);
    } catch (error) {
      await blobWriter?.abort().catch(() => undefined);
      await meta.failAttempt(writeId, serializeError(error)).catch(() => undefined);
      await meta.closeAttempt(writeId).catch(() => undefined);
      throw error;
    }
    const logger = (request.logger ?? this.logger).child({ jobId, partitionId, attempt: descriptor.producer.attempt });
    const writer: RemoteResultPartitionWriter = new RemoteResultPartitionWriter({
      descriptor,
      writeId,
      blob: blobWriter,
      spill,
      meta,
      options: { ...this.options, producerMemoryBytes },
      logger,
      onClosed: () => this.open.delete(writer),
    });
    this.open.add(writer);
    return writer;
  }

  async createInputGate(request: CreateInputGateRequest): Promise<InputGate> {
    this.checkOpen();
    if (!Array.isArray(request?.inputs) || request.inputs.length === 0) {
      throw invalidArgument('inputs', 'expected at least one partition descriptor');
    }
    const inputs = request.inputs.map((d, i) => checkRemoteDescriptor(d, `inputs[${i}]`));
    let range = request.subpartitions;
    for (const descriptor of inputs) range = validateSubpartitionRange(request.subpartitions, descriptor.partition.numberOfSubpartitions);
    const readBufferBytes = requestedReadBufferBytes(this.options.readBufferBytes, request.memoryBytes);
    await this.stores.start();
    const gate: RemoteInputGate = new RemoteInputGate({
      inputs,
      range,
      meta: this.stores.meta,
      blob: this.stores.blob,
      options: { ...this.options, readBufferBytes },
      logger: request.logger ?? this.logger,
      onClosed: () => this.open.delete(gate),
    });
    this.open.add(gate);
    return gate;
  }

  async releasePartitionsLocally(partitionIds: readonly ResultPartitionId[]): Promise<void> {
    // nothing is held locally: data lives in the blob store and is released through the master
    void partitionIds;
  }

  close(): Promise<void> {
    this.#closing ??= this.#close();
    return this.#closing;
  }

  async #close(): Promise<void> {
    this.closed = true;
    const pending = [...this.open];
    this.open.clear();
    const results = await Promise.allSettled([...pending.map((resource) => resource.close())]);
    results.push(...(await Promise.allSettled([this.stores.close()])));
    const failure = results.find((r): r is PromiseRejectedResult => r.status === 'rejected');
    if (failure !== undefined) throw failure.reason;
  }

  [Symbol.asyncDispose](): Promise<void> {
    return this.close();
  }

  private checkOpen(): void {
    if (this.closed) throw closedError('remote shuffle environment');
  }
}
