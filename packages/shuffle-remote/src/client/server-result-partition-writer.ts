import type { Logger, ShuffleDescriptor, ShuffleError } from '@weft/shuffle-api';
import { SortMergePartitionWriter } from '../shuffle-core/sort-merge-partition-writer.js';
import type { ResolvedShuffleServerClientOptions } from './client-options.js';
import { HttpPushBlobWriter } from './http-push-blob-writer.js';
import type { AttemptTarget, ShuffleServerClient } from './shuffle-server-client.js';

export interface ServerWriterOptions {
  readonly descriptor: ShuffleDescriptor;
  readonly target: AttemptTarget;
  readonly client: ShuffleServerClient;
  readonly options: ResolvedShuffleServerClientOptions;
  readonly logger: Logger;
  readonly onClosed?: () => void;
}

/**
 * Writes one partition attempt to a shuffle server: SortMergePartitionWriter frames records and encodes
 * full regions in the sort-merge layout, which are pushed as they are spilled — one streamed PUT, or one
 * replayable PUT at the end for a small partition (committed along with its push). `finish()` completes
 * the push and commits the attempt; a conflict (another attempt won) rejects with
 * SHF_ERR_COMMIT_CONFLICT, and the server deletes this attempt's data. `fail()` / early `close()` abort
 * the push and delete what the server holds of this attempt.
 */
export class ServerResultPartitionWriter extends SortMergePartitionWriter {
  private readonly blob: HttpPushBlobWriter;

  constructor(private readonly w: ServerWriterOptions) {
    // the blob writer reads the counts at completion, to commit a small partition with its push
    const subpartitionBytes = new Array<number>(w.descriptor.partition.numberOfSubpartitions).fill(0);
    const blob = new HttpPushBlobWriter({
      client: w.client,
      target: w.target,
      maxBufferedBytes: w.options.maxBufferedPushBytes,
      streamQueueBytes: 0,
      logger: w.logger,
      commitRequest: () => ({ descriptor: w.descriptor, subpartitionBytes }),
    });
    const { producerMemoryBytes, bufferSizeBytes, maxRecordBytes, compression } = w.options;
    super({ descriptor: w.descriptor, blob, producerMemoryBytes, bufferSizeBytes, maxRecordBytes, compression, logger: w.logger, action: 'pushing', subpartitionBytes, onClosed: w.onClosed });
    this.blob = blob;
  }

  /** Takes the attempt's lease at the server (so early readers wait) and keeps renewing it until the writer ends. */
  async open(): Promise<void> {
    await this.renewLease();
    this.startLease(Math.max(10, Math.floor(this.w.options.attemptLeaseMs / 3)));
  }

  protected async commitAttempt(): Promise<ShuffleError | undefined> {
    // a small partition was committed with its push; a refusal is an error thrown by the client
    if (this.blob.committed === undefined) await this.w.client.commit(this.w.target, this.w.descriptor, this.subpartitionBytes);
    return undefined;
  }

  protected async renewLease(): Promise<void> {
    await this.w.client.lease(this.w.target, this.w.options.attemptLeaseMs);
  }
}
