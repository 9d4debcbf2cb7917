import { type Logger, type ShuffleDescriptor, ShuffleError, fencedError, partitionNotFound, serializeError } from '@weft/shuffle-api';
import type { ResolvedRemoteShuffleOptions } from '../config/remote-shuffle-options.js';
import type { PartitionFileSummary } from '../format/partition-file-writer.js';
import type { MetadataStore } from '../metadata/metadata-store.js';
import { SortMergePartitionWriter } from '../shuffle-core/sort-merge-partition-writer.js';
import type { BlobWriter } from '../storage/blob-store.js';
import type { SpillFile } from '../storage/spill-file.js';

export interface RemoteWriterOptions {
  readonly descriptor: ShuffleDescriptor;
  readonly writeId: string;
  readonly blob: BlobWriter;
  /** Where regions go before the object is written merged (S3 `upload: 'spill'`). */
  readonly spill?: SpillFile | undefined;
  readonly meta: MetadataStore;
  readonly options: ResolvedRemoteShuffleOptions;
  readonly logger: Logger;
  /** Called once the writer is closed (whatever its outcome). */
  readonly onClosed?: () => void;
}

/**
 * Writes one BLOCKING / BLOCKING_PERSISTENT partition attempt into one sort-merge data object in a blob
 * store (SortMergePartitionWriter does the framing, spilling and state), and commits it in the metadata
 * store: only then is it visible. First committer wins; a refused commit deletes this attempt's object.
 *
 * The attempt's lease is renewed every quarter of `attemptLeaseMs` until the writer ends; a lease found
 * lost (the attempt is no longer `writing`) breaks the writer.
 */
export class RemoteResultPartitionWriter extends SortMergePartitionWriter {
  constructor(private readonly w: RemoteWriterOptions) {
    const { producerMemoryBytes, bufferSizeBytes, maxRecordBytes, compression } = w.options;
    super({ descriptor: w.descriptor, blob: w.blob, ...(w.spill === undefined ? {} : { spill: w.spill }), producerMemoryBytes, bufferSizeBytes, maxRecordBytes, compression, logger: w.logger, action: 'writing', onClosed: w.onClosed });
    this.startLease(Math.max(25, Math.floor(w.options.attemptLeaseMs / 4)));
  }

  protected async commitAttempt(summary: PartitionFileSummary): Promise<ShuffleError | undefined> {
    const outcome = await this.w.meta.commit({
      jobId: this.descriptor.jobId,
      partitionId: this.partitionId,
      writeId: this.w.writeId,
      descriptor: this.descriptor,
      objectKey: this.w.blob.key,
      objectBytes: summary.objectBytes,
      numberOfRegions: summary.location.numberOfRegions,
      indexOffset: summary.location.indexOffset,
      indexLength: summary.location.indexLength,
      subpartitionBytes: this.subpartitionBytes,
      totalBytes: this.metrics.bytes,
      storedBytes: summary.storedBytes,
      committedAtMs: 0,
    });
    const producerId = this.descriptor.producer.producerId;
    switch (outcome.status) {
      case 'committed':
        return undefined;
      case 'conflict':
        return new ShuffleError('SHF_ERR_COMMIT_CONFLICT', `partition ${this.partitionId} was committed first by another attempt (${outcome.winner}); this attempt's data is discarded`, {
          context: { partitionId: this.partitionId, producerId },
        });
      case 'superseded':
        return new ShuffleError('SHF_ERR_COMMIT_CONFLICT', `attempt ${producerId} of partition ${this.partitionId} may no longer commit: the partition was registered again for ${outcome.current}; this attempt's data is discarded`, {
          context: { partitionId: this.partitionId, producerId },
        });
      case 'epoch-fenced':
        return fencedError(`commit of partition ${this.partitionId}`, { jobId: this.descriptor.jobId, epoch: outcome.epoch, newestEpoch: outcome.newestEpoch, partitionId: this.partitionId });
      case 'not-registered':
        return partitionNotFound(this.partitionId, 'it was released (or never registered) while this attempt wrote it; its data is discarded');
      default:
        return new ShuffleError('SHF_ERR_COMMIT_CONFLICT', `attempt ${producerId} of partition ${this.partitionId} may no longer commit: it is ${outcome.state} (its lease ran out)`, {
          context: { partitionId: this.partitionId, producerId },
        });
    }
  }

  protected override async afterCommit(): Promise<void> {
    await this.w.meta.closeAttempt(this.w.writeId).catch(() => undefined);
  }

  protected override async discardAttempt(cause: unknown, recordFailure: boolean): Promise<void> {
    if (recordFailure) await this.w.meta.failAttempt(this.w.writeId, serializeError(cause)).catch(() => undefined);
    await this.w.meta.closeAttempt(this.w.writeId).catch(() => undefined);
  }

  protected async renewLease(): Promise<void> {
    const state = await this.w.meta.heartbeat(this.w.writeId, this.w.blob.uploadId);
    if (state !== 'writing' && state !== 'committed' && this.writing) {
      this.breakWith(
        new ShuffleError('SHF_ERR_COMMIT_CONFLICT', `attempt ${this.descriptor.producer.producerId} of partition ${this.partitionId} lost its lease: it is ${state}`, {
          context: { partitionId: this.partitionId },
        }),
      );
    }
  }
}
