import { type ApproximateInputLosses, discardUnavailablePartial, FifoQueue, FloatingCredits } from '@weft/shuffle-api';
import {
  type GateBatch,
  type GateItem,
  type InputChannelInfo,
  type InputGate,
  type SerializedShuffleError,
  type ShuffleDescriptor,
  ShuffleError,
  closedError,
  decodeEvent,
  deserializeError,
  gateItems,
  invalidArgument,
  isShuffleError,
} from '@weft/shuffle-api';
import { FrameType, encodeFrame, parseJsonTail } from '../wire/frames.js';
import { ATTEMPT_GONE_CODES, Channel, type ChannelEntry, type GateInput } from './gate-channel.js';
import { PeerSocket } from './peer-socket.js';
import type { LocalSocket } from '../wire/local-socket.js';
import type { ReadSlab } from './read-slabs.js';

export type { GateInput } from './gate-channel.js';

export interface NetworkInputGateOptions {
  readonly jobId: string;
  readonly channels: readonly InputChannelInfo[];
  readonly inputs: readonly GateInput[];
  readonly buffersPerChannel: number;
  readonly floatingBuffersPerGate: number;
  readonly maxRecordBytes: number;
  readonly connectTimeoutMs: number;
  /** How long an approximate channel waits for a new producer attempt (`updatePartitionInfo`) after its producer went away. */
  readonly reconnectTimeoutMs: number;
  /** Checks a descriptor given to `updatePartitionInfo` (SHF_ERR_INVALID_ARGUMENT) and reads where its producer is. */
  readonly readProducer: (descriptor: unknown) => { partitionId: string; producerId: string; host: string; port: number };
  readonly maxFrameBytes: number;
  readonly onClose?: () => void;
  /** Per channel, the record its first request asks an approximate producer to resume from (CreateInputGateRequest.resumeFrom). */
  readonly resumeFrom?: readonly (number | undefined)[];
  /** An in-process connection to the producer at `host:port` when that is this process's own environment; undefined: TCP. */
  readonly connectLocal?: (host: string, port: number) => LocalSocket | undefined;
}

/**
 * The consumer side of the network shuffle: one TCP connection per producer address (an in-process one
 * to its own environment's producers, `connectLocal`), a partition request
 * per input, and data buffers received only against credit. A data buffer becomes one records batch of
 * views into the received bytes; it is recycled (its credit announced again, or its floating buffer
 * returned to the gate) when the next batch is read or the gate closes.
 */
export class NetworkInputGate implements InputGate {
  readonly channels: readonly InputChannelInfo[];
  readonly jobId: string;
  private readonly gateChannels: Channel[];
  /** Open connections, by producer address `host:port`. */
  private readonly peers = new Map<string, PeerSocket>();
  private readonly losses = { channelsUnavailable: 0, partialRecordsDiscarded: 0, partialRecordBytesDiscarded: 0, reconnects: 0 };
  private readonly floating: FloatingCredits;
  private readonly exclusive: number;
  private readonly available = new FifoQueue<number>();
  private readonly queued: Uint8Array;
  private endedCount = 0;
  private closed = false;
  private failure: ShuffleError | null = null;
  private wake: (() => void) | null = null;
  private current: { channel: Channel; slab: ReadSlab | undefined; peer: PeerSocket } | null = null;

  constructor(private readonly options: NetworkInputGateOptions) {
    this.channels = options.channels;
    this.jobId = options.jobId;
    this.exclusive = options.buffersPerChannel;
    this.floating = new FloatingCredits(options.floatingBuffersPerGate);
    this.queued = new Uint8Array(options.channels.length);
    this.gateChannels = options.channels.map((info, i) => new Channel(i, info, (channel) => this.grantFloating(channel), options.maxRecordBytes));
    const byAddress = new Map<string, GateInput[]>();
    for (const input of options.inputs) {
      const key = `${input.host}:${input.port}`;
      byAddress.set(key, [...(byAddress.get(key) ?? []), input]);
    }
    for (const inputs of byAddress.values()) {
      const peer = this.peerFor(inputs[0]!);
      for (const input of inputs) {
        for (let s = input.start; s <= input.end; s++) {
          const channel = this.gateChannels[input.firstChannel + s - input.start]!;
          channel.peer = peer;
          channel.input = input;
        }
        this.request(peer, input, input.firstChannel, input.start, input.end, options.resumeFrom?.slice(input.firstChannel, input.firstChannel + input.end - input.start + 1));
      }
    }
  }

