import {
  type CreateInputGateRequest,
  type CreateWriterRequest,
  type InputGate,
  type Logger,
  type ResultPartitionId,
  type ResultPartitionWriter,
  type ShuffleDescriptor,
  type ShuffleEnvironment,
  type ShuffleEnvironmentContext,
  closedError,
  invalidArgument,
  noopLogger,
  validateSubpartitionRange,
} from '@weft/shuffle-api';
import { requestedProducerMemoryBytes, requestedReadBufferBytes } from '../config/request-memory.js';
import type { ResolvedShuffleServerClientOptions } from './client-options.js';
import { PartitionLocator } from './partition-locator.js';
import { SHUFFLE_SERVER_SERVICE_ID, checkServerDescriptor, copiesOf } from './server-descriptor.js';
import { ServerInputGate } from './server-input-gate.js';
import { ServerResultPartitionWriter } from './server-result-partition-writer.js';
import { ShuffleServerClient } from './shuffle-server-client.js';

/**
 * The worker side of the shuffle-server shuffle: writers push to the server a descriptor names, gates
 * fetch from it (or from the S3 tier when it is gone). Needs no secret: descriptors carry job tokens.
 * One HTTP client (pooled keep-alive connections) per environment; `close()` aborts open writers and
 * gates, then closes the connections.
 */
export class ServerShuffleEnvironment implements ShuffleEnvironment {
  readonly shuffleServiceId = SHUFFLE_SERVER_SERVICE_ID;
  private readonly logger: Logger;
  private readonly client: ShuffleServerClient;
  private readonly locator: PartitionLocator;
  private readonly open = new Set<{ close(): Promise<void> }>();
  private closing: Promise<void> | undefined;

  constructor(
    private readonly options: ResolvedShuffleServerClientOptions,
    context: ShuffleEnvironmentContext,
  ) {
    this.logger = (context.logger ?? noopLogger).child({ taskExecutorId: context.taskExecutorId });
    this.client = new ShuffleServerClient(options, this.logger);
    this.locator = new PartitionLocator(options, this.logger);
  }

  async createResultPartitionWriter(request: CreateWriterRequest): Promise<ResultPartitionWriter> {
    this.checkOpen();
    const descriptor = checkServerDescriptor(request?.descriptor);
    const logger = (request.logger ?? this.logger).child({ jobId: descriptor.jobId, partitionId: descriptor.partition.partitionId, attempt: descriptor.producer.attempt });
    const writer: ServerResultPartitionWriter = new ServerResultPartitionWriter({
      descriptor,
      targets: copiesOf(descriptor.details).map((server) => ({
        serverId: server.serverId,
        url: server.url,
        token: descriptor.details.token,
        jobId: descriptor.jobId,
        partitionId: descriptor.partition.partitionId,
        attempt: descriptor.producer.attempt,
      })),
      spares: descriptor.details.spares ?? [],
      onUnreachable: (server) => this.locator.reportUnreachable(server),
      client: this.client,
      options: { ...this.options, producerMemoryBytes: requestedProducerMemoryBytes(this.options.producerMemoryBytes, request.memoryBytes) },
      logger,
      onClosed: () => this.open.delete(writer),
    });
    try {
      await writer.open();
    } catch (error) {
      await writer.close();
      throw error;
    }
    this.open.add(writer);
    return writer;
  }

  async createInputGate(request: CreateInputGateRequest): Promise<InputGate> {
    this.checkOpen();
    if (typeof request !== 'object' || request === null) throw invalidArgument('request', 'expected an object');
    if (!Array.isArray(request.inputs) || request.inputs.length === 0) throw invalidArgument('inputs', 'expected at least one input descriptor');
    const inputs: ShuffleDescriptor[] = request.inputs.map((d, i) => checkServerDescriptor(d, `inputs[${i}]`));
    for (const d of inputs) validateSubpartitionRange(request.subpartitions, d.partition.numberOfSubpartitions);
    const gate: ServerInputGate = new ServerInputGate({
      inputs,
      range: { start: request.subpartitions.start, end: request.subpartitions.end },
      client: this.client,
      locator: this.locator,
      options: { ...this.options, readBufferBytes: requestedReadBufferBytes(this.options.readBufferBytes, request.memoryBytes) },
      logger: request.logger ?? this.logger,
      onClosed: () => this.open.delete(gate),
    });
    this.open.add(gate);
    return gate;
  }

  async releasePartitionsLocally(_partitionIds: readonly ResultPartitionId[]): Promise<void> {
    // nothing is held locally: partitions live on the servers
  }

  close(): Promise<void> {
    this.closing ??= (async () => {
      await Promise.allSettled([...this.open].map((o) => o.close()));
      await Promise.allSettled([this.client.close(), this.locator.close()]);
    })();
    return this.closing;
  }

  [Symbol.asyncDispose](): Promise<void> {
    return this.close();
  }

  private checkOpen(): void {
    if (this.closing !== undefined) throw closedError('shuffle environment');
  }
}
