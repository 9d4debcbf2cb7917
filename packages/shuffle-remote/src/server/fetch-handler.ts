import type { IncomingMessage, ServerResponse } from 'node:http';
import { ShuffleError, invalidArgument, isShuffleError, partitionNotFound } from '@weft/shuffle-api';
import { type IndexLocation, decodeIndexEntries, indexEntriesRange } from '../format/partition-index.js';
import { type Extent, FetchHeader, planExtents } from '../protocol/fetch-layout.js';
import { WireError, wireError } from '../protocol/wire-errors.js';
import type { CommittedPartition } from '../protocol/committed-partition.js';
import type { BlobReader } from '../storage/blob-store.js';
import { readAhead } from '../storage/read-ahead.js';
import { MIN_STREAM_BUFFER_BYTES, type ServerContext } from './server-context.js';

export interface FetchRoute {
  readonly jobId: string;
  readonly partitionId: string;
  readonly start: number;
  readonly end: number;
}

/** Largest index slice one fetch reads (subpartitions × regions × 16 bytes); ask for fewer subpartitions beyond it. */
const MAX_FETCH_INDEX_BYTES = 64 * 1024 * 1024;

/**
 * `GET /v1/jobs/<job>/partitions/<p>/data?start=&end=`: streams the index entries of subpartitions
 * [start, end] and then the extents holding their blocks (protocol/fetch-layout.ts), with one disk read
 * ahead and socket backpressure: a slow reader slows the disk reads, a vanished one stops them.
 */
export async function handleFetch(ctx: ServerContext, req: IncomingMessage, res: ServerResponse, route: FetchRoute): Promise<void> {
  const record = await ctx.store.committed(route.jobId, route.partitionId);
  if (record === undefined) {
    if (ctx.store.isPending(route.jobId, route.partitionId, ctx.clock.now())) {
      throw wireError(WireError.PARTITION_PENDING, `partition ${route.partitionId} is not committed yet: its producer is still writing it`, {
        partitionId: route.partitionId,
      });
    }
    throw partitionNotFound(route.partitionId, 'no attempt of it is committed on this server');
  }
  const n = record.numberOfSubpartitions;
  if (route.end >= n) throw invalidArgument('end', `${route.end} is not a subpartition of ${route.partitionId}, which has ${n}`);
  if (route.start > route.end) throw invalidArgument('start', `${route.start} is after end ${route.end}`);
  const location: IndexLocation = {
    numberOfSubpartitions: n,
    numberOfRegions: record.numberOfRegions,
    indexOffset: record.indexOffset,
    indexLength: record.indexLength,
  };
  const reader = await openCommitted(ctx, record, route.partitionId);
  try {
    let entries: Uint8Array = new Uint8Array(0);
    let extents: Extent[] = [];
    if (location.numberOfRegions > 0) {
      const range = indexEntriesRange(location, route.start, route.end);
      if (range.length > MAX_FETCH_INDEX_BYTES) {
        throw invalidArgument('end', `subpartitions [${route.start}, ${route.end}] have ${range.length} bytes of index; fetch fewer at a time`);
      }
      entries = await reader.read(range.offset, range.length);
      extents = planExtents(decodeIndexEntries(entries, location, route.start, route.end), location, route.partitionId);
      reader.plan?.(extents); // the S3 copy: one ranged GET per extent
    }
    let total = entries.length;
    for (const extent of extents) total += extent.length;
    res.writeHead(200, {
      'content-type': 'application/octet-stream',
      'content-length': total,
      [FetchHeader.ATTEMPT]: String(record.attempt),
      [FetchHeader.SUBPARTITIONS]: String(n),
      [FetchHeader.REGIONS]: String(location.numberOfRegions),
      [FetchHeader.INDEX_OFFSET]: String(location.indexOffset),
      [FetchHeader.INDEX_LENGTH]: String(location.indexLength),
    });
    // the piece size follows this fetch's share of the stream memory: 4 pieces (reading, read ahead, 2 in the socket)
    const pieceBytes = (): number => Math.max(MIN_STREAM_BUFFER_BYTES, Math.min(ctx.options.readChunkBytes, Math.floor(ctx.streamShareBytes() / 4)));
    const out = new ResponseWriter(res, () => 2 * pieceBytes(), (bytes) => ctx.metrics.bytesOut.inc(bytes));
    await out.write(entries);
    const pieces = function* (): Generator<Extent> {
      for (const extent of extents) {
        for (let done = 0; done < extent.length; ) {
          const length = Math.min(pieceBytes(), extent.length - done);
          yield { offset: extent.offset + done, length };
          done += length;
        }
      }
    };
    // pieces are read into pooled buffers, each back in the pool once the socket has taken its bytes
    // (fresh ones per piece cost page faults and garbage; the pool holds what is in flight, no more)
    const pool = new PiecePool();
    let sent = false;
    for await (const bytes of readAhead(reader, pieces(), (length) => pool.take(length))) {
      await out.write(bytes, () => pool.give(bytes));
      if (!sent) {
        sent = true; // the first piece is out, the rest of the range is still to come
        await ctx.faultPoint?.('fetch', route.jobId, route.partitionId);
      }
    }
    if (!sent) await ctx.faultPoint?.('fetch', route.jobId, route.partitionId);
    res.end();
  } finally {
    await reader.close();
  }
}

