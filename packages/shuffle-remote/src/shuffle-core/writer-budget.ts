import { MIN_BLOCK_BYTES } from './sort-buffer.js';

/** How a writer splits its memory budget (see RemoteShuffleOptions.producerMemoryBytes). */
export interface WriterBudget {
  readonly memoryLimitBytes: number;
  /** The sort buffer spills a region when it holds this much. */
  readonly regionBytes: number;
  /**
   * A region's share of the budget (`regionBytes` plus one block). A region that holds more — it ends
   * with a record larger than what was left of its share — is oversized: it is spilled at once, in pieces
   * of at most this many bytes, and the producer waits until the writer is back within its limit.
   */
  readonly regionShareBytes: number;
  readonly blockBytes: number;
  /** Regions being spilled at once (the producer fills one more meanwhile). */
  readonly spillsInFlight: number;
}

/**
 * Budget = memoryLimitBytes, less the blob writer's retained bytes (an S3 part below the minimum, a
 * small push held whole), split in region-sized shares: the region being filled, and for each region
 * being spilled its raw blocks and its LZ4 output; a blob writer that copies what it is given (it
 * retains bytes: S3 multipart, a shuffle-server push) gets one spill in flight and one more share for
 * that copy, any other (a local file, a spill file) two spills in flight, so the checksums of one region
 * overlap the writing of the one before.
 */
export function writerBudget(producerMemoryBytes: number, numberOfSubpartitions: number, bufferSizeBytes: number, retainedBytes: number): WriterBudget {
  const spillsInFlight = retainedBytes > 0 ? 1 : 2;
  const shares = 1 + 2 * spillsInFlight + (retainedBytes > 0 ? 1 : 0);
  const floor = shares * numberOfSubpartitions * MIN_BLOCK_BYTES * 4 + retainedBytes;
  const memoryLimitBytes = Math.max(producerMemoryBytes, floor);
  const regionBytes = Math.floor((memoryLimitBytes - retainedBytes) / shares);
  const blockBytes = Math.max(MIN_BLOCK_BYTES, Math.min(bufferSizeBytes, Math.floor(regionBytes / (4 * numberOfSubpartitions))));
  return { memoryLimitBytes, regionBytes: regionBytes - blockBytes, regionShareBytes: regionBytes, blockBytes, spillsInFlight };
}
