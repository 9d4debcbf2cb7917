import type { Socket } from 'node:net';
import { deserialize, serialize } from 'node:v8';

/** Longest control frame accepted (a deployment of a very wide region, a task result with collected values). */
export const MAX_FRAME_BYTES = 256 * 1024 * 1024;

/**
 * One control connection between a job master and a task executor: frames of a 4-byte big-endian length
 * and a structured-clone (`node:v8`) payload — what Node's IPC channel (`serialization: 'advanced'`)
 * carries between a job master and its worker processes, so the same messages travel. `onMessage` gets
 * each message in order; `onClose` once, with the error when the connection broke (an oversized or
 * undecodable frame destroys it). `send` on a closed connection returns false.
 */
export class ControlSocket<In, Out> {
  readonly #socket: Socket;
  #buffered: Buffer[] = [];
  #bufferedBytes = 0;
  #closed = false;
  onMessage: (message: In) => void = () => {};
  onClose: (error: Error | undefined) => void = () => {};

  constructor(socket: Socket, head?: Buffer) {
    this.#socket = socket;
    socket.setNoDelay(true);
    socket.setKeepAlive(true, 1000);
    socket.on('data', (chunk: Buffer) => this.#receive(chunk));
    socket.on('error', (error) => this.#close(error));
    socket.on('close', () => this.#close(undefined));
    if (head !== undefined && head.length > 0) queueMicrotask(() => this.#receive(head));
  }

  get closed(): boolean {
    return this.#closed;
  }

  get remoteAddress(): string {
    return `${this.#socket.remoteAddress ?? '?'}:${this.#socket.remotePort ?? '?'}`;
  }

  send(message: Out): boolean {
    if (this.#closed || this.#socket.destroyed) return false;
    const payload = serialize(message);
    const header = Buffer.allocUnsafe(4);
    header.writeUInt32BE(payload.length, 0);
    this.#socket.write(Buffer.concat([header, payload]));
    return true;
  }

  /** Flushes what was sent, then closes. */
  end(): void {
    this.#socket.end();
  }

  destroy(error?: Error): void {
    this.#socket.destroy();
    this.#close(error);
  }

  #receive(chunk: Buffer): void {
    if (this.#closed) return;
    this.#buffered.push(chunk);
    this.#bufferedBytes += chunk.length;
    while (this.#bufferedBytes >= 4) {
      const data = this.#buffered.length === 1 ? (this.#buffered[0] as Buffer) : Buffer.concat(this.#buffered);
      this.#buffered = [data];
      const length = data.readUInt32BE(0);
      if (length > MAX_FRAME_BYTES) {
        this.destroy(new Error(`a control frame of ${length} bytes is over the ${MAX_FRAME_BYTES}-byte limit`));
        return;
      }
      if (data.length < 4 + length) return;
      let message: In;
      try {
        message = deserialize(data.subarray(4, 4 + length)) as In;
      } catch (error) {
        this.destroy(new Error(`an undecodable control frame: ${(error as Error).message}`));
        return;
      }
      const rest = data.subarray(4 + length);
      this.#buffered = rest.length === 0 ? [] : [rest];
      this.#bufferedBytes = rest.length;
      this.onMessage(message);
      if (this.#closed) return;
    }
  }

  #close(error: Error | undefined): void {
    if (this.#closed) return;
    this.#closed = true;
    this.#socket.destroy();
    this.onClose(error);
  }
}
