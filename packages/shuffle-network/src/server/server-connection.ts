import { type Logger, encodeEvent, partitionNotFound, serializeError, ShuffleError } from '@weft/shuffle-api';
import { FrameDecoder, FrameType, encodeBufferHeader, encodeFrame, parseJsonTail } from '../wire/frames.js';
import type { ConnectionSocket } from '../wire/local-socket.js';
import type { BufferPool } from './buffer-pool.js';
import type { ProducedPartitionRegistry } from './produced-partition-registry.js';
import type { ProducedSubpartition, SubpartitionEntry, SubpartitionView } from './produced-subpartition.js';

/** Answers a master's control request (register, release); rejects with the error to send back. */
export type ControlHandler = (request: unknown) => Promise<void>;

interface Channel {
  readonly view: ChannelView;
  readonly subpartition: ProducedSubpartition;
}

/** One consumer channel on this connection: credit the consumer announced, and the socket to write to. */
class ChannelView implements SubpartitionView {
  credit: number;
  /** Data buffers sent that the consumer has not yet reported consumed: slots of the pool they hold. */
  unacknowledged = 0;

  constructor(
    private readonly connection: ServerConnection,
    private readonly channel: number,
    private readonly pool: BufferPool,
    credit: number,
  ) {
    this.credit = credit;
  }

  transmit(entry: SubpartitionEntry, backlog: number): void {
    if (entry.kind === 'data') this.unacknowledged++;
    else if (entry.kind === 'error' || entry.event.type === 'end-of-partition') this.releaseSlots();
    this.connection.transmit(this.channel, this.pool, entry, backlog);
  }

  acknowledge(consumed: number): void {
    const n = Math.min(consumed, this.unacknowledged);
    this.unacknowledged -= n;
    this.pool.releaseSlots(n);
  }

  /** The channel is over (ended, failed, cancelled, disconnected): what the consumer still held no longer counts. */
  releaseSlots(): void {
    this.pool.releaseSlots(this.unacknowledged);
    this.unacknowledged = 0;
  }
}

/**
 * The producer's end of one TCP connection (Flink's PartitionRequestQueue, per connection): consumers'
 * partition requests subscribe views to subpartitions; a view sends a data buffer per credit the
 * consumer announced, with the subpartition's remaining backlog; events and errors go in band. A master's
 * control requests arrive on connections of their own, through the same server.
 */
export class ServerConnection {
  private readonly channels = new Map<number, Channel>();
  private readonly decoder: FrameDecoder;
  private closed = false;
  private corked = false;

  constructor(
    private readonly socket: ConnectionSocket,
    private readonly registry: ProducedPartitionRegistry,
    private readonly control: ControlHandler,
    private readonly logger: Logger,
    maxFrameBytes: number,
  ) {
    this.decoder = new FrameDecoder(maxFrameBytes, (type, body) => this.onFrame(type, body));
    socket.setNoDelay(true);
    // a consumer whose host died says nothing: keep-alive probes find out (PIPELINED_APPROXIMATE then detaches its views)
    socket.setKeepAlive(true, 10_000);
    socket.on('data', (chunk: Buffer) => {
      try {
        this.decoder.push(chunk);
      } catch (error) {
        this.logger.warn({ remote: socket.remoteAddress, error: (error as Error).message }, 'protocol error from a peer; connection dropped');
        socket.destroy();
      }
    });
    socket.on('error', () => {});
    socket.on('close', () => this.onClose());
  }

  transmit(channel: number, pool: BufferPool, entry: SubpartitionEntry, backlog: number): void {
    const socket = this.socket;
    if (entry.kind === 'data') {
      const { segment, length } = entry;
      if (this.closed) {
        pool.returnSegment(segment);
        return;
      }
      this.cork();
      socket.write(encodeBufferHeader(channel, backlog, length));
      socket.write(segment.subarray(0, length), () => pool.returnSegment(segment));
      return;
    }
    if (entry.kind === 'error' || entry.event.type === 'end-of-partition') this.channels.delete(channel);
    if (this.closed) return;
    this.cork();
    if (entry.kind === 'event') socket.write(encodeFrame(FrameType.EVENT, [channel], encodeEvent(entry.event)));
    else socket.write(encodeFrame(FrameType.ERROR, [channel], JSON.stringify(serializeError(entry.error))));
  }

