import {
  type GateBatch,
  type GateItem,
  type InputChannelInfo,
  type InputGate,
  type Logger,
  RecordDeframer,
  type ShuffleDescriptor,
  ShuffleError,
  type SubpartitionRange,
  END_OF_PARTITION,
  closedError,
  decodeEvent,
  isShuffleError,
  partitionNotFound,
} from '@weft/shuffle-api';
import { BLOCK_KIND_DATA } from '../format/block-codec.js';
import type { IndexLocation } from '../format/partition-index.js';
import { SubpartitionRangeReader } from '../format/subpartition-range-reader.js';
import { WireError } from '../protocol/wire-errors.js';
import type { BlobReader } from '../storage/blob-store.js';
import type { ResolvedShuffleServerClientOptions } from './client-options.js';
import { FetchedRangeReader } from './fetched-range-reader.js';
import type { PartitionLocator } from './partition-locator.js';
import type { ServerPartitionDetails } from './server-descriptor.js';
import type { ShuffleServerClient } from './shuffle-server-client.js';

export interface ServerInputGateOptions {
  readonly inputs: readonly ShuffleDescriptor[];
  readonly range: SubpartitionRange;
  readonly client: ShuffleServerClient;
  readonly locator: PartitionLocator;
  readonly options: ResolvedShuffleServerClientOptions;
  readonly logger: Logger;
  readonly onClosed?: () => void;
}

interface OpenInput {
  readonly index: number;
  readonly descriptor: ShuffleDescriptor;
  readonly reader: BlobReader;
  readonly range: SubpartitionRangeReader;
  readonly deframers: RecordDeframer[];
}

/**
 * Reads partitions from shuffle servers, input after input: one streamed fetch of the gate's subpartition
 * range per input, decoded by a SubpartitionRangeReader (CRC32C per block, index entry checksums, LZ4),
 * each channel ending with end-of-partition. When the descriptor's server cannot serve the partition, the
 * locator decides: a server that moved is asked at its new URL; a vanished server's (expired heartbeat)
 * partition is read from the S3 tier when it has a copy there, and is SHF_ERR_PARTITION_NOT_FOUND when it
 * does not. Batches are views into received chunks, valid until the next read.
 */
export class ServerInputGate implements InputGate {
  readonly channels: readonly InputChannelInfo[];
  private readonly rangeLength: number;
  private readonly queue: GateBatch[] = [];
  private queueHead = 0;
  private nextInput = 0;
  private current: OpenInput | null = null;
  private failure: ShuffleError | null = null;
  private closed = false;
  private reading: Promise<unknown> | null = null;
  /** Cancels the fetch being opened (and a wait for a commit) when the gate closes. */
  private opening: AbortController | null = null;
  private sleeping: { timer: NodeJS.Timeout; wake: () => void } | null = null;

  constructor(private readonly g: ServerInputGateOptions) {
    this.rangeLength = g.range.end - g.range.start + 1;
    const channels: InputChannelInfo[] = [];
    for (const descriptor of g.inputs) {
      for (let s = g.range.start; s <= g.range.end; s++) {
        channels.push({ channelIndex: channels.length, partitionId: descriptor.partition.partitionId, subpartition: s });
      }
    }
    this.channels = channels;
  }

  async readBatch(): Promise<GateBatch | null> {
    for (;;) {
      if (this.closed) throw closedError('input gate');
      if (this.failure !== null) throw this.failure;
      if (this.queueHead < this.queue.length) {
        const batch = this.queue[this.queueHead++]!;
        if (this.queueHead === this.queue.length) {
          this.queue.length = 0;
          this.queueHead = 0;
        }
        return batch;
      }
      if (this.current === null && this.nextInput >= this.g.inputs.length) return null;
      const step = this.current === null ? this.openNext() : this.readNext(this.current);
      this.reading = step;
      try {
        await step;
      } catch (error) {
        if (this.closed) throw closedError('input gate');
        this.failure = this.asGateError(error);
        await this.closeCurrent();
        throw this.failure;
      } finally {
        this.reading = null;
      }
    }
  }

