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
import type { ResolvedRemoteShuffleOptions } from '../config/remote-shuffle-options.js';
import { BLOCK_KIND_DATA } from '../format/block-codec.js';
import { SubpartitionRangeReader } from '../format/subpartition-range-reader.js';
import type { MetadataStore } from '../metadata/metadata-store.js';
import type { BlobReader, BlobStore } from '../storage/blob-store.js';
import { resolveCommitted } from './partition-resolver.js';

export interface RemoteInputGateOptions {
  readonly inputs: readonly ShuffleDescriptor[];
  readonly range: SubpartitionRange;
  readonly meta: MetadataStore;
  readonly blob: BlobStore;
  readonly options: ResolvedRemoteShuffleOptions;
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
 * Reads persisted partitions: input after input, it resolves the committed attempt (waiting while the
 * partition is still being produced), then reads the gate's subpartition range of its data object with
 * ranged reads, and ends each channel with end-of-partition. One batch holds the records of consecutive
 * blocks of one channel; they are views into read buffers, valid until the next read.
 */
export class RemoteInputGate implements InputGate {
  readonly channels: readonly InputChannelInfo[];
  private readonly rangeLength: number;
  private readonly queue: GateBatch[] = [];
  private queueHead = 0;
  private nextInput = 0;
  private current: OpenInput | null = null;
  private failure: ShuffleError | null = null;
  private closed = false;
  private sleeping: { timer: NodeJS.Timeout; wake: () => void } | null = null;
  private reading: Promise<unknown> | null = null;

  constructor(private readonly g: RemoteInputGateOptions) {
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
    const { options, meta, blob } = this.g;
    const commit = await resolveCommitted(descriptor, {
      meta,
      attemptLeaseMs: options.attemptLeaseMs,
      pollMaxMs: options.commitPollMaxMs,
      cancelled: () => this.closed,
      sleep: (ms) => this.sleep(ms),
    });
    const partitionId = descriptor.partition.partitionId;
    const reader = await blob.openReader(commit.objectKey);
    try {
      const range = await SubpartitionRangeReader.open({
        reader,
        location: {
          numberOfSubpartitions: commit.subpartitionBytes.length,
          numberOfRegions: commit.numberOfRegions,
          indexOffset: commit.indexOffset,
          indexLength: commit.indexLength,
        },
        start: this.g.range.start,
        end: this.g.range.end,
        readBufferBytes: options.readBufferBytes,
        partitionId,
      });
      const deframers = Array.from({ length: this.rangeLength }, () => new RecordDeframer(options.maxRecordBytes, partitionId));
      this.current = { index, descriptor, reader, range, deframers };
      if (this.closed) await this.closeCurrent();
    } catch (error) {
      await reader.close();
      throw error;
    }
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

  /** Names the partition in errors that do not: a missing object becomes the partition's NOT_FOUND. */
  private asGateError(error: unknown): ShuffleError {
    const input = this.current?.descriptor ?? this.g.inputs[this.nextInput - 1];
    const partitionId = input?.partition.partitionId ?? 'unknown';
    if (isShuffleError(error)) {
      if (error.code === 'SHF_ERR_PARTITION_NOT_FOUND' && error.context['blobKey'] !== undefined) {
        return partitionNotFound(partitionId, `its data object ${String(error.context['blobKey'])} is gone from ${this.g.blob.description}`, error);
      }
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
