import {
  type ApproximateLosses,
  type JobId,
  type ResultPartitionId,
  ResultPartitionType,
  type ShuffleDescriptor,
  ShuffleError,
  fencedError,
  invalidArgument,
  partitionNotFound,
  resultPartitionTypeProperties,
  sumApproximateLosses,
} from '@weft/shuffle-api';
import { BlockingPartition } from './blocking-partition.js';
import type { MemoryShuffleOptions } from './memory-shuffle-options.js';
import { PipelinedPartition } from './pipelined-partition.js';

export type MemoryPartition = PipelinedPartition | BlockingPartition;

interface Entry {
  readonly descriptor: ShuffleDescriptor;
  readonly partition: MemoryPartition;
  /** The job master epoch it was registered under, if any. */
  readonly epoch: number | undefined;
  /** The environment whose writer produces (produced) this attempt; undefined until a writer is created. */
  producedBy: object | undefined;
}

/**
 * The state one MemoryShuffleMaster and its environments share in a process: registered jobs and the
 * partitions of each, keyed by job and partition id. A partition that is not here was never registered,
 * was released, or (pipelined) was consumed.
 */
export class MemoryShuffleRegistry {
  private readonly jobs = new Map<JobId, Map<ResultPartitionId, Entry>>();
  /** Who waits for the next registration of a partition (by job and partition id): gates of approximate inputs. */
  private readonly registrationListeners = new Map<string, Set<() => void>>();
  /** The newest job master epoch seen per job (kept after the job is unregistered, so an old master stays fenced). */
  private readonly epochs = new Map<JobId, number>();
  /** Per job and producing environment: what approximate partitions that are gone (consumed, released, replaced) lost. */
  private readonly retiredLosses = new Map<JobId, Map<object, ApproximateLosses>>();

  constructor(readonly options: Required<MemoryShuffleOptions>) {}

  /** Registers the job; with an epoch, raises the job's newest epoch to it (SHF_ERR_FENCED when a newer one was seen). */
  registerJob(jobId: JobId, epoch: number | undefined): void {
    if (epoch !== undefined) this.raiseEpoch(jobId, epoch, 'registration');
    if (!this.jobs.has(jobId)) this.jobs.set(jobId, new Map());
  }

  /**
   * SHF_ERR_FENCED for `what` when the job saw an epoch newer than `epoch` (a newer job master run
   * registered it); nothing when `epoch` is undefined (a master without one is never fenced).
   */
  checkEpoch(jobId: JobId, epoch: number | undefined, what: string): void {
    const newest = this.epochs.get(jobId);
    if (epoch !== undefined && newest !== undefined && epoch < newest) throw fencedError(what, { jobId, epoch, newestEpoch: newest });
  }

  private raiseEpoch(jobId: JobId, epoch: number, what: string, partitionId?: ResultPartitionId): void {
    const newest = this.epochs.get(jobId) ?? epoch;
    if (epoch < newest) throw fencedError(what, { jobId, epoch, newestEpoch: newest, ...(partitionId === undefined ? {} : { partitionId }) });
    this.epochs.set(jobId, epoch);
  }

  hasJob(jobId: JobId): boolean {
    return this.jobs.has(jobId);
  }

  /**
   * Creates the partition's state; a new attempt of a known partition replaces (and releases) the old one,
   * whose writer's `finish()` is then refused. SHF_ERR_FENCED for an epoch older than the job's newest.
   */
  register(descriptor: ShuffleDescriptor, epoch: number | undefined): void {
    const partitions = this.jobs.get(descriptor.jobId);
    if (partitions === undefined) {
      throw invalidArgument('jobId', `job ${descriptor.jobId} is not registered; call registerJob first`);
    }
    const id = descriptor.partition.partitionId;
    if (epoch !== undefined) this.raiseEpoch(descriptor.jobId, epoch, `registration of partition ${id}`, id);
    const previous = partitions.get(id);
    if (previous !== undefined) this.releaseEntry(previous, 'replaced by a new attempt');
    const { numberOfSubpartitions } = descriptor.partition;
    const { bufferSizeBytes, buffersPerPartition } = this.options;
    const { partitionType } = descriptor.partition;
    const approximate = partitionType === ResultPartitionType.PIPELINED_APPROXIMATE;
    const partition = resultPartitionTypeProperties(partitionType).mustBePipelined || approximate
      ? new PipelinedPartition({
          numberOfSubpartitions,
          bufferSizeBytes,
          buffersPerPartition,
          approximate,
          approximateReplayBytes: this.options.approximateReplayBytes,
          onFullyConsumed: () => this.forget(descriptor.jobId, id, partition),
        })
      : new BlockingPartition(numberOfSubpartitions, bufferSizeBytes);
    partitions.set(id, { descriptor, partition, epoch, producedBy: undefined });
    const key = `${descriptor.jobId}\u0000${id}`;
    const waiting = this.registrationListeners.get(key);
    this.registrationListeners.delete(key);
    for (const listener of waiting ?? []) listener();
  }

