import { ShuffleError, isShuffleError } from '@weft/shuffle-api';
import type { IndexLocation } from '../format/partition-index.js';
import type { PartitionSource } from '../shuffle-core/sort-merge-input-gate.js';
import type { BlobReader } from '../storage/blob-store.js';

export interface ResumingRangeReaderOptions {
  readonly partitionId: string;
  readonly first: PartitionSource;
  /**
   * Finds the partition again (its server, or another copy): called when a read of the current source
   * breaks. Its rejection (e.g. SHF_ERR_PARTITION_NOT_FOUND once the server is gone and nothing else
   * holds the partition) is what the read rejects with.
   */
  readonly reopen: () => Promise<PartitionSource>;
  /** How many times one reader opens its partition again. @defaultValue 3 */
  readonly maxReopens?: number;
}

/**
 * A BlobReader that survives a fetch breaking in the middle (its server killed, a connection reset): it
 * finds the partition again — on the same server if it answers, else on a replica, a spare it moved to,
 * or the S3 tier — replays there the reads it already served (every copy of a committed attempt holds
 * the same bytes: one encoding, teed to each server), and serves the broken read from it. A copy laid
 * out differently (another index location) is SHF_ERR_DATA_CORRUPTED. Only transport trouble reopens:
 * a non-retryable error (corruption, a closed gate) is thrown as it is.
 */
export class ResumingRangeReader implements BlobReader {
  private current: BlobReader;
  private readonly location: IndexLocation;
  private readonly served: { offset: number; length: number }[] = [];
  private planned: readonly { readonly offset: number; readonly length: number }[] | undefined;
  private reopens = 0;
  private closed = false;

  constructor(private readonly options: ResumingRangeReaderOptions) {
    this.current = options.first.reader;
    this.location = options.first.location;
  }

  get sharedTargets(): boolean | undefined {
    return this.current.sharedTargets;
  }

  plan(ranges: readonly { readonly offset: number; readonly length: number }[]): void {
    this.planned = ranges;
    this.current.plan?.(ranges);
  }

  async read(offset: number, length: number, into?: Uint8Array): Promise<Uint8Array> {
    for (;;) {
      try {
        const bytes = await this.current.read(offset, length, into);
        this.served.push({ offset, length });
        return bytes;
      } catch (error) {
        if (this.closed || !broken(error) || this.reopens >= (this.options.maxReopens ?? 3)) throw error;
        this.reopens++;
        await this.resume();
      }
    }
  }

  async close(): Promise<void> {
    this.closed = true;
    await this.current.close();
  }

  /** Opens the partition again and reads what was already served, so the next read is the broken one. */
  private async resume(): Promise<void> {
    await this.current.close().catch(() => undefined);
    const next = await this.options.reopen();
    this.current = next.reader;
    if (!sameLocation(next.location, this.location)) {
      throw new ShuffleError('SHF_ERR_DATA_CORRUPTED', `partition ${this.options.partitionId}: the copy read after a broken fetch is laid out differently`, {
        context: { partitionId: this.options.partitionId },
      });
    }
    if (this.planned !== undefined) this.current.plan?.(this.planned);
    for (const { offset, length } of this.served) await this.current.read(offset, length);
  }
}

/** Transport trouble: a raw socket error, or a retryable ShuffleError (a reset, a timeout, a 503). */
function broken(error: unknown): boolean {
  if (isShuffleError(error)) return error.retryable && error.code !== 'SHF_ERR_CLOSED';
  return error instanceof Error;
}

function sameLocation(a: IndexLocation, b: IndexLocation): boolean {
  return a.numberOfSubpartitions === b.numberOfSubpartitions && a.numberOfRegions === b.numberOfRegions && a.indexOffset === b.indexOffset && a.indexLength === b.indexLength;
}