/**
 * The committed object: the disk copy, or, when the disk holds none (offloaded, `tier.keepLocal: false`)
 * and the partition is tiered, its S3 copy. PARTITION_NOT_FOUND when neither exists (an S3 copy that is
 * gone fails at the first read, before the response starts, the same way).
 */
async function openCommitted(ctx: ServerContext, record: CommittedPartition, partitionId: string): Promise<BlobReader> {
  try {
    return await ctx.store.openObject(record.objectKey);
  } catch (error) {
    if (!isShuffleError(error, 'SHF_ERR_PARTITION_NOT_FOUND')) throw error;
    if (record.tiered && ctx.tier !== undefined) return ctx.tier.openReader(record.objectKey);
    throw partitionNotFound(partitionId, 'its data object is gone from the server disk', error);
  }
}

/**
 * Writes to a response honouring backpressure: it lets up to `queueBytes` wait in the socket's buffer (so
 * the socket never runs dry between two disk reads), then waits for it to drain. Rejects once the client
 * is gone.
 */
class ResponseWriter {
  constructor(
    private readonly res: ServerResponse,
    private readonly queueBytes: () => number,
    private readonly count: (bytes: number) => void,
  ) {}

  /** `flushed` runs once the socket no longer needs `bytes` (written, or the response is gone). */
  async write(bytes: Uint8Array, flushed?: () => void): Promise<void> {
    if (bytes.length === 0) {
      flushed?.();
      return;
    }
    const res = this.res;
    if (res.destroyed) throw gone();
    this.count(bytes.length);
    const more = flushed === undefined ? res.write(bytes) : res.write(bytes, () => flushed());
    if (more || res.writableLength < this.queueBytes()) return;
    await new Promise<void>((resolve, reject) => {
      const onDrain = (): void => {
        res.off('close', onClose);
        resolve();
      };
      const onClose = (): void => {
        res.off('drain', onDrain);
        reject(gone());
      };
      res.once('drain', onDrain);
      res.once('close', onClose);
    });
  }
}

/**
 * Buffers for the pieces of one fetch: `take` lends one at least `length` long (a pooled one, else a new
 * one), `give` returns it. A piece read into another buffer (a reader that does not read into the one
 * lent) is simply not pooled: only buffers this pool made come back to it.
 */
class PiecePool {
  private readonly free: Uint8Array[] = [];
  private readonly mine = new WeakSet<ArrayBufferLike>();

  take(length: number): Uint8Array {
    for (let i = this.free.length - 1; i >= 0; i--) {
      const buffer = this.free[i]!;
      if (buffer.length >= length) {
        this.free.splice(i, 1);
        return buffer.subarray(0, length);
      }
    }
    const buffer = Buffer.allocUnsafeSlow(length);
    this.mine.add(buffer.buffer);
    return buffer;
  }

  give(bytes: Uint8Array): void {
    if (!this.mine.has(bytes.buffer)) return;
    this.free.push(new Uint8Array(bytes.buffer, 0, bytes.buffer.byteLength));
  }
}

function gone(): ShuffleError {
  return new ShuffleError('SHF_ERR_STORAGE_UNAVAILABLE', 'the client went away during the fetch');
}
