import {
  type GateBatch,
  type GateItem,
  type InputChannelInfo,
  type InputGate,
  RecordDeframer,
  type ShuffleDescriptor,
  ShuffleError,
  type SubpartitionRange,
  END_OF_PARTITION,
  closedError,
  decodeEvent,
  gateItems,
  isShuffleError,
} from '@weft/shuffle-api';
import { BLOCK_KIND_DATA } from '../format/block-codec.js';
import type { IndexLocation } from '../format/partition-index.js';
import { type RangeBlock, SubpartitionRangeReader } from '../format/subpartition-range-reader.js';
import type { BlobReader } from '../storage/blob-store.js';

export interface SortMergeGateSettings {
  readonly inputs: readonly ShuffleDescriptor[];
  readonly range: SubpartitionRange;
  /** Size of one read; a SubpartitionRangeReader keeps one more in flight. */
  readonly readBufferBytes: number;
  readonly maxRecordBytes: number;
  readonly onClosed?: () => void;
}

/** Where one input's data object can be read, and where its index lies. */
export interface PartitionSource {
  readonly reader: BlobReader;
  readonly location: IndexLocation;
}

/** Payload bytes of data blocks deframed into one batch (the last block may overshoot it). */
export const DEFRAME_BATCH_BYTES = 64 * 1024;

/** Data blocks of one channel, deframed into a records batch when dequeued. */
interface PendingBlocks {
  readonly kind: 'blocks';
  readonly channel: number;
  readonly deframer: RecordDeframer;
  readonly payloads: Uint8Array[];
  bytes: number;
}

interface OpenInput {
  readonly index: number;
  readonly descriptor: ShuffleDescriptor;
  readonly reader: BlobReader;
  readonly range: SubpartitionRangeReader;
  readonly deframers: RecordDeframer[];
}

/**
 * Reads sort-merge partition data objects, input after input: `openSource` (the subclass) finds where
 * an input's object can be read (waiting while it is still being produced), then a
 * SubpartitionRangeReader reads the gate's subpartition range (CRC32C per block, index entry
 * checksums, LZ4), and each channel ends with end-of-partition. One batch holds the records of
 * consecutive blocks of one channel, up to DEFRAME_BATCH_BYTES of them; they are views into read buffers,
 * valid until the next read. Blocks are deframed when their batch is handed out, not when the read
 * decoded them: a 4 MiB read would otherwise make tens of thousands of record views at once, which live
 * through scavenges while the consumer works through them and end up promoted to the old generation
 * (garbage that only a full GC takes back: RSS far above what the task keeps). Errors name the
 * partition (`describeError` lets a subclass say more).
 */
export abstract class SortMergeInputGate implements InputGate {
  readonly channels: readonly InputChannelInfo[];
  private readonly rangeLength: number;
  private readonly queue: (GateBatch | PendingBlocks)[] = [];
  private queueHead = 0;
  private nextInput = 0;
  private current: OpenInput | null = null;
  private failure: ShuffleError | null = null;
  private isClosed = false;
  private sleeping: { timer: NodeJS.Timeout; wake: () => void } | null = null;
  private reading: Promise<unknown> | null = null;

  constructor(private readonly settings: SortMergeGateSettings) {
    this.rangeLength = settings.range.end - settings.range.start + 1;
    const channels: InputChannelInfo[] = [];
    for (const descriptor of settings.inputs) {
      for (let s = settings.range.start; s <= settings.range.end; s++) {
        channels.push({ channelIndex: channels.length, partitionId: descriptor.partition.partitionId, subpartition: s });
      }
    }
    this.channels = channels;
  }

  /** Opens the input's data object for reading (the gate closes the reader). */
  protected abstract openSource(descriptor: ShuffleDescriptor): Promise<PartitionSource>;

  /** Called once when the gate closes, before it waits for a read in progress: cancel what can be. */
  protected onClose(): void {}

  /** A more precise error for `error` (which names no partition, or names a missing blob), or undefined. */
  protected describeError(error: ShuffleError, partitionId: string): ShuffleError | undefined {
    void error;
    void partitionId;
    return undefined;
  }

  protected get closed(): boolean {
    return this.isClosed;
  }