  async *[Symbol.asyncIterator](): AsyncIterator<GateItem> {
    for (let batch = await this.readBatch(); batch !== null; batch = await this.readBatch()) {
      if (batch.kind === 'event') {
        yield batch;
        continue;
      }
      for (const record of batch.records) yield { kind: 'record', channel: batch.channel, record };
    }
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.queue.length = 0;
    this.opening?.abort();
    const sleeping = this.sleeping;
    if (sleeping !== null) {
      clearTimeout(sleeping.timer);
      sleeping.wake();
    }
    await this.reading?.catch(() => undefined);
    await this.closeCurrent();
    this.g.onClosed?.();
  }

  [Symbol.asyncDispose](): Promise<void> {
    return this.close();
  }

  private async openNext(): Promise<void> {
    const index = this.nextInput++;
    const descriptor = this.g.inputs[index]!;
    const partitionId = descriptor.partition.partitionId;
    const { reader, location } = await this.openSource(descriptor);
    try {
      const range = await SubpartitionRangeReader.open({
        reader,
        location,
        start: this.g.range.start,
        end: this.g.range.end,
        readBufferBytes: this.g.options.readBufferBytes,
        partitionId,
      });
      const deframers = Array.from({ length: this.rangeLength }, () => new RecordDeframer(this.g.options.maxRecordBytes, partitionId));
      this.current = { index, descriptor, reader, range, deframers };
      if (this.closed) await this.closeCurrent();
    } catch (error) {
      await reader.close();
      throw error;
    }
  }

  /** Opens the partition where it can be read: its server, the server's new URL, or the S3 tier. */
  private async openSource(descriptor: ShuffleDescriptor): Promise<{ reader: BlobReader; location: IndexLocation }> {
    const details = descriptor.details as unknown as ServerPartitionDetails;
    const { jobId } = descriptor;
    const { partitionId } = descriptor.partition;
    const locator = this.g.locator;
    try {
      return await this.fetchWhenCommitted(details.url, descriptor);
    } catch (error) {
      if (!isShuffleError(error) || this.closed) throw error;
      const unreachable = error.context['unreachable'] === true || (error.retryable && error.code !== 'SHF_ERR_TIMEOUT');
      const notFound = error.code === 'SHF_ERR_PARTITION_NOT_FOUND';
      if (!locator.hasRegistry || (!unreachable && !notFound)) throw error;
      if (unreachable) {
        const live = await locator.liveServer(details.serverId);
        if (live !== undefined) {
          if (live.url === details.url) throw error; // alive but not answering: retryable, not lost
          return this.fetchWhenCommitted(live.url, descriptor);
        }
      }
      const record = await locator.commitOf(jobId, partitionId);
      const tierReader = record === undefined ? undefined : await locator.openTierCopy(record);
      if (record !== undefined && tierReader !== undefined) {
        this.g.logger.info({ partitionId, serverId: details.serverId }, 'reading a partition from the S3 tier: its server cannot serve it');
        return {
          reader: tierReader,
          location: {
            numberOfSubpartitions: record.numberOfSubpartitions,
            numberOfRegions: record.numberOfRegions,
            indexOffset: record.indexOffset,
            indexLength: record.indexLength,
          },
        };
      }
      if (notFound) throw error;
      throw partitionNotFound(partitionId, `its shuffle server ${details.serverId} is gone (no heartbeat) and it has no copy in an S3 tier`, error);
    }
  }

  /** Fetches, waiting (with growing pauses) while the server says the producer is still writing. */
  private async fetchWhenCommitted(url: string, descriptor: ShuffleDescriptor): Promise<{ reader: BlobReader; location: IndexLocation }> {
    let delay = 5;
    for (;;) {
      try {
        return await this.fetchFrom(url, descriptor);
      } catch (error) {
        if (this.closed || !isShuffleError(error) || error.context['wire'] !== WireError.PARTITION_PENDING.wire) throw error;
      }
      await this.sleep(delay);
      delay = Math.min(delay * 2, this.g.options.commitPollMaxMs);
    }
  }

