import { Duplex } from 'node:stream';

/**
 * The socket a ServerConnection serves over: a TCP socket, or one end of an in-process pair (LocalSocket).
 */
export type ConnectionSocket = Duplex & {
  setNoDelay(noDelay?: boolean): unknown;
  setKeepAlive(enable?: boolean, initialDelay?: number): unknown;
  readonly remoteAddress?: string | undefined;
};

/** Deliveries of all local connections of the process from the nextTick queue in one turn of the event loop; the rest wait for the next turn. */
const HOPS_PER_TURN = 32;
let hopsThisTurn = 0;
let turnReset = false;

function scheduleHop(deliver: () => void): void {
  if (hopsThisTurn >= HOPS_PER_TURN) {
    setImmediate(deliver);
    return;
  }
  hopsThisTurn++;
  if (!turnReset) {
    turnReset = true;
    setImmediate(() => {
      hopsThisTurn = 0;
      turnReset = false;
    });
  }
  process.nextTick(deliver);
}

/**
 * One end of an in-process connection (`localSocketPair`), for a gate that reads partitions its own
 * environment serves: no TCP connection to open (Flink's LocalInputChannel reads its own task
 * executor's partitions without the network), the same frames and credit protocol. What one end writes
 * the other reads — copied, so the writer's buffer is its own again when the write's callback runs, as
 * after a socket write — never inside the writer's call: from the nextTick queue for the first
 * `HOPS_PER_TURN` deliveries of the process in one turn of the event loop (a request and its answer do
 * not wait for the loop), then in its next turn (`setImmediate`, as a socket's read arrives) — so a
 * producer and a consumer of one process trading data and credit without end let timers and I/O run.
 * Ending one end ends the other after what was written (no half-open connections); destroying one
 * destroys the other, dropping what was not delivered yet, as a reset connection does.
 */
export class LocalSocket extends Duplex {
  readonly remoteAddress = 'local';
  #peer: LocalSocket | undefined;
  #outgoing: (Buffer | null)[] = [];
  #scheduled = false;

  constructor() {
    super({ allowHalfOpen: false });
  }

  /** Connects two fresh ends. */
  static pair(): [LocalSocket, LocalSocket] {
    const a = new LocalSocket();
    const b = new LocalSocket();
    a.#peer = b;
    b.#peer = a;
    return [a, b];
  }

  setNoDelay(): this {
    return this;
  }

  setKeepAlive(): this {
    return this;
  }

  override _read(): void {}

  override _write(chunk: Buffer, _encoding: BufferEncoding, callback: (error?: Error | null) => void): void {
    this.#send(Buffer.from(chunk));
    callback();
  }

  override _writev(chunks: { chunk: Buffer }[], callback: (error?: Error | null) => void): void {
    this.#send(Buffer.concat(chunks.map((c) => c.chunk)));
    callback();
  }

  override _final(callback: (error?: Error | null) => void): void {
    this.#send(null);
    callback();
  }

  override _destroy(error: Error | null, callback: (error?: Error | null) => void): void {
    const peer = this.#peer;
    this.#peer = undefined;
    this.#outgoing = [];
    if (peer !== undefined) process.nextTick(() => peer.destroy());
    callback(error);
  }

  #send(chunk: Buffer | null): void {
    this.#outgoing.push(chunk);
    if (this.#scheduled) return;
    this.#scheduled = true;
    scheduleHop(this.#deliver);
  }

  readonly #deliver = (): void => {
    this.#scheduled = false;
    const peer = this.#peer;
    const chunks = this.#outgoing;
    this.#outgoing = [];
    if (peer === undefined || peer.destroyed) return;
    for (const chunk of chunks) peer.push(chunk);
  };
}
