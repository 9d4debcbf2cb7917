import { type Socket, connect } from 'node:net';
import { FrameDecoder, type FrameListener } from '../wire/frames.js';
import type { LocalSocket } from '../wire/local-socket.js';
import { type ReadSlab, ReadSlabs } from './read-slabs.js';

export interface PeerSocketOptions {
  readonly host: string;
  readonly port: number;
  readonly connectTimeoutMs: number;
  readonly maxFrameBytes: number;
  readonly onFrame: FrameListener;
  /** Called once, when the connection fails to open or closes for any reason other than `destroy()`. */
  readonly onLost: (cause: Error, opened: boolean) => void;
  /** The client end of an in-process connection to this process's own server (PartitionServer.connectLocal), instead of a TCP connection to `host:port`. */
  readonly local?: LocalSocket | undefined;
}

const READ_SLAB_BYTES = 256 * 1024;
const MIN_READ_BYTES = 64 * 1024;

/**
 * A framed TCP connection to a peer (or an in-process one to this process's own server, `local`). Writes
 * before the connection is open are queued by the socket; a connection that does not open within
 * `connectTimeoutMs`, breaks, or sends a malformed frame is lost.
 */
export class PeerSocket {
  readonly address: string;
  private readonly socket: Socket | LocalSocket;
  private opened = false;
  private done = false;
  private corked = false;
  /** Where TCP reads land; none for an in-process connection (its chunks are copies of their own). */
  private readonly slabs: ReadSlabs | undefined;

  constructor(private readonly options: PeerSocketOptions) {
    this.address = `${options.host}:${options.port}`;
    const decoder = new FrameDecoder(options.maxFrameBytes, options.onFrame);
    this.slabs = options.local === undefined ? new ReadSlabs(READ_SLAB_BYTES, MIN_READ_BYTES, 4) : undefined;
    const socket = options.local === undefined ? this.connect(decoder) : this.attach(options.local, decoder);
    this.socket = socket;
    let failure: Error | undefined;
    socket.on('error', (error) => {
      failure ??= error;
    });
    socket.once('close', () => this.lose(failure ?? new Error(this.opened ? 'the peer closed the connection' : 'the connection closed before it opened')));
  }

  /** An in-process connection: open already; each chunk delivered is decoded as a TCP read is. */
  private attach(local: LocalSocket, decoder: FrameDecoder): LocalSocket {
    this.opened = true;
    local.on('data', (chunk: Buffer) => {
      if (this.done) return;
      try {
        decoder.push(chunk);
      } catch (error) {
        this.lose(error as Error);
      }
    });
    return local;
  }

  private connect(decoder: FrameDecoder): Socket {
    const options = this.options;
    // Reads land in 256 KiB slabs (ReadSlabs), at least 64 KiB at a time.
    const slabs = this.slabs as ReadSlabs;
    const socket = connect({
      host: options.host,
      port: options.port,
      noDelay: true,
      onread: {
        buffer: () => slabs.next(),
        callback: (bytes: number, buffer: Uint8Array) => {
          if (this.done) return false;
          slabs.filled(bytes);
          try {
            decoder.push(buffer.subarray(0, bytes) as Buffer);
          } catch (error) {
            this.lose(error as Error);
          }
          return true;
        },
      },
    });
    socket.setTimeout(options.connectTimeoutMs, () => {
      socket.destroy(new Error(`no connection within connectTimeoutMs (${options.connectTimeoutMs} ms)`));
    });
    socket.once('connect', () => {
      this.opened = true;
      socket.setTimeout(0);
      socket.setKeepAlive(true, 10_000);
    });
    return socket;
  }

  /** Queues a frame; frames written in the same tick leave in one system call (corked until the next tick). */
  write(frame: Uint8Array): void {
    if (this.done) return;
    if (!this.corked) {
      this.corked = true;
      this.socket.cork();
      process.nextTick(this.uncork);
    }
    this.socket.write(frame);
  }

  private readonly uncork = (): void => {
    this.corked = false;
    this.socket.uncork();
  };

  /**
   * Keeps the read slab that `view` (a frame body handed to `onFrame` just now) lies in from being reused
   * until `releaseBuffer`; undefined when the frame was assembled from two reads (a copy of its own).
   */
  holdBuffer(view: Uint8Array): ReadSlab | undefined {
    return this.slabs?.hold(view);
  }

  releaseBuffer(slab: ReadSlab): void {
    this.slabs?.release(slab);
  }

  /** Closes the connection without reporting it lost. */
  destroy(): void {
    this.done = true;
    this.socket.destroy();
  }

  private lose(cause: Error): void {
    if (this.done) return;
    this.done = true;
    this.socket.destroy();
    this.options.onLost(cause, this.opened);
  }
}
