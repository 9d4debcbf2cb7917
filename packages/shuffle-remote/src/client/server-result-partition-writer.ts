import { type Logger, type ShuffleDescriptor, type ShuffleError, isShuffleError } from '@weft/shuffle-api';
import { SortMergePartitionWriter } from '../shuffle-core/sort-merge-partition-writer.js';
import type { ResolvedShuffleServerClientOptions } from './client-options.js';
import { ReplicatedPushBlobWriter } from './replicated-push-blob-writer.js';
import type { ServerLocation } from './server-descriptor.js';
import type { AttemptTarget, ShuffleServerClient } from './shuffle-server-client.js';

export interface ServerWriterOptions {
  readonly descriptor: ShuffleDescriptor;
  /** The attempt on each server that gets a copy: the primary, then the replicas. */
  readonly targets: readonly (AttemptTarget & { readonly serverId: string })[];
  /** Where a copy whose server dies may move (descriptor `details.spares`). */
  readonly spares: readonly ServerLocation[];
  readonly client: ShuffleServerClient;
  readonly options: ResolvedShuffleServerClientOptions;
  readonly logger: Logger;
  readonly onClosed?: () => void;
}

/**
 * Writes one partition attempt to one or more shuffle servers: SortMergePartitionWriter frames records
 * and encodes full regions in the sort-merge layout, which are pushed as they are spilled — one
 * streamed PUT per server, or one replayable PUT at the end for a small partition (committed along
 * with its push) — through a ReplicatedPushBlobWriter, which gives every replica the same bytes and
 * survives a server's death when another copy remains or the copy can move to a spare. `finish()`
 * completes the pushes and commits the attempt on every server still holding a copy; a conflict (another
 * attempt won) rejects with SHF_ERR_COMMIT_CONFLICT, and the server deletes this attempt's data.
 * `fail()` / early `close()` abort the pushes and delete what the servers hold of this attempt.
 */
export class ServerResultPartitionWriter extends SortMergePartitionWriter {
  private readonly blob: ReplicatedPushBlobWriter;

  constructor(private readonly w: ServerWriterOptions) {
    // the blob writer reads the counts at completion, to commit a small partition with its push
    const subpartitionBytes = new Array<number>(w.descriptor.partition.numberOfSubpartitions).fill(0);
    const blob = new ReplicatedPushBlobWriter({
      client: w.client,
      targets: w.targets,
      spares: w.spares,
      maxBufferedBytes: w.options.maxBufferedPushBytes,
      streamQueueBytes: 0,
      attemptLeaseMs: w.options.attemptLeaseMs,
      // several servers may hold this attempt: its commit elsewhere is a copy, not a rival
      replica: w.targets.length > 1 || w.spares.length > 0,
      logger: w.logger,
      commitRequest: () => ({ descriptor: w.descriptor, subpartitionBytes }),
    });
    const { producerMemoryBytes, bufferSizeBytes, maxRecordBytes, compression } = w.options;
    super({ descriptor: w.descriptor, blob, producerMemoryBytes, bufferSizeBytes, maxRecordBytes, compression, logger: w.logger, action: 'pushing', subpartitionBytes, onClosed: w.onClosed });
    this.blob = blob;
  }

  /** The servers holding a copy now (after any move or drop), primary first. */
  get servers(): ServerLocation[] {
    return this.blob.servers;
  }

  /** Takes the attempt's lease at the servers (so early readers wait) and keeps renewing it until the writer ends. */
  async open(): Promise<void> {
    await this.blob.lease();
    this.startLease(Math.max(10, Math.floor(this.w.options.attemptLeaseMs / 3)));
  }

  protected async commitAttempt(): Promise<ShuffleError | undefined> {
    // a small partition was committed with its push; a refusal is an error thrown by the client
    await this.blob.commit();
    return undefined;
  }

  protected async renewLease(): Promise<void> {
    try {
      await this.blob.lease();
    } catch (error) {
      // no server holding a copy is left: the writer cannot finish
      if (this.writing && isShuffleError(error) && error.retryable) this.breakWith(error);
      throw error;
    }
  }
}
