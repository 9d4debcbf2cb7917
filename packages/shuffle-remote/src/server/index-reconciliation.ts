import type { Logger } from '@weft/shuffle-api';
import type { RedisCommitIndex } from '../coordinator/redis-commit-index.js';
import type { CommittedPartition } from '../protocol/committed-partition.js';
import type { PartitionStore } from './partition-store.js';
import type { ServerTier } from './server-tier.js';

/**
 * Whether the commit index still counts this server's committed copy of a partition: some location of
 * the partition names this server and this attempt. A copy it does not count is stale — its job ended,
 * or another attempt was registered, while this server was down (releases skip a dead server) — and is
 * never served or kept.
 */
export async function countedByIndex(index: RedisCommitIndex, serverId: string, record: CommittedPartition): Promise<boolean> {
  const locations = await index.locations(record.jobId, record.partitionId);
  return locations.some((l) => l.serverId === serverId && l.attempt === record.attempt);
}

/**
 * Start-up with a registry: drops every committed partition the commit index no longer counts as this
 * server's (see `countedByIndex`), its S3 tier copy too. So a server that was down when its job ended
 * does not keep the job's data for good, and a dead attempt's data can neither be read for a later
 * attempt nor block its commit. Returns how many it dropped.
 */
export async function dropPartitionsTheIndexForgot(request: {
  readonly store: PartitionStore;
  readonly index: RedisCommitIndex;
  readonly tier: ServerTier | undefined;
  readonly logger: Logger;
}): Promise<number> {
  const { store, index, tier, logger } = request;
  let dropped = 0;
  for (const jobId of store.committedJobIds()) {
    for (const record of await store.listJob(jobId)) {
      if (await countedByIndex(index, store.serverId, record)) continue;
      await store.withLock(jobId, record.partitionId, async () => {
        if (record.tiered) await tier?.delete(record.objectKey);
        await store.release(jobId, record.partitionId);
      });
      dropped++;
    }
  }
  if (dropped > 0) logger.info({ dropped }, 'dropped committed partitions the commit index no longer counts (released or replaced while this server was down)');
  return dropped;
}
