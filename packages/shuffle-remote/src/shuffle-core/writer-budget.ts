import { MIN_BLOCK_BYTES } from './sort-buffer.js';

/** How a writer splits its memory budget (see RemoteShuffleOptions.producerMemoryBytes). */
export interface WriterBudget {
  readonly memoryLimitBytes: number;
  /** The sort buffer spills a region when it holds this much. */
  readonly regionBytes: number;
  readonly blockBytes: number;
}

/**
 * Budget = memoryLimitBytes. At most four region-sized shares are alive at once — the region being
 * filled, the one being spilled (its raw blocks until appended), its LZ4 output, and (S3) the part body
 * being uploaded — plus the blob writer's retained tail (an S3 part below the minimum) and the index.
 */
export function writerBudget(producerMemoryBytes: number, numberOfSubpartitions: number, bufferSizeBytes: number, retainedBytes: number): WriterBudget {
  const floor = 4 * numberOfSubpartitions * MIN_BLOCK_BYTES * 4 + retainedBytes;
  const memoryLimitBytes = Math.max(producerMemoryBytes, floor);
  const regionBytes = Math.floor((memoryLimitBytes - retainedBytes) / 4);
  const blockBytes = Math.max(MIN_BLOCK_BYTES, Math.min(bufferSizeBytes, Math.floor(regionBytes / (4 * numberOfSubpartitions))));
  return { memoryLimitBytes, regionBytes: regionBytes - blockBytes, blockBytes };
}
