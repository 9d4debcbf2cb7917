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
parentPort.on('message', ({ id, buffers, spans }) => {
  const out = new Uint32Array(spans.length / 4);
  for (let i = 0; i < out.length; i++) {
    if (upgradeAfter >= 0 && (upgradeAfter -= spans[4 * i + 2]) < 0) crc32c = load(workerData.later) ?? crc32c;
    out[i] = crc32c(Buffer.from(buffers[spans[4 * i]], spans[4 * i + 1], spans[4 * i + 2]), spans[4 * i + 3]) >>> 0;
  }
  parentPort.postMessage({ id, crcs: out }, [out.buffer]);
});
`;

/**
 * Computes CRC32Cs on a worker thread, so the checksums of a region being written or of a read buffer
 * being verified run beside the JavaScript thread that frames or deframes records (CRC32C of every block
 * is, with framing, the biggest CPU cost of the format). Spans in SharedArrayBuffers go to the worker
 * (nothing is copied); the others, small batches, and everything once the worker failed are computed on
 * the calling thread. One worker per process, started on first use; it keeps the process alive only
 * while a batch is in flight. It loads the native CRC32C the calling thread uses (checksum.ts, switching
 * to the faster one after as many bytes); with the JavaScript fallback there is no worker.
 */
export class ChecksumWorker {
  private static instance: ChecksumWorker | undefined;
  private worker: Worker | undefined;
  private broken = false;
  private nextId = 0;
  private readonly pending = new Map<number, { resolve: (crcs: Uint32Array) => void; reject: (e: Error) => void }>();

  /** The process's checksum worker. */
  static shared(): ChecksumWorker {
    ChecksumWorker.instance ??= new ChecksumWorker();
    return ChecksumWorker.instance;
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

  /** Checks `checks` in order; resolves with the first that fails, or undefined. */
  async check(checks: readonly ChecksumCheck[]): Promise<ChecksumMismatch | undefined> {
    const crcs = await this.compute(checks);
    for (let index = 0; index < checks.length; index++) {
      if (crcs[index] !== checks[index]!.expected >>> 0) return { index, actual: crcs[index]! };
    }
    return undefined;
  }

  private send(spans: readonly ChecksumSpan[], which: readonly number[]): Promise<Uint32Array> {
    const worker = this.start();
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
    const id = this.nextId++;
    return new Promise((resolve, reject) => {
      if (this.pending.size === 0) worker.ref();
      this.pending.set(id, { resolve, reject });
      worker.postMessage({ id, buffers, spans: encoded });
    });
  }

  private start(): Worker {
    if (this.worker !== undefined) return this.worker;
    const worker = new Worker(WORKER_SOURCE, { eval: true, workerData: crc32cForWorker() });
    worker.unref();
    worker.on('message', ({ id, crcs }: { id: number; crcs: Uint32Array }) => {
      const waiting = this.pending.get(id);
      this.pending.delete(id);
      if (this.pending.size === 0) worker.unref();
      waiting?.resolve(crcs);
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
