import { type ShuffleDescriptor, ShuffleError, closedError, deserializeError, partitionNotFound } from '@weft/shuffle-api';
import type { CommitRecord, MetadataStore } from '../metadata/metadata-store.js';

export interface ResolveOptions {
  readonly meta: MetadataStore;
  readonly attemptLeaseMs: number;
  readonly pollMaxMs: number;
  /** True once the caller gave up (its gate closed). */
  readonly cancelled: () => boolean;
  /** Waits `ms` or until cancelled. */
  readonly sleep: (ms: number) => Promise<void>;
}

/**
 * Finds the committed attempt of a partition, waiting while it is registered and still being produced.
 * SHF_ERR_PARTITION_NOT_FOUND when it is not registered (never, or released); SHF_ERR_PRODUCER_FAILED
 * when the descriptor's producer attempt failed or stopped renewing its lease without committing.
 */
export async function resolveCommitted(descriptor: ShuffleDescriptor, options: ResolveOptions): Promise<CommitRecord> {
  const { jobId } = descriptor;
  const { partitionId } = descriptor.partition;
  let delay = 5;
  for (;;) {
    if (options.cancelled()) throw closedError('input gate');
    const lookup = await options.meta.lookupPartition(jobId, partitionId);
    if (lookup.commit !== undefined) return lookup.commit;
    if (!lookup.registered) throw partitionNotFound(partitionId, 'it is not registered: released, or never produced');
    const producerId = descriptor.producer.producerId;
    for (const attempt of lookup.attempts) {
      if (attempt.producerId !== producerId) continue;
      const stale = attempt.state === 'writing' && lookup.nowMs - attempt.heartbeatAtMs > options.attemptLeaseMs;
      if (attempt.state === 'failed' || attempt.state === 'abandoned' || stale) {
        const cause =
          attempt.failure !== undefined
            ? deserializeError(attempt.failure)
            : new Error(`producer ${producerId} stopped renewing its lease (last at ${new Date(attempt.heartbeatAtMs).toISOString()})`);
        throw new ShuffleError('SHF_ERR_PRODUCER_FAILED', `producer ${producerId} of partition ${partitionId} failed: ${cause.message}`, {
          cause,
          context: { partitionId, producerId },
        });
      }
    }
    await options.sleep(delay);
    delay = Math.min(delay * 2, options.pollMaxMs);
  }
}
