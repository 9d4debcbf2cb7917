import { availableParallelism } from 'node:os';
import { Worker } from 'node:worker_threads';
import { crc32c, crc32cForWorker, crc32cImplementation } from './checksum.js';

/** One CRC32C to compute: of `bytes`, continuing from `initial` (0 to start). */
export interface ChecksumSpan {
  readonly bytes: Uint8Array;
  readonly initial?: number;
}

/** One checksum to check: CRC32C of `bytes` must equal `expected`. */
export interface ChecksumCheck {
  readonly bytes: Uint8Array;
  readonly expected: number;
}

/** The first check that failed, with the CRC computed; undefined when all hold. */
export interface ChecksumMismatch {
  readonly index: number;
  readonly actual: number;
}

/** What the worker answers: CRCs of spans, or what a read brought (`filled`, block CRCs as offset/CRC pairs), or a read's error. */
interface WorkerReply {
  readonly id: number;
  readonly crcs?: Uint32Array | Float64Array;
  readonly filled?: number;
  readonly error?: { readonly message: string; readonly code?: string };
}

/** Below this many bytes in shared memory a batch is computed on the calling thread: a message costs more than the CRCs. */
const MIN_WORKER_BYTES = 256 * 1024;

const WORKER_SOURCE = `
const { parentPort, workerData } = require('node:worker_threads');
function load(modules) {
  for (const { modulePath, exportName } of modules) {
    try {
      const fn = require(modulePath)[exportName];
      if (typeof fn === 'function' && fn(Buffer.from('123456789'), 0) >>> 0 === 0xe3069283) return fn;
    } catch {}
  }
  return undefined;
}
let crc32c = load(workerData.now);
if (crc32c === undefined) throw new Error('the checksum worker could not load its CRC32C');
let upgradeAfter = workerData.afterBytes;
function crcOf(bytes, initial) {
  if (upgradeAfter >= 0 && (upgradeAfter -= bytes.length) < 0) crc32c = load(workerData.later) ?? crc32c;
  return crc32c(bytes, initial) >>> 0;
}
const { readSync } = require('node:fs');
// block walkers of the streams being read (READ_SOURCE below), oldest first; a stream evicted or lost
// just gets no CRCs computed here (its reader computes them itself)
const streams = new Map();
const MAX_STREAMS = 4096;
const HEADER = 16;
/** Walks the blocks in bytes[from, to), CRC of each one as soon as its last byte is here. */
function walk(state, bytes, from, to, out) {
  let p = from;
  while (p < to) {
    if (state.headerFilled < HEADER) {
      const n = Math.min(HEADER - state.headerFilled, to - p);
      state.header.set(bytes.subarray(p, p + n), state.headerFilled);
      state.headerFilled += n;
      p += n;
      if (state.headerFilled < HEADER) return;
      const h = state.header;
      state.remaining = (h[12] | (h[13] << 8) | (h[14] << 16) | (h[15] << 24)) >>> 0;
      state.crc = crcOf(h.subarray(4, HEADER), 0);
    }
    const n = Math.min(state.remaining, to - p);
    if (n > 0) state.crc = crcOf(bytes.subarray(p, p + n), state.crc);
    p += n;
    state.remaining -= n;
    if (state.remaining === 0) {
      out.push(state.blockAt, state.crc);
      state.blockAt += HEADER + ((state.header[12] | (state.header[13] << 8) | (state.header[14] << 16) | (state.header[15] << 24)) >>> 0);
      state.headerFilled = 0;
    }
  }
}
function read({ id, fd, buffer, byteOffset, length, position, stream, fresh, last, pieceBytes }) {
  const bytes = new Uint8Array(buffer, byteOffset, length);
  let state = streams.get(stream);
  if (fresh) {
    state = { blockAt: position, header: new Uint8Array(HEADER), headerFilled: 0, remaining: 0, crc: 0 };
    streams.delete(stream);
    streams.set(stream, state);
    if (streams.size > MAX_STREAMS) streams.delete(streams.keys().next().value);
  }
  const crcs = [];
  let filled = 0;
  try {
    while (filled < length) {
      const n = readSync(fd, bytes, filled, Math.min(pieceBytes, length - filled), position + filled);
      if (n === 0) break;
      // each piece checksummed right after the kernel copied it, while it is in this core's cache
      if (state !== undefined) walk(state, bytes, filled, filled + n, crcs);
      filled += n;
    }
  } catch (error) {
    parentPort.postMessage({ id, error: { message: error.message, code: error.code } });
    return;
  }
  if (last || filled < length) streams.delete(stream);
  const out = new Float64Array(crcs);
  parentPort.postMessage({ id, filled, crcs: out }, [out.buffer]);
}
parentPort.on('message', (message) => {
  if (message.fd !== undefined) return read(message);
  const { id, buffers, spans } = message;
  const out = new Uint32Array(spans.length / 4);
  for (let i = 0; i < out.length; i++) {
    out[i] = crcOf(Buffer.from(buffers[spans[4 * i]], spans[4 * i + 1], spans[4 * i + 2]), spans[4 * i + 3]);
  }
  parentPort.postMessage({ id, crcs: out }, [out.buffer]);
});
`;

