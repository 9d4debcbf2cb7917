import {
  type ApproximateInputLosses,
  type GateBatch,
  type GateItem,
  type InputChannelInfo,
  type InputGate,
  RecordDeframer,
  ShuffleError,
  closedError,
  discardUnavailablePartial,
  gateItems,
} from '@weft/shuffle-api';
import type { ChannelEntry, SubpartitionReader } from './channel-entry.js';

/** One channel of a gate, bound to the reader of its subpartition. */
export interface GateChannel {
  readonly info: InputChannelInfo;
  reader: SubpartitionReader;
  readonly deframer: RecordDeframer;
  ended: boolean;
  /** Cancels the wait for a new producer attempt (an approximate input whose producer went away). */
  cancelRebind?: (() => void) | undefined;
}

/**
 * Binds a channel again once a producer attempt other than `gone` is there (PIPELINED_APPROXIMATE):
 * calls `onBound` with its reader (at once, or at the attempt's registration); returns a cancel function.
 */
export type ChannelRebinder = (info: InputChannelInfo, gone: object | undefined, listener: () => void, onBound: (reader: SubpartitionReader) => void) => () => void;

/** A channel's reader while it waits for a new producer attempt: nothing to read. */
const WAITING_READER: SubpartitionReader = Object.freeze({ hasNext: false, poll: () => undefined, recycle() {}, release() {} });

/**
 * The in-memory input gate: a FIFO of channels with data (Flink's inputChannelsWithData), read one
 * buffer at a time. A data buffer becomes one records batch of views into it; the buffer is recycled
 * (credit returned) when the next batch is read or the gate closes.
 */
export class MemoryInputGate implements InputGate {
  readonly channels: readonly InputChannelInfo[];
  private readonly gateChannels: GateChannel[];
  private readonly available: number[] = [];
  private availableHead = 0;
  private readonly queued: Uint8Array;
  private ended = 0;
  private closed = false;
  private wake: (() => void) | null = null;
  private current: { channel: GateChannel; entry: ChannelEntry } | null = null;
  private failure: ShuffleError | null = null;
  private readonly losses = { channelsUnavailable: 0, partialRecordsDiscarded: 0, partialRecordBytesDiscarded: 0, reconnects: 0 };

  /**
   * `bind` is called once per channel, with the listener its reader must call when it gains data;
   * `rebind` when an approximate input's producer attempt went away (ChannelRebinder).
   */
  constructor(
    infos: readonly InputChannelInfo[],
    maxRecordBytes: number,
    bind: (info: InputChannelInfo, listener: () => void) => SubpartitionReader,
    private readonly rebind?: ChannelRebinder,
  ) {
    this.channels = infos;
    this.queued = new Uint8Array(infos.length);
    this.gateChannels = infos.map((info) => ({
      info,
      reader: undefined as unknown as SubpartitionReader,
      deframer: new RecordDeframer(maxRecordBytes, info.partitionId),
      ended: false,
    }));
    infos.forEach((info, i) => {
      this.gateChannels[i]!.reader = bind(info, () => this.notifyAvailable(i));
      if (this.gateChannels[i]!.reader.hasNext) this.notifyAvailable(i);
    });
  }

  /** What this gate's approximate channels lost when their producer attempts went away (ApproximateInputLosses). */
  get approximateLosses(): ApproximateInputLosses {
    return { ...this.losses };
  }

  async readBatch(): Promise<GateBatch | null> {
    this.recycleCurrent();
    for (;;) {
      if (this.closed) throw closedError('input gate');
      if (this.failure !== null) throw this.failure;
      const index = this.nextAvailable();
      if (index === undefined) {
        if (this.ended === this.gateChannels.length) return null;
        await new Promise<void>((resolve) => (this.wake = resolve));
        continue;
      }
      const channel = this.gateChannels[index]!;
      const entry = channel.reader.poll();
      if (channel.reader.hasNext) this.notifyAvailable(index);
      if (entry === undefined) continue;
      if (entry.kind === 'data') {
        const records: Uint8Array[] = [];
        try {
          channel.deframer.push(entry.segment.subarray(0, entry.length), records);
        } catch (error) {
          channel.reader.recycle(entry);
          throw this.fail(error as ShuffleError);
        }
        if (records.length === 0) {
          channel.reader.recycle(entry);
          continue;
        }
        this.current = { channel, entry };
        return { kind: 'records', channel: index, records };
      }
      if (entry.kind === 'error') throw this.fail(entry.error);
      if (entry.kind === 'unavailable') return this.producerGone(index, channel);
      if (entry.event.type === 'end-of-partition') {
        try {
          channel.deframer.checkComplete();
        } catch (error) {
          throw this.fail(error as ShuffleError);
        }
        channel.ended = true;
        this.ended++;
        channel.reader.release();
      }
      return { kind: 'event', channel: index, event: entry.event };
    }
  }

  [Symbol.asyncIterator](): AsyncIterator<GateItem> {
    return gateItems(this);
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.recycleCurrent();
    for (const channel of this.gateChannels) {
      channel.cancelRebind?.();
      channel.reader.release();
    }
    this.wakeReader();
  }

  [Symbol.asyncDispose](): Promise<void> {
    return this.close();
  }

  /**
   * The channel's producer attempt went away before its end (PIPELINED_APPROXIMATE): drop the partial
   * record held for this channel only, wait for a new attempt (other channels read on), and tell the
   * consumer in band.
   */
  private producerGone(index: number, channel: GateChannel): GateBatch {
    const partialRecordBytes = discardUnavailablePartial(channel.deframer, this.losses);
    const gone = channel.reader.source;
    channel.reader.release();
    channel.reader = WAITING_READER;
    const listener = (): void => this.notifyAvailable(index);
    channel.cancelRebind = this.rebind?.(channel.info, gone, listener, (reader) => {
      channel.cancelRebind = undefined;
      channel.reader = reader;
      this.losses.reconnects++;
      if (reader.hasNext) listener();
    });
    return { kind: 'event', channel: index, event: { type: 'channel-unavailable', partialRecordBytes } };
  }

  private fail(error: ShuffleError): ShuffleError {
    this.failure = error;
    return error;
  }

  private recycleCurrent(): void {
    const current = this.current;
    if (current !== null) {
      this.current = null;
      current.channel.reader.recycle(current.entry);
    }
  }

  private notifyAvailable(index: number): void {
    if (this.queued[index] === 1 || this.gateChannels[index]?.ended !== false) return;
    this.queued[index] = 1;
    this.available.push(index);
    this.wakeReader();
  }

  private nextAvailable(): number | undefined {
    if (this.availableHead >= this.available.length) return undefined;
    const index = this.available[this.availableHead++]!;
    if (this.availableHead > 256 && this.availableHead * 2 > this.available.length) {
      this.available.splice(0, this.availableHead);
      this.availableHead = 0;
    }
    this.queued[index] = 0;
    return index;
  }

  private wakeReader(): void {
    const wake = this.wake;
    if (wake !== null) {
      this.wake = null;
      wake();
    }
  }
}
