import {
  type ApproximateLosses,
  type ResultPartitionId,
  type ShuffleDescriptor,
  ShuffleError,
  invalidArgument,
  partitionNotFound,
  sumApproximateLosses,
} from '@weft/shuffle-api';
import { ProducedPartition } from './produced-partition.js';

interface Entry {
  readonly descriptor: ShuffleDescriptor;
  readonly partition: ProducedPartition;
  claimed: boolean;
}

export interface PartitionPoolSizes {
  readonly bufferSizeBytes: number;
  readonly buffersPerPartition: number;
  readonly maxBuffersPerPipelinedPartition: number;
  /** PIPELINED_APPROXIMATE: each subpartition's upstream backup, in bytes (NetworkShuffleOptions.approximateReplayBytes). */
  readonly approximateReplayBytes: number;
}

const key = (jobId: string, partitionId: string): string => `${jobId}\u0000${partitionId}`;

/**
 * The partitions one environment produces, announced by the master (`register`) before their writer
 * exists, so a consumer that connects first waits for data instead of being refused. A partition not
 * here was never announced, was released, or was consumed: its readers get SHF_ERR_PARTITION_NOT_FOUND.
 */
export class ProducedPartitionRegistry {
  private readonly entries = new Map<string, Entry>();
  /** Per job: what approximate partitions that are gone (consumed, released, replaced) lost to consumers that went away. */
  private readonly retiredLosses = new Map<string, ApproximateLosses>();

  constructor(private readonly sizes: PartitionPoolSizes) {}

  get size(): number {
    return this.entries.size;
  }

  /** Creates the partition's state; a new attempt replaces (and releases) the old one, whose finish() is then refused. */
  register(descriptor: ShuffleDescriptor): void {
    const k = key(descriptor.jobId, descriptor.partition.partitionId);
    const previous = this.entries.get(k);
    if (previous !== undefined) {
      if (previous.descriptor.producer.producerId === descriptor.producer.producerId) return;
      this.drop(k, previous, 'replaced by a new attempt');
    }
    const { partitionType } = descriptor.partition;
    // PIPELINED_APPROXIMATE is bounded too: its producer waits for a slow consumer, never for a gone one
    const bounded = partitionType === 'PIPELINED_BOUNDED' || partitionType === 'PIPELINED_APPROXIMATE';
    const partition: ProducedPartition = new ProducedPartition({
      numberOfSubpartitions: descriptor.partition.numberOfSubpartitions,
      bufferSizeBytes: this.sizes.bufferSizeBytes,
      buffers: bounded ? this.sizes.buffersPerPartition : this.sizes.maxBuffersPerPipelinedPartition,
      approximate: partitionType === 'PIPELINED_APPROXIMATE',
      approximateReplayBytes: this.sizes.approximateReplayBytes,
      onFullyConsumed: () => {
        const entry = this.entries.get(k);
        if (entry?.partition !== partition) return;
        this.entries.delete(k);
        this.retire(entry);
      },
    });
    this.entries.set(k, { descriptor, partition, claimed: false });
  }

  /** The partition for its one writer; NOT_FOUND if unknown, COMMIT_CONFLICT for a replaced attempt, INVALID_ARGUMENT if claimed. */
  claimForWriter(descriptor: ShuffleDescriptor): ProducedPartition {
    const entry = this.lookup(descriptor.jobId, descriptor.partition.partitionId, undefined);
    if (entry.descriptor.producer.producerId !== descriptor.producer.producerId) throw this.conflict(descriptor, entry);
    if (entry.claimed) {
      throw invalidArgument('descriptor', `partition ${descriptor.partition.partitionId} already has a writer; register a new attempt to write it again`);
    }
    entry.claimed = true;
    return entry.partition;
  }

