import type { JobId, ResultPartitionId } from './ids.js';

/** One finished partition that can no longer be read: the partition, and the producer attempt whose commit was lost. */
export interface LostPartition {
  readonly partitionId: ResultPartitionId;
  /** The attempt (ProducerDescriptor.attempt) whose committed output is gone. */
  readonly attempt: number;
}

/**
 * What a ShuffleMaster tells the job through `JobShuffleContext.partitionsLost` (Flink's
 * `JobShuffleContext.stopTrackingAndReleasePartitions`, which flink-remote-shuffle calls when a shuffle
 * worker is lost): these finished partitions of `jobId` cannot be read any more — the storage holding
 * their only copy is gone (a shuffle server process died, and no replica or tier copy holds them). Plain
 * JSON.
 */
export interface PartitionsLostNotice {
  readonly jobId: JobId;
  /** Each lost partition once; never empty. */
  readonly partitions: readonly LostPartition[];
  /** Why, for logs and failover records: e.g. `shuffle server s-2 (http://10.0.0.7:7070) refuses connections`. */
  readonly reason: string;
}