  /** Frames written in the same tick leave together, in one system call. */
  private cork(): void {
    if (this.corked) return;
    this.corked = true;
    this.socket.cork();
    process.nextTick(this.uncork);
  }

  private readonly uncork = (): void => {
    this.corked = false;
    this.socket.uncork();
  };

  private onFrame(type: number, body: Buffer): void {
    switch (type) {
      case FrameType.PARTITION_REQUEST:
        this.onPartitionRequest(body);
        return;
      case FrameType.ADD_CREDIT: {
        const channel = this.channels.get(body.readUInt32LE(0));
        if (channel === undefined) return;
        channel.view.acknowledge(body.readUInt32LE(8));
        channel.view.credit += body.readUInt32LE(4);
        channel.subpartition.send();
        return;
      }
      case FrameType.CANCEL: {
        const id = body.readUInt32LE(0);
        const channel = this.channels.get(id);
        this.channels.delete(id);
        if (channel === undefined) return;
        channel.view.releaseSlots();
        channel.subpartition.viewGone(channel.view);
        return;
      }
      case FrameType.CONTROL_REQUEST:
        this.onControlRequest(body.readUInt32LE(0), parseJsonTail(body, 4));
        return;
      default:
        throw new ShuffleError('SHF_ERR_DATA_CORRUPTED', `unknown network shuffle frame type ${type}`);
    }
  }

  private onPartitionRequest(body: Buffer): void {
    const firstChannel = body.readUInt32LE(0);
    const start = body.readUInt32LE(4);
    const end = body.readUInt32LE(8);
    const credit = body.readUInt32LE(12);
    const request = parseJsonTail(body, 16) as { jobId?: unknown; partitionId?: unknown; producerId?: unknown; resumeFrom?: unknown };
    const { jobId, partitionId, producerId } = request;
    // per requested subpartition, the record a restarted consumer's state read up to (approximate partitions)
    const resumeFrom = Array.isArray(request.resumeFrom) ? request.resumeFrom : [];
    if (typeof jobId !== 'string' || typeof partitionId !== 'string' || typeof producerId !== 'string') {
      throw new ShuffleError('SHF_ERR_DATA_CORRUPTED', 'partition request without jobId, partitionId and producerId');
    }
    let partition;
    try {
      partition = this.registry.find(jobId, partitionId, producerId);
    } catch (error) {
      for (let s = start; s <= end; s++) this.sendError(firstChannel + (s - start), error);
      return;
    }
    for (let s = start; s <= end; s++) {
      const id = firstChannel + (s - start);
      if (s >= partition.numberOfSubpartitions) {
        this.sendError(id, partitionNotFound(partitionId, `it has no subpartition ${s}`));
        continue;
      }
      const subpartition = partition.subpartition(s);
      const view = new ChannelView(this, id, partition.pool, credit);
      this.channels.set(id, { view, subpartition });
      const position: unknown = resumeFrom[s - start];
      if (!subpartition.subscribe(view, typeof position === 'number' && Number.isSafeInteger(position) && position >= 0 ? position : undefined)) {
        this.channels.delete(id);
        this.sendError(id, partitionNotFound(partitionId, `subpartition ${s} of this pipelined partition was already consumed or released`));
      }
    }
  }

  private onControlRequest(requestId: number, request: unknown): void {
    this.control(request).then(
      () => this.respond(requestId, { ok: true }),
      (error: unknown) => this.respond(requestId, { error: serializeError(error) }),
    );
  }

  private respond(requestId: number, answer: object): void {
    if (!this.closed) this.socket.write(encodeFrame(FrameType.CONTROL_RESPONSE, [requestId], JSON.stringify(answer)));
  }

  private sendError(channel: number, error: unknown): void {
    if (!this.closed) this.socket.write(encodeFrame(FrameType.ERROR, [channel], JSON.stringify(serializeError(error))));
  }

  private onClose(): void {
    this.closed = true;
    const channels = [...this.channels.values()];
    this.channels.clear();
    for (const channel of channels) {
      channel.view.releaseSlots();
      channel.subpartition.viewGone(channel.view);
    }
  }
}