  /** What this gate's approximate channels lost when their producers went away (ApproximateInputLosses). */
  get approximateLosses(): ApproximateInputLosses {
    return { ...this.losses };
  }

  /**
   * A new attempt of the producer of an approximate input (InputGate.updatePartitionInfo): its channels
   * that lost their producer connect to it; the others will once they lose the old one.
   */
  updatePartitionInfo(descriptor: ShuffleDescriptor): void {
    if (this.closed) throw closedError('input gate');
    const producer = this.options.readProducer(descriptor);
    const channels = this.gateChannels.filter((c) => c.info.partitionId === producer.partitionId);
    if (channels.length === 0) throw invalidArgument('descriptor.partition.partitionId', `partition ${producer.partitionId} is not an input of this gate`);
    if (!channels[0]!.input.approximate) {
      throw invalidArgument('descriptor.partition.partitionType', `input partition ${producer.partitionId} is not PIPELINED_APPROXIMATE: a new attempt of its producer is read by a new gate`);
    }
    for (const channel of channels) {
      if (channel.ended) continue;
      const current = channel.pending ?? channel.input;
      if (current.producerId === producer.producerId) continue;
      const input: GateInput = { ...current, host: producer.host, port: producer.port, producerId: producer.producerId };
      clearTimeout(channel.deadline);
      channel.deadline = undefined;
      // the old attempt's 'unavailable' entry was read already: connect now; else once it is
      if (channel.waiting) this.reconnect(channel, input);
      else channel.pending = input;
    }
  }