/** One positional read for the worker to make (`readBlocks`): `length` bytes at `position` into `target` (in shared memory). */
export interface BlockRead {
  readonly fd: number;
  readonly position: number;
  readonly length: number;
  readonly target: Uint8Array;
  /** The reader's id: the worker keeps each stream's place in its blocks from one read to the next (a read that is not `fresh` goes where the stream's read before it went). */
  readonly stream: number;
  /** True when `position` is where a block starts (the first read of an extent of whole segments). */
  readonly fresh: boolean;
  /** True for the stream's last read: its place is forgotten. */
  readonly last: boolean;
}

/** What a `readBlocks` read brought: bytes filled (less than asked at the end of the file) and the CRC32C of each block that ended in it. */
export interface BlockReadResult {
  readonly filled: number;
  /** Block start offset (in the file) -> CRC32C of that block's checksummed bytes (block-codec.ts), for every block whose last byte was read. */
  readonly crcs: ReadonlyMap<number, number>;
}

/** An I/O error of a worker's read, with its errno code. */
export class WorkerReadError extends Error {
  override readonly name = 'WorkerReadError';
  constructor(
    message: string,
    readonly code: string | undefined,
  ) {
    super(message);
  }
}

/** How much the worker reads before checksumming what it read (then the next piece): small enough to stay in a core's cache. */
const READ_PIECE_BYTES = 512 * 1024;

/**
 * Workers that make reads (`readBlocks`; `leastBusy` picks one for each read that starts at a block
 * boundary): two where the machine has two cores or more. One worker making every read of eight gates
 * was the read's critical path (the kernel's copies and the CRC32Cs of 1 GiB, 0.25 s, while the
 * JavaScript thread deframing beside it was busy about half the time); two share that.
 */
const READ_WORKERS = Math.min(2, Math.max(1, availableParallelism()));

/**
 * Computes CRC32Cs on a worker thread, so the checksums of a region being written or of a read buffer
 * being verified run beside the JavaScript thread that frames or deframes records (CRC32C of every block
 * is, with framing, the biggest CPU cost of the format). Spans in SharedArrayBuffers go to the worker
 * (nothing is copied); the others, small batches, and everything once the worker failed are computed on
 * the calling thread. One worker per process (`shared()`) for checksums, and the reads of local files
 * spread over READ_WORKERS (`forStream`: the shared one and, on two cores or more, a second); each is
 * started on first use and keeps the process alive only while a batch is in flight. Each loads the
 * native CRC32C the calling thread uses (checksum.ts, switching to the faster one after as many bytes);
 * with the JavaScript fallback there is no worker.
 */
export class ChecksumWorker {
  private static instance: ChecksumWorker | undefined;
  private worker: Worker | undefined;
  private broken = false;
  private nextId = 0;
  private readonly pending = new Map<number, { resolve: (reply: WorkerReply) => void; reject: (e: Error) => void }>();
  private nextStream = 0;

  private static readers: ChecksumWorker[] = [];
  private static turn = 0;

  /** The process's checksum worker. */
  static shared(): ChecksumWorker {
    ChecksumWorker.instance ??= new ChecksumWorker();
    return ChecksumWorker.instance;
  }

  /** Read worker number `stream` modulo READ_WORKERS (started on first use). */
  static forStream(stream: number): ChecksumWorker {
    const k = stream % READ_WORKERS;
    if (k === 0) return ChecksumWorker.shared();
    ChecksumWorker.readers[k] ??= new ChecksumWorker();
    return ChecksumWorker.readers[k];
  }

  /**
   * The read worker with the fewest requests in flight among those that can read files (on a tie, the
   * next in turn; any when none can, whose reads then fall back to the caller): where a read that
   * starts at a block boundary goes (no worker keeps a place in the blocks for it), so a worker the
   * machine's other threads slow down takes fewer reads instead of leaving its readers behind the others'
   * (eight gates on two workers finished in two groups of four, 10-13 % apart).
   */
  static leastBusy(): ChecksumWorker {
    const first = ChecksumWorker.turn++ % READ_WORKERS;
    let best = ChecksumWorker.forStream(first);
    for (let k = 1; k < READ_WORKERS; k++) {
      const worker = ChecksumWorker.forStream((first + k) % READ_WORKERS);
      if (!best.readsFiles || (worker.readsFiles && worker.pending.size < best.pending.size)) best = worker;
    }
    return best;
  }