  /**
   * Calls `listener` once, at the next registration of partition `partitionId` of job `jobId` (a new
   * attempt, which an approximate input's gate rebinds to). Returns a function that cancels it.
   */
  whenRegistered(jobId: JobId, partitionId: ResultPartitionId, listener: () => void): () => void {
    const key = `${jobId}\u0000${partitionId}`;
    const listeners = this.registrationListeners.get(key) ?? new Set<() => void>();
    listeners.add(listener);
    this.registrationListeners.set(key, listeners);
    return () => void this.registrationListeners.get(key)?.delete(listener);
  }

  /**
   * Why the writer of `descriptor` writing `partition` may not commit: a newer registration of the
   * partition replaced it (SHF_ERR_COMMIT_CONFLICT), or a newer job master epoch registered in the job
   * (SHF_ERR_FENCED). Undefined when it may (or when the partition was released: the writer's data is
   * dropped with it).
   */
  commitRefusal(descriptor: ShuffleDescriptor, partition: MemoryPartition): ShuffleError | undefined {
    const id = descriptor.partition.partitionId;
    const entry = this.jobs.get(descriptor.jobId)?.get(id);
    if (entry === undefined) return undefined;
    if (entry.partition !== partition) {
      return new ShuffleError(
        'SHF_ERR_COMMIT_CONFLICT',
        `attempt ${descriptor.producer.producerId} of partition ${id} may no longer commit: ${entry.descriptor.producer.producerId} was registered after it; its data is discarded`,
        { context: { partitionId: id, producerId: descriptor.producer.producerId } },
      );
    }
    const newest = this.epochs.get(descriptor.jobId);
    if (entry.epoch !== undefined && newest !== undefined && entry.epoch < newest) {
      return fencedError(`commit of partition ${id}`, { jobId: descriptor.jobId, epoch: entry.epoch, newestEpoch: newest, partitionId: id });
    }
    return undefined;
  }

  /**
   * The partition's state for its one writer, created by `producer` (an environment); NOT_FOUND if
   * unknown, INVALID_ARGUMENT if it has a writer.
   */
  claimForWriter(descriptor: ShuffleDescriptor, producer: object): MemoryPartition {
    const entry = this.lookup(descriptor.jobId, descriptor.partition.partitionId);
    if (entry.descriptor.producer.producerId !== descriptor.producer.producerId) {
      throw new ShuffleError(
        'SHF_ERR_COMMIT_CONFLICT',
        `attempt ${descriptor.producer.producerId} of partition ${descriptor.partition.partitionId} may not write it: ${entry.descriptor.producer.producerId} was registered after it`,
        { context: { partitionId: descriptor.partition.partitionId, producerId: descriptor.producer.producerId } },
      );
    }
    if (entry.producedBy !== undefined) {
      throw invalidArgument('descriptor', `partition ${descriptor.partition.partitionId} already has a writer; register a new attempt to write it again`);
    }
    entry.producedBy = producer;
    return entry.partition;
  }

  /**
   * Releases, in every job, the partitions with these ids whose current attempt `producer` wrote (or is
   * writing); others, and ids not known, are left alone. Returns how many were released.
   */
  releaseProducedBy(producer: object, partitionIds: readonly ResultPartitionId[]): number {
    let released = 0;
    for (const [jobId, partitions] of [...this.jobs]) {
      for (const id of partitionIds) {
        const entry = partitions.get(id);
        if (entry === undefined || entry.producedBy !== producer) continue;
        partitions.delete(id);
        this.releaseEntry(entry, `released locally by the environment that produced it (job ${jobId})`);
        released++;
      }
    }
    return released;
  }