  async readBatch(): Promise<GateBatch | null> {
    this.recycleCurrent();
    for (;;) {
      if (this.closed) throw closedError('input gate');
      if (this.failure !== null) throw this.failure;
      const index = this.nextAvailable();
      if (index === undefined) {
        if (this.endedCount === this.gateChannels.length) return null;
        await new Promise<void>((resolve) => (this.wake = resolve));
        continue;
      }
      const channel = this.gateChannels[index]!;
      const entry = channel.queue.shift();
      if (channel.queue.size > 0) this.notifyAvailable(index);
      if (entry === undefined) continue;
      if (entry.kind === 'data') {
        const records: Uint8Array[] = [];
        try {
          channel.deframer.push(entry.bytes, records);
        } catch (error) {
          this.recycle(channel, entry.slab, entry.peer);
          throw this.fail(error as ShuffleError);
        }
        if (records.length === 0) {
          this.recycle(channel, entry.slab, entry.peer);
          continue;
        }
        this.current = { channel, slab: entry.slab, peer: entry.peer };
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
        this.endedCount++;
        this.returnFloating(channel);
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
    this.current = null;
    for (const peer of this.peers.values()) peer.destroy();
    this.peers.clear();
    for (const channel of this.gateChannels) {
      clearTimeout(channel.deadline);
      channel.queue.drain();
    }
    this.wakeReader();
    this.options.onClose?.();
  }

  [Symbol.asyncDispose](): Promise<void> {
    return this.close();
  }

  /** A floating buffer freed up for a channel that waited for one: announce it. */
  grantFloating(channel: Channel): void {
    // a channel queued while it had a backlog may need nothing by now: the buffer goes to the next one waiting
    if (this.closed || channel.terminal || !this.needsFloating(channel)) {
      this.floating.release();
      return;
    }
    channel.floatingHeld++;
    channel.peer.write(encodeFrame(FrameType.ADD_CREDIT, [channel.index, 1, 0]));
    this.requestFloating(channel);
  }

  private onFrame(peer: PeerSocket, type: number, body: Buffer): void {
    if (this.closed) return;
    const channel = this.gateChannels[body.readUInt32LE(0)];
    if (channel === undefined || channel.terminal) throw new ShuffleError('SHF_ERR_DATA_CORRUPTED', `a frame for channel ${body.readUInt32LE(0)}, which this gate does not expect`);
    switch (type) {
      case FrameType.BUFFER:
        channel.holding++;
        channel.backlog = body.readUInt32LE(4);
        // a plain Uint8Array view: records cut from it are Uint8Array views too, cheaper to make than Buffer slices
        this.push(channel, { kind: 'data', bytes: new Uint8Array(body.buffer, body.byteOffset + 8, body.length - 8), slab: peer.holdBuffer(body), peer });
        this.requestFloating(channel);
        return;
      case FrameType.EVENT: {
        const event = decodeEvent(body.subarray(4));
        if (event.type === 'end-of-partition') channel.terminal = true;
        this.push(channel, { kind: 'event', event });
        return;
      }
      case FrameType.ERROR: {
        const error = deserializeError(parseJsonTail(body, 4) as SerializedShuffleError);
        if (channel.input.approximate && isShuffleError(error) && ATTEMPT_GONE_CODES.has(error.code)) {
          this.attemptGone(channel);
          return;
        }
        channel.terminal = true;
        this.push(channel, {
          kind: 'error',
          error: isShuffleError(error)
            ? error
            : new ShuffleError('SHF_ERR_STORAGE_UNAVAILABLE', `the producer of partition ${channel.info.partitionId} answered: ${error.message}`, { cause: error, context: { partitionId: channel.info.partitionId } }),
        });
        return;
      }
      default:
        throw new ShuffleError('SHF_ERR_DATA_CORRUPTED', `unknown network shuffle frame type ${type} from a producer`);
    }
  }

  /** The connection to a producer is gone: each of its channels that had not ended fails, after what it received. */
  private onLost(peer: PeerSocket, cause: Error, opened: boolean): void {
    if (this.peers.get(peer.address) === peer) this.peers.delete(peer.address);
    if (this.closed) return;
    for (const channel of this.gateChannels) {
      if (channel.peer !== peer || channel.terminal) continue;
      if (channel.input.approximate && !isShuffleError(cause, 'SHF_ERR_DATA_CORRUPTED')) {
        this.attemptGone(channel);
        continue;
      }
      channel.terminal = true;
      const partitionId = channel.info.partitionId;
      const what = opened ? 'was lost before the channel ended' : 'could not be opened';
      const error = isShuffleError(cause, 'SHF_ERR_DATA_CORRUPTED')
        ? new ShuffleError('SHF_ERR_DATA_CORRUPTED', `the producer of partition ${partitionId} at ${peer.address} sent a malformed frame: ${cause.message}`, { cause, context: { partitionId, address: peer.address } })
        : new ShuffleError('SHF_ERR_CONNECTION_LOST', `the connection to the producer of partition ${partitionId} at ${peer.address} ${what}: ${cause.message}`, {
            cause,
            retryable: true,
            context: { partitionId, address: peer.address },
          });
      this.push(channel, { kind: 'error', error });
    }
  }

  /** The connection to `input`'s producer (one per address, opened on first use and again after it was lost). */
  private peerFor(input: GateInput): PeerSocket {
    const address = `${input.host}:${input.port}`;
    let peer = this.peers.get(address);
    if (peer === undefined) {
      const opened: PeerSocket = new PeerSocket({
        host: input.host,
        port: input.port,
        connectTimeoutMs: this.options.connectTimeoutMs,
        maxFrameBytes: this.options.maxFrameBytes,
        onFrame: (type, body) => this.onFrame(opened, type, body),
        onLost: (cause, wasOpen) => this.onLost(opened, cause, wasOpen),
        local: this.options.connectLocal?.(input.host, input.port),
      });
      this.peers.set(address, (peer = opened));
    }
    return peer;
  }

  /**
   * Asks `input`'s producer for subpartitions [start, end] as channels from `firstChannel` on, with the
   * exclusive credit each (`resumeFrom`: per subpartition, the record an approximate one resumes from).
   */
  private request(peer: PeerSocket, input: GateInput, firstChannel: number, start: number, end: number, resumeFrom?: readonly (number | undefined)[]): void {
    const request = JSON.stringify({ jobId: input.jobId, partitionId: input.partitionId, producerId: input.producerId, ...(resumeFrom === undefined ? {} : { resumeFrom }) });
    peer.write(encodeFrame(FrameType.PARTITION_REQUEST, [firstChannel, start, end, this.exclusive], request));
  }

  /**
   * An approximate channel's producer attempt went away: nothing more comes from it; the consumer learns in
   * band, after what had arrived. Unless a new attempt was named already, the wait for one starts.
   */
  private attemptGone(channel: Channel): void {
    channel.terminal = true;
    this.push(channel, { kind: 'unavailable' });
    if (channel.pending !== undefined || channel.deadline !== undefined) return;
    const { reconnectTimeoutMs } = this.options;
    channel.deadline = setTimeout(() => {
      channel.deadline = undefined;
      const partitionId = channel.info.partitionId;
      this.fail(
        new ShuffleError('SHF_ERR_TIMEOUT', `the producer of partition ${partitionId} (subpartition ${channel.info.subpartition}) went away and no new attempt of it was named within reconnectTimeoutMs (${reconnectTimeoutMs} ms)`, {
          retryable: true,
          context: { partitionId, subpartition: channel.info.subpartition, setting: 'reconnectTimeoutMs' },
        }),
      );
      this.wakeReader();
    }, reconnectTimeoutMs);
  }

  /**
   * The consumer read an approximate channel's 'unavailable' entry: drop the partial record held for this
   * channel only, give its floating buffers back, and read the new attempt if one was named (else wait).
   */
  private producerGone(index: number, channel: Channel): GateBatch {
    const partialRecordBytes = discardUnavailablePartial(channel.deframer, this.losses);
    this.returnFloating(channel);
    channel.backlog = 0;
    const pending = channel.pending;
    channel.pending = undefined;
    if (pending !== undefined) this.reconnect(channel, pending);
    else channel.waiting = true;
    return { kind: 'event', channel: index, event: { type: 'channel-unavailable', partialRecordBytes } };
  }

  /** Reads `input` (a new producer attempt) on an approximate channel that holds no buffer of the old one. */
  private reconnect(channel: Channel, input: GateInput): void {
    const peer = this.peerFor(input);
    channel.waiting = false;
    channel.terminal = false;
    channel.peer = peer;
    channel.input = input;
    this.losses.reconnects++;
    this.request(peer, input, channel.index, channel.info.subpartition, channel.info.subpartition);
  }

  private push(channel: Channel, entry: ChannelEntry): void {
    channel.queue.push(entry);
    this.notifyAvailable(channel.index);
  }

  /** Borrows floating buffers while the channel has fewer free buffers than its backlog plus its exclusive ones. */
  private requestFloating(channel: Channel): void {
    let granted = 0;
    while (this.needsFloating(channel) && this.floating.request(channel)) {
      channel.floatingHeld++;
      granted++;
    }
    if (granted > 0) channel.peer.write(encodeFrame(FrameType.ADD_CREDIT, [channel.index, granted, 0]));
  }

  /** Flink's rule: a channel wants as many free buffers as its producer's backlog plus its exclusive buffers. */
  private needsFloating(channel: Channel): boolean {
    return this.exclusive + channel.floatingHeld - channel.holding < channel.backlog + this.exclusive;
  }

  /** The consumer is done with one data buffer of `channel`: announce it again, or give a surplus floating buffer back. */
  private recycle(channel: Channel, slab: ReadSlab | undefined, peer: PeerSocket): void {
    if (slab !== undefined) peer.releaseBuffer(slab);
    channel.holding--;
    if (channel.terminal) {
      if (channel.ended) this.returnFloating(channel);
      return;
    }
    const free = this.exclusive + channel.floatingHeld - channel.holding;
    if (free >= channel.backlog + this.exclusive) this.floating.withdraw(channel);
    if (channel.floatingHeld > 0 && free > channel.backlog + this.exclusive) {
      channel.floatingHeld--;
      this.floating.release();
      channel.peer.write(encodeFrame(FrameType.ADD_CREDIT, [channel.index, 0, 1]));
      return;
    }
    channel.peer.write(encodeFrame(FrameType.ADD_CREDIT, [channel.index, 1, 1]));
  }

  private returnFloating(channel: Channel): void {
    this.floating.withdraw(channel);
    for (; channel.floatingHeld > 0; channel.floatingHeld--) this.floating.release();
  }

  private recycleCurrent(): void {
    const current = this.current;
    if (current !== null) {
      this.current = null;
      this.recycle(current.channel, current.slab, current.peer);
    }
  }

  private fail(error: ShuffleError): ShuffleError {
    this.failure = error;
    return error;
  }

  private notifyAvailable(index: number): void {
    if (this.queued[index] === 1 || this.gateChannels[index]!.ended) return;
    this.queued[index] = 1;
    this.available.push(index);
    this.wakeReader();
  }

  private nextAvailable(): number | undefined {
    const index = this.available.shift();
    if (index !== undefined) this.queued[index] = 0;
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