  async readBatch(): Promise<GateBatch | null> {
    for (;;) {
      if (this.isClosed) throw closedError('input gate');
      if (this.failure !== null) throw this.failure;
      if (this.queueHead < this.queue.length) {
        const item = this.queue[this.queueHead]!;
        this.queue[this.queueHead++] = undefined as unknown as GateBatch;
        if (this.queueHead === this.queue.length) {
          this.queue.length = 0;
          this.queueHead = 0;
        }
        if (item.kind !== 'blocks') return item;
        const records: Uint8Array[] = [];
        try {
          for (const payload of item.payloads) item.deframer.push(payload, records);
        } catch (error) {
          this.failure = this.asGateError(error);
          await this.closeCurrent();
          throw this.failure;
        }
        if (records.length > 0) return { kind: 'records', channel: item.channel, records };
        continue;
      }
      if (this.current === null && this.nextInput >= this.settings.inputs.length) return null;
      const step = this.current === null ? this.openNext() : this.readNext(this.current);
      this.reading = step;
      try {
        await step;
      } catch (error) {
        if (this.isClosed) throw closedError('input gate');
        this.failure = this.asGateError(error);
        await this.closeCurrent();
        throw this.failure;
      } finally {
        this.reading = null;
      }
    }
  }

  [Symbol.asyncIterator](): AsyncIterator<GateItem> {
    return gateItems(this);
  }

  async close(): Promise<void> {
    if (this.isClosed) return;
    this.isClosed = true;
    this.queue.length = 0;
    this.onClose();
    const sleeping = this.sleeping;
    if (sleeping !== null) {
      clearTimeout(sleeping.timer);
      sleeping.wake();
    }
    await this.reading?.catch(() => undefined);
    await this.closeCurrent();
    this.settings.onClosed?.();
  }

  [Symbol.asyncDispose](): Promise<void> {
    return this.close();
  }

  /** Waits `ms`, or less when the gate closes meanwhile. */
  protected sleep(ms: number): Promise<void> {
    return new Promise((resolve) => {
      if (this.isClosed) return resolve();
      const timer = setTimeout(() => {
        this.sleeping = null;
        resolve();
      }, ms);
      this.sleeping = { timer, wake: resolve };
    });
  }

  private async openNext(): Promise<void> {
    const index = this.nextInput++;
    const descriptor = this.settings.inputs[index]!;
    const partitionId = descriptor.partition.partitionId;
    const { reader, location } = await this.openSource(descriptor);
    try {
      const range = await SubpartitionRangeReader.open({
        reader,
        location,
        start: this.settings.range.start,
        end: this.settings.range.end,
        readBufferBytes: this.settings.readBufferBytes,
        partitionId,
      });
      const deframers = Array.from({ length: this.rangeLength }, () => new RecordDeframer(this.settings.maxRecordBytes, partitionId));
      this.current = { index, descriptor, reader, range, deframers };
      if (this.isClosed) await this.closeCurrent();
    } catch (error) {
      await reader.close();
      throw error;
    }
  }

  private async readNext(input: OpenInput): Promise<void> {
    const blocks = await input.range.next();
    const base = input.index * this.rangeLength;
    if (blocks === null) {
      for (let i = 0; i < this.rangeLength; i++) {
        input.deframers[i]!.checkComplete();
        this.queue.push({ kind: 'event', channel: base + i, event: END_OF_PARTITION });
      }
      await this.closeCurrent();
      return;
    }
    this.enqueue(input, blocks, base);
  }

  /** Queues decoded blocks: consecutive data blocks of one channel, up to DEFRAME_BATCH_BYTES, make one batch of records (deframed when dequeued). */
  private enqueue(input: OpenInput, blocks: readonly RangeBlock[], base: number): void {
    const start = this.settings.range.start;
    let pending: PendingBlocks | null = null;
    for (const block of blocks) {
      const local = block.subpartition - start;
      const channel = base + local;
      if (block.kind === BLOCK_KIND_DATA) {
        if (pending === null || pending.channel !== channel || pending.bytes >= DEFRAME_BATCH_BYTES) {
          pending = { kind: 'blocks', channel, deframer: input.deframers[local]!, payloads: [], bytes: 0 };
          this.queue.push(pending);
        }
        pending.payloads.push(block.payload);
        pending.bytes += block.payload.length;
        continue;
      }
      pending = null;
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
  }

  private async closeCurrent(): Promise<void> {
    const current = this.current;
    this.current = null;
    try {
      await current?.reader.close();
    } finally {
      // the consumer is done with the views into its read buffers (next read, or the gate closed)
      await current?.range.release();
    }
  }

  /** Names the partition in errors that do not. */
  private asGateError(error: unknown): ShuffleError {
    const input = this.current?.descriptor ?? this.settings.inputs[this.nextInput - 1];
    const partitionId = input?.partition.partitionId ?? 'unknown';
    if (isShuffleError(error)) {
      const described = this.describeError(error, partitionId);
      if (described !== undefined) return described;
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