  /** The partition's state for a reader; throws SHF_ERR_PARTITION_NOT_FOUND. */
  find(jobId: JobId, partitionId: ResultPartitionId): MemoryPartition {
    return this.lookup(jobId, partitionId).partition;
  }

  release(jobId: JobId, partitionId: ResultPartitionId, reason: string): void {
    const entry = this.jobs.get(jobId)?.get(partitionId);
    if (entry === undefined) return;
    this.jobs.get(jobId)?.delete(partitionId);
    this.releaseEntry(entry, reason);
  }

  /**
   * What the PIPELINED_APPROXIMATE partitions of `jobId` that `producer` (an environment) writes or wrote
   * lost to readers that went away (ApproximateLosses), summed over those still here and those gone.
   */
  approximateLosses(jobId: JobId, producer: object): ApproximateLosses {
    const live: ApproximateLosses[] = [];
    for (const entry of this.jobs.get(jobId)?.values() ?? []) {
      if (entry.producedBy === producer && entry.partition instanceof PipelinedPartition) live.push(entry.partition.approximateLosses);
    }
    const retired = this.retiredLosses.get(jobId)?.get(producer);
    return sumApproximateLosses(retired === undefined ? live : [retired, ...live]);
  }

  /** Releases every partition of the job except persistent ones, and forgets the job (and what its approximate partitions lost). */
  unregisterJob(jobId: JobId): void {
    const partitions = this.jobs.get(jobId);
    if (partitions === undefined) return;
    for (const [id, entry] of partitions) {
      if (resultPartitionTypeProperties(entry.descriptor.partition.partitionType).persistent) continue;
      partitions.delete(id);
      this.releaseEntry(entry, 'its job was unregistered');
    }
    this.retiredLosses.delete(jobId);
    if (partitions.size === 0) this.jobs.delete(jobId);
  }

  /** Finished blocking partitions of the job, with bytes per subpartition. */
  finished(jobId: JobId): { descriptor: ShuffleDescriptor; subpartitionBytes: readonly number[] }[] {
    const out: { descriptor: ShuffleDescriptor; subpartitionBytes: readonly number[] }[] = [];
    for (const entry of this.jobs.get(jobId)?.values() ?? []) {
      if (entry.partition instanceof BlockingPartition && entry.partition.isFinished) {
        out.push({ descriptor: entry.descriptor, subpartitionBytes: [...entry.partition.subpartitionBytes] });
      }
    }
    return out;
  }

  /** Releases everything (the master closed). */
  clear(): void {
    for (const jobId of [...this.jobs.keys()]) {
      for (const [id, entry] of this.jobs.get(jobId)!) this.releaseEntry(entry, `the shuffle service closed (${id})`);
    }
    this.jobs.clear();
  }

  private lookup(jobId: JobId, partitionId: ResultPartitionId): Entry {
    const entry = this.jobs.get(jobId)?.get(partitionId);
    if (entry === undefined) {
      throw partitionNotFound(partitionId, `job ${jobId} has no such partition (never registered, released, or already consumed)`);
    }
    return entry;
  }

  private forget(jobId: JobId, partitionId: ResultPartitionId, partition: MemoryPartition): void {
    const partitions = this.jobs.get(jobId);
    const entry = partitions?.get(partitionId);
    if (entry?.partition !== partition) return;
    partitions!.delete(partitionId);
    this.retire(entry);
  }

  private releaseEntry(entry: Entry, reason: string): void {
    entry.partition.release(partitionNotFound(entry.descriptor.partition.partitionId, `released: ${reason}`));
    this.retire(entry);
  }

  private retire(entry: Entry): void {
    const { producedBy, partition, descriptor } = entry;
    if (producedBy === undefined || !(partition instanceof PipelinedPartition) || descriptor.partition.partitionType !== ResultPartitionType.PIPELINED_APPROXIMATE) return;
    const byProducer = this.retiredLosses.get(descriptor.jobId) ?? new Map<object, ApproximateLosses>();
    const before = byProducer.get(producedBy);
    byProducer.set(producedBy, before === undefined ? partition.approximateLosses : sumApproximateLosses([before, partition.approximateLosses]));
    this.retiredLosses.set(descriptor.jobId, byProducer);
  }
}