  /** The CRC32C of every span, in order. */
  async compute(spans: readonly ChecksumSpan[]): Promise<Uint32Array> {
    const out = new Uint32Array(spans.length);
    const remote: number[] = [];
    let remoteBytes = 0;
    spans.forEach((span, i) => {
      if (span.bytes.buffer instanceof SharedArrayBuffer) {
        remote.push(i);
        remoteBytes += span.bytes.length;
      }
    });
    const offloaded = remoteBytes >= MIN_WORKER_BYTES && !this.broken && crc32cImplementation() !== 'js' ? this.send(spans, remote) : undefined;
    const here = new Set(offloaded === undefined ? [] : remote);
    spans.forEach((span, i) => {
      if (!here.has(i)) out[i] = crc32c(span.bytes, span.initial ?? 0);
    });
    if (offloaded !== undefined) {
      try {
        const crcs = await offloaded;
        remote.forEach((i, k) => (out[i] = crcs[k]!));
      } catch {
        this.broken = true;
        for (const i of remote) out[i] = crc32c(spans[i]!.bytes, spans[i]!.initial ?? 0);
      }
    }
    return out;
  }

  /** True when this process has a worker that can read files (`readBlocks`): a native CRC32C loaded, the worker not broken. */
  get readsFiles(): boolean {
    return !this.broken && crc32cImplementation() !== 'js';
  }

  /** A new stream id for `readBlocks`. */
  newStream(): number {
    return this.nextStream++;
  }

  /**
   * Reads `read.length` bytes at `read.position` of the open file `read.fd` into `read.target` on the
   * worker, which computes each block's CRC32C right after reading it (pieces of READ_PIECE_BYTES, while
   * they are in its cache: about half what verifying the same buffers later costs). The caller keeps the
   * file open until this settles. Rejects with WorkerReadError on an I/O error; with another error when
   * the worker is gone (the caller then reads and checks as usual).
   */
  async readBlocks(read: BlockRead): Promise<BlockReadResult> {
    if (!(read.target.buffer instanceof SharedArrayBuffer)) throw new Error('readBlocks needs a target in shared memory');
    const reply = await this.post({
      fd: read.fd,
      buffer: read.target.buffer,
      byteOffset: read.target.byteOffset,
      length: read.length,
      position: read.position,
      stream: read.stream,
      fresh: read.fresh,
      last: read.last,
      pieceBytes: READ_PIECE_BYTES,
    });
    if (reply.error !== undefined) throw new WorkerReadError(reply.error.message, reply.error.code);
    const crcs = new Map<number, number>();
    const pairs = reply.crcs as Float64Array;
    for (let i = 0; i + 1 < pairs.length; i += 2) crcs.set(pairs[i]!, pairs[i + 1]!);
    return { filled: reply.filled!, crcs };
  }

  /** Checks `checks` in order; resolves with the first that fails, or undefined. */
  async check(checks: readonly ChecksumCheck[]): Promise<ChecksumMismatch | undefined> {
    const crcs = await this.compute(checks);
    for (let index = 0; index < checks.length; index++) {
      if (crcs[index] !== checks[index]!.expected >>> 0) return { index, actual: crcs[index]! };
    }
    return undefined;
  }

  private send(spans: readonly ChecksumSpan[], which: readonly number[]): Promise<Uint32Array> {
    const buffers: SharedArrayBuffer[] = [];
    const slots = new Map<SharedArrayBuffer, number>();
    const encoded = new Float64Array(which.length * 4);
    which.forEach((i, k) => {
      const { bytes, initial } = spans[i]!;
      const buffer = bytes.buffer as SharedArrayBuffer;
      let slot = slots.get(buffer);
      if (slot === undefined) {
        slot = buffers.push(buffer) - 1;
        slots.set(buffer, slot);
      }
      encoded.set([slot, bytes.byteOffset, bytes.length, (initial ?? 0) >>> 0], 4 * k);
    });
    return this.post({ buffers, spans: encoded }).then((reply) => reply.crcs as Uint32Array);
  }

  private post(message: Record<string, unknown>): Promise<WorkerReply> {
    const worker = this.start();
    const id = this.nextId++;
    return new Promise((resolve, reject) => {
      if (this.pending.size === 0) worker.ref();
      this.pending.set(id, { resolve, reject });
      worker.postMessage({ id, ...message });
    });
  }

  private start(): Worker {
    if (this.worker !== undefined) return this.worker;
    const worker = new Worker(WORKER_SOURCE, { eval: true, workerData: crc32cForWorker() });
    worker.unref();
    worker.on('message', (reply: WorkerReply) => {
      const waiting = this.pending.get(reply.id);
      this.pending.delete(reply.id);
      if (this.pending.size === 0) worker.unref();
      waiting?.resolve(reply);
    });
    const fail = (error: Error): void => {
      this.broken = true;
      this.worker = undefined;
      for (const waiting of this.pending.values()) waiting.reject(error);
      this.pending.clear();
    };
    worker.on('error', fail);
    worker.on('exit', (code) => fail(new Error(`checksum worker exited with ${code}`)));
    this.worker = worker;
    return worker;
  }
}
