import { type SerializedShuffleError, ShuffleError, closedError, deserializeError } from '@weft/shuffle-api';
import { FrameType, encodeFrame, parseJsonTail } from '../wire/frames.js';
import { PeerSocket } from './peer-socket.js';

/** What a master asks of a task executor's environment. */
export type ControlRequest =
  | { readonly op: 'register'; readonly descriptor: unknown }
  | { readonly op: 'release'; readonly jobId: string; readonly partitionId: string; readonly producerId?: string }
  | { readonly op: 'release-job'; readonly jobId: string };

interface Pending {
  readonly resolve: () => void;
  readonly reject: (error: Error) => void;
  readonly timer: NodeJS.Timeout;
}

export interface ControlClientOptions {
  readonly taskExecutorId: string;
  readonly host: string;
  readonly port: number;
  readonly connectTimeoutMs: number;
  readonly requestTimeoutMs: number;
  readonly maxFrameBytes: number;
}

/**
 * A master's connection to one task executor's environment (Flink's TaskExecutorGateway, for partitions):
 * request/response over one TCP connection, opened on first use and again after it was lost.
 * A request that gets no answer within `requestTimeoutMs` rejects with SHF_ERR_TIMEOUT; one whose
 * connection is lost (or never opens) with SHF_ERR_CONNECTION_LOST.
 */
export class ControlClient {
  private peer: PeerSocket | null = null;
  private readonly pending = new Map<number, Pending>();
  private nextId = 1;
  private closed = false;

  constructor(private readonly options: ControlClientOptions) {}

  request(request: ControlRequest): Promise<void> {
    if (this.closed) return Promise.reject(closedError('network shuffle control connection'));
    const id = this.nextId++;
    const peer = (this.peer ??= this.open());
    return new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => {
        this.pending.delete(id);
        reject(
          new ShuffleError('SHF_ERR_TIMEOUT', `task executor ${this.options.taskExecutorId} at ${peer.address} did not answer ${request.op} within requestTimeoutMs (${this.options.requestTimeoutMs} ms)`, {
            context: { setting: 'requestTimeoutMs', taskExecutorId: this.options.taskExecutorId },
          }),
        );
      }, this.options.requestTimeoutMs);
      this.pending.set(id, { resolve, reject, timer });
      peer.write(encodeFrame(FrameType.CONTROL_REQUEST, [id], JSON.stringify(request)));
    });
  }

  close(): void {
    this.closed = true;
    this.peer?.destroy();
    this.peer = null;
    this.rejectAll(closedError('network shuffle control connection'));
  }

  private open(): PeerSocket {
    const { host, port, connectTimeoutMs, maxFrameBytes, taskExecutorId } = this.options;
    const peer: PeerSocket = new PeerSocket({
      host,
      port,
      connectTimeoutMs,
      maxFrameBytes,
      onFrame: (type, body) => {
        if (type !== FrameType.CONTROL_RESPONSE) throw new ShuffleError('SHF_ERR_DATA_CORRUPTED', `unexpected frame type ${type} on a control connection`);
        const entry = this.pending.get(body.readUInt32LE(0));
        if (entry === undefined) return;
        this.pending.delete(body.readUInt32LE(0));
        clearTimeout(entry.timer);
        const answer = parseJsonTail(body, 4) as { ok?: boolean; error?: SerializedShuffleError };
        if (answer.error !== undefined) entry.reject(deserializeError(answer.error));
        else entry.resolve();
      },
      onLost: (cause, opened) => {
        if (this.peer === peer) this.peer = null;
        this.rejectAll(
          new ShuffleError(
            'SHF_ERR_CONNECTION_LOST',
            `the control connection to task executor ${taskExecutorId} at ${peer.address} ${opened ? 'was lost' : 'could not be opened'}: ${cause.message}`,
            { cause, retryable: true, context: { taskExecutorId, address: peer.address } },
          ),
        );
      },
    });
    return peer;
  }

  private rejectAll(error: Error): void {
    const pending = [...this.pending.values()];
    this.pending.clear();
    for (const p of pending) {
      clearTimeout(p.timer);
      p.reject(error);
    }
  }
}