  private sleep(ms: number): Promise<void> {
    return new Promise((resolve) => {
      if (this.closed) return resolve();
      const timer = setTimeout(() => {
        this.sleeping = null;
        resolve();
      }, ms);
      this.sleeping = { timer, wake: resolve };
    });
  }

  private async fetchFrom(url: string, descriptor: ShuffleDescriptor): Promise<{ reader: BlobReader; location: IndexLocation }> {
    const details = descriptor.details as unknown as ServerPartitionDetails;
    const { start, end } = this.g.range;
    const partitionId = descriptor.partition.partitionId;
    if (this.closed) throw closedError('input gate');
    const opening = new AbortController();
    this.opening = opening;
    let response;
    try {
      response = await this.g.client.fetch({ url, token: details.token, jobId: descriptor.jobId, partitionId, start, end, signal: opening.signal });
    } finally {
      this.opening = null;
    }
    // once the response started, the reader owns the body; errors after its destruction are expected
    response.body.on('error', () => undefined);
    if (response.location.numberOfSubpartitions !== descriptor.partition.numberOfSubpartitions) {
      response.body.destroy();
      throw new ShuffleError('SHF_ERR_DATA_CORRUPTED', `partition ${partitionId} on ${url} has ${response.location.numberOfSubpartitions} subpartitions, its descriptor ${descriptor.partition.numberOfSubpartitions}`, {
        context: { partitionId },
      });
    }
    return { reader: new FetchedRangeReader({ body: response.body, location: response.location, start, end, partitionId }), location: response.location };
  }

  private async readNext(input: OpenInput): Promise<void> {
    const blocks = await input.range.next();
    const base = input.index * this.rangeLength;
    const start = this.g.range.start;
    if (blocks === null) {
      for (let i = 0; i < this.rangeLength; i++) {
        input.deframers[i]!.checkComplete();
        this.queue.push({ kind: 'event', channel: base + i, event: END_OF_PARTITION });
      }
      await this.closeCurrent();
      return;
    }
    let records: Uint8Array[] | null = null;
    let recordsChannel = -1;
    for (const block of blocks) {
      const local = block.subpartition - start;
      const channel = base + local;
      if (block.kind === BLOCK_KIND_DATA) {
        if (records === null || recordsChannel !== channel) {
          if (records !== null && records.length > 0) this.queue.push({ kind: 'records', channel: recordsChannel, records });
          records = [];
          recordsChannel = channel;
        }
        input.deframers[local]!.push(block.payload, records);
        continue;
      }
      if (records !== null && records.length > 0) this.queue.push({ kind: 'records', channel: recordsChannel, records });
      records = null;
      let event;
      try {
        event = decodeEvent(block.payload);
      } catch (error) {
        throw new ShuffleError('SHF_ERR_DATA_CORRUPTED', `partition ${input.descriptor.partition.partitionId}: ${(error as Error).message}`, {
          cause: error,
          context: { partitionId: input.descriptor.partition.partitionId, subpartition: block.subpartition },
        });
      }
      this.queue.push({ kind: 'event', channel, event });
    }
    if (records !== null && records.length > 0) this.queue.push({ kind: 'records', channel: recordsChannel, records });
  }

  private async closeCurrent(): Promise<void> {
    const current = this.current;
    this.current = null;
    await current?.reader.close();
  }

  /** Names the partition in errors that do not. */
  private asGateError(error: unknown): ShuffleError {
    const input = this.current?.descriptor ?? this.g.inputs[this.nextInput - 1];
    const partitionId = input?.partition.partitionId ?? 'unknown';
    if (isShuffleError(error)) {
      if (error.context['partitionId'] === undefined && error.code !== 'SHF_ERR_CLOSED') {
        return new ShuffleError(error.code, `partition ${partitionId}: ${error.message}`, {
          cause: error,
          retryable: error.retryable,
          context: { ...error.context, partitionId },
        });
      }
      return error;
    }
    return new ShuffleError('SHF_ERR_STORAGE_UNAVAILABLE', `reading partition ${partitionId} failed: ${(error as Error)?.message ?? String(error)}`, {
      cause: error,
      context: { partitionId },
    });
  }
}