  /** Why the writer of `descriptor` writing `partition` may not finish: a newer attempt replaced it. */
  commitRefusal(descriptor: ShuffleDescriptor, partition: ProducedPartition): ShuffleError | undefined {
    const entry = this.entries.get(key(descriptor.jobId, descriptor.partition.partitionId));
    if (entry === undefined || entry.partition === partition) return undefined;
    return this.conflict(descriptor, entry);
  }

  /** The partition a consumer asks for, of attempt `producerId`; throws SHF_ERR_PARTITION_NOT_FOUND. */
  find(jobId: string, partitionId: string, producerId: string): ProducedPartition {
    return this.lookup(jobId, partitionId, producerId).partition;
  }

  /** Releases one partition (of `producerId` only, when given). */
  release(jobId: string, partitionId: string, producerId: string | undefined, reason: string): void {
    const k = key(jobId, partitionId);
    const entry = this.entries.get(k);
    if (entry === undefined || (producerId !== undefined && entry.descriptor.producer.producerId !== producerId)) return;
    this.drop(k, entry, reason);
  }

  /** Releases every partition of the job, and forgets what its approximate partitions lost. */
  releaseJob(jobId: string, reason: string): void {
    for (const [k, entry] of [...this.entries]) if (entry.descriptor.jobId === jobId) this.drop(k, entry, reason);
    this.retiredLosses.delete(jobId);
  }

  /** Releases the partitions with these ids, in any job; returns how many. */
  releaseIds(partitionIds: readonly ResultPartitionId[], reason: string): number {
    const ids = new Set<string>(partitionIds);
    let released = 0;
    for (const [k, entry] of [...this.entries]) {
      if (!ids.has(entry.descriptor.partition.partitionId)) continue;
      this.drop(k, entry, reason);
      released++;
    }
    return released;
  }

  /**
   * What the approximate partitions of `jobId` produced here lost to consumers that went away, summed over
   * those still held and those gone (ApproximateLosses); zeros for a job without any.
   */
  approximateLosses(jobId: string): ApproximateLosses {
    const live = [...this.entries.values()].filter((e) => e.descriptor.jobId === jobId).map((e) => e.partition.approximateLosses);
    const retired = this.retiredLosses.get(jobId);
    return sumApproximateLosses(retired === undefined ? live : [retired, ...live]);
  }

  clear(reason: string): void {
    for (const [k, entry] of [...this.entries]) this.drop(k, entry, reason);
  }

  private lookup(jobId: string, partitionId: string, producerId: string | undefined): Entry {
    const entry = this.entries.get(key(jobId, partitionId));
    if (entry === undefined) {
      throw partitionNotFound(partitionId, `job ${jobId} has no such partition here (never registered, released, or already consumed)`);
    }
    if (producerId !== undefined && entry.descriptor.producer.producerId !== producerId) {
      throw partitionNotFound(partitionId, `attempt ${producerId} is not produced here; attempt ${entry.descriptor.producer.producerId} replaced it`);
    }
    return entry;
  }

  private conflict(descriptor: ShuffleDescriptor, entry: Entry): ShuffleError {
    return new ShuffleError(
      'SHF_ERR_COMMIT_CONFLICT',
      `attempt ${descriptor.producer.producerId} of partition ${descriptor.partition.partitionId} may not write it: ${entry.descriptor.producer.producerId} was registered after it`,
      { context: { partitionId: descriptor.partition.partitionId, producerId: descriptor.producer.producerId } },
    );
  }

  private drop(k: string, entry: Entry, reason: string): void {
    this.entries.delete(k);
    entry.partition.release(partitionNotFound(entry.descriptor.partition.partitionId, `released: ${reason}`));
    this.retire(entry);
  }

  private retire(entry: Entry): void {
    if (entry.descriptor.partition.partitionType !== 'PIPELINED_APPROXIMATE') return;
    const { jobId } = entry.descriptor;
    const before = this.retiredLosses.get(jobId);
    const losses = entry.partition.approximateLosses;
    this.retiredLosses.set(jobId, before === undefined ? losses : sumApproximateLosses([before, losses]));
  }
}
