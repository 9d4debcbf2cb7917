import { createBlobStore, createMetadataStore, type RemoteShuffleServiceFactory } from '@weft/shuffle-remote';
import type { DamagePartitionRequest, FaultActions } from './fault-harness.js';

/**
 * Damages committed partitions of the persisted blocking shuffle through its public stores: the
 * metadata store names the committed attempt's data object, which is deleted, or rewritten with one byte
 * flipped (read whole, deleted, written again — the blob store has no in-place writes). The byte is drawn
 * from the data blocks (`[0, indexOffset)`), so a consumer's per-block CRC32C catches it; an object with
 * no data gets a byte of its index flipped instead.
 */
export function remotePartitionDamage(factory: RemoteShuffleServiceFactory): Required<Pick<FaultActions, 'damagePartition'>> {
  return {
    async damagePartition(request: DamagePartitionRequest): Promise<string> {
      const blob = createBlobStore(factory.options.store);
      const meta = createMetadataStore(factory.options);
      try {
        await Promise.all([blob.start(), meta.start()]);
        const { commit } = await meta.lookupPartition(request.jobId, request.partitionId);
        if (commit === undefined) return `partition ${request.partitionId} was not committed: nothing damaged`;
        if (request.mode === 'delete') {
          await blob.delete(commit.objectKey);
          return `deleted the data object ${commit.objectKey} of partition ${request.partitionId}`;
        }
        const reader = await blob.openReader(commit.objectKey);
        let bytes: Uint8Array;
        try {
          bytes = await reader.read(0, commit.objectBytes);
        } finally {
          await reader.close();
        }
        const [from, to] = commit.indexOffset > 0 ? [0, commit.indexOffset] : [commit.indexOffset, commit.indexOffset + commit.indexLength];
        const offset = request.random.int(from, Math.max(from + 1, to));
        bytes[offset] = (bytes[offset] as number) ^ 0xff;
        await blob.delete(commit.objectKey);
        const writer = await blob.createWriter(commit.objectKey);
        try {
          await writer.append([bytes]);
          await writer.complete();
        } catch (error) {
          await writer.abort();
          throw error;
        }
        return `flipped byte ${offset} of ${commit.objectBytes} in the data object ${commit.objectKey} of partition ${request.partitionId}`;
      } finally {
        await Promise.allSettled([blob.close(), meta.close()]);
      }
    },
  };
}
