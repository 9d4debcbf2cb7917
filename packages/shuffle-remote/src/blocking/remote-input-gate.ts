import { type Logger, type ShuffleDescriptor, type ShuffleError, type SubpartitionRange, partitionNotFound } from '@weft/shuffle-api';
import type { ResolvedRemoteShuffleOptions } from '../config/remote-shuffle-options.js';
import type { MetadataStore } from '../metadata/metadata-store.js';
import { type PartitionSource, SortMergeInputGate } from '../shuffle-core/sort-merge-input-gate.js';
import type { BlobStore } from '../storage/blob-store.js';
import { resolveCommitted } from './partition-resolver.js';

export interface RemoteInputGateOptions {
  readonly inputs: readonly ShuffleDescriptor[];
  readonly range: SubpartitionRange;
  readonly meta: MetadataStore;
  readonly blob: BlobStore;
  readonly options: ResolvedRemoteShuffleOptions;
  readonly logger: Logger;
  readonly onClosed?: () => void;
}

/**
 * Reads persisted partitions from a blob store: for each input it resolves the committed attempt in the
 * metadata store (waiting while the partition is still being produced), then reads the gate's
 * subpartition range of its data object with ranged reads (SortMergeInputGate). A data object that is
 * gone is the partition's SHF_ERR_PARTITION_NOT_FOUND.
 */
export class RemoteInputGate extends SortMergeInputGate {
  constructor(private readonly g: RemoteInputGateOptions) {
    super({ inputs: g.inputs, range: g.range, readBufferBytes: g.options.readBufferBytes, maxRecordBytes: g.options.maxRecordBytes, onClosed: g.onClosed });
  }

  protected async openSource(descriptor: ShuffleDescriptor): Promise<PartitionSource> {
    const { options, meta, blob } = this.g;
    const commit = await resolveCommitted(descriptor, {
      meta,
      attemptLeaseMs: options.attemptLeaseMs,
      pollMaxMs: options.commitPollMaxMs,
      cancelled: () => this.closed,
      sleep: (ms) => this.sleep(ms),
    });
    const reader = await blob.openReader(commit.objectKey);
    return {
      reader,
      location: {
        numberOfSubpartitions: commit.subpartitionBytes.length,
        numberOfRegions: commit.numberOfRegions,
        indexOffset: commit.indexOffset,
        indexLength: commit.indexLength,
      },
    };
  }

  protected override describeError(error: ShuffleError, partitionId: string): ShuffleError | undefined {
    if (error.code === 'SHF_ERR_PARTITION_NOT_FOUND' && error.context['blobKey'] !== undefined) {
      return partitionNotFound(partitionId, `its data object ${String(error.context['blobKey'])} is gone from ${this.g.blob.description}`, error);
    }
    return undefined;
  }
}
