import type { ApproximateLosses } from './approximate-cleanup.js';
import type { JobId, ResultPartitionId } from './ids.js';
import type { InputGate } from './input-gate.js';
import type { Logger } from './logger.js';
import type { ResultPartitionWriter } from './result-partition-writer.js';
import type { ShuffleLocation } from './producer-descriptor.js';
import type { ShuffleDescriptor } from './shuffle-descriptor.js';
import type { SubpartitionRange } from './subpartition-range.js';

export interface CreateWriterRequest {
  readonly descriptor: ShuffleDescriptor;
  /** Child logger for this writer; defaults to the environment's. */
  readonly logger?: Logger;
  /**
   * At most this many bytes for the writer's own buffers (its share of the producing task's memory
   * budget): an environment whose writers buffer records caps its per-writer setting at it
   * (`producerMemoryBytes` of shuffle-remote); one whose buffers are bounded otherwise (credits) may
   * ignore it. A writer that cannot work in so little (a floor of its own, such as S3 multipart parts)
   * takes its floor. A positive whole number; an environment that uses it refuses anything else
   * (SHF_ERR_INVALID_ARGUMENT naming `memoryBytes`). @defaultValue the environment's setting
   */
  readonly memoryBytes?: number;
}

export interface CreateInputGateRequest {
  readonly jobId: JobId;
  /** The partitions this input reads, one descriptor each (all of one intermediate result, normally). */
  readonly inputs: readonly ShuffleDescriptor[];
  /** The subpartitions read from every input partition. */
  readonly subpartitions: SubpartitionRange;
  /** A name for logs and errors, e.g. the consuming execution attempt. */
  readonly consumerId?: string;
  readonly logger?: Logger;
  /**
   * At most this many bytes for the gate's read buffers together (its share of the consuming task's
   * memory budget): an environment that reads ahead into buffers of its own sizes them to fit (shuffle-remote:
   * reads of a quarter of it, never above its `readBufferBytes`, never below 4 KiB); others may ignore it.
   * A positive whole number; an environment that uses it refuses anything else (SHF_ERR_INVALID_ARGUMENT
   * naming `memoryBytes`). @defaultValue the environment's setting
   */
  readonly memoryBytes?: number;
  /**
   * PIPELINED_APPROXIMATE inputs of a consumer attempt restarted from a checkpoint: per channel (in channel
   * order: each input's subpartitions in turn), the record position its restored state read up to. A
   * producer that still keeps the records from there (its upstream backup) serves them again, and its
   * `channel-resumed` names that position; one that does not serves the next whole record, as without it.
   * Undefined for a channel: none (the engine gives none for a channel whose producer attempt is not the
   * one the restored state read). Ignored for other types. @defaultValue none
   */
  readonly resumeFrom?: readonly (number | undefined)[];
}

/**
 * The worker side of a shuffle service (Flink's ShuffleEnvironment), one per task executor.
 *
 * Creates writers and gates from descriptors a ShuffleMaster produced (possibly in another process).
 * The task that asked for a writer or gate owns it and must close it; the environment's `close()`
 * aborts whatever is still open; it is memoized (a second call resolves once the first one's work is done),
 * and `createResultPartitionWriter` / `createInputGate` after it reject with SHF_ERR_CLOSED. Creation validates its arguments (SHF_ERR_INVALID_ARGUMENT naming the
 * field) but does not wait for data: an unknown or released partition surfaces on the first read.
 */
export interface ShuffleEnvironment extends AsyncDisposable {
  readonly shuffleServiceId: string;

  /**
   * Optional: connects to what the environment needs (stores, servers) so that a bad setting fails here,
   * when the task executor starts (SHF_ERR_INVALID_CONFIG / SHF_ERR_STORAGE_UNAVAILABLE naming it), and
   * not at the first writer or gate. Idempotent. An engine calls it, when present, before deploying tasks;
   * an environment without it is ready once created.
   */
  start?(): Promise<void>;

  /**
   * Optional: where this environment serves the partitions it produces to consumers in other task
   * executors, once `start()` resolved (a network shuffle's listening address). An engine that finds it
   * may place a pipelined region's producers and consumers on different executors, registering each
   * partition with `producer.location` set to it. Absent (an in-memory shuffle): the partitions this
   * environment produces are read only inside its own executor.
   */
  readonly location?: ShuffleLocation | undefined;

  createResultPartitionWriter(request: CreateWriterRequest): Promise<ResultPartitionWriter>;

  createInputGate(request: CreateInputGateRequest): Promise<InputGate>;

  /**
   * Drops what this environment holds locally of these partitions (Flink's releasePartitionsLocally): the
   * data of partitions it produced and keeps itself (in its memory or on its disk), whether their writers
   * finished or still run. Afterwards a reader of such a partition gets SHF_ERR_PARTITION_NOT_FOUND.
   * Ids it holds nothing of (produced by another environment, already released, unknown) are ignored, so
   * the call is idempotent. An implementation whose data lives outside the environment (a blob store, a
   * shuffle server) holds nothing locally and does nothing here; `ShuffleMaster.releasePartitionExternally`
   * releases that data.
   */
  releasePartitionsLocally(partitionIds: readonly ResultPartitionId[]): Promise<void>;

  /**
   * Optional: what the PIPELINED_APPROXIMATE partitions of `jobId` that this environment produces (or
   * produced, until the job is unregistered) lost to consumers that went away before their end, summed and
   * counted (ApproximateLosses: `buffersDropped`, `recordsDropped`, `partialRecordsSkipped`, `reconnects`).
   */
  approximateLosses?(jobId: JobId): ApproximateLosses;

  /**
   * Optional (Flink's `ShuffleEnvironment.updatePartitionInfo`): the job master registered a new attempt
   * of a PIPELINED_APPROXIMATE partition; `descriptor` is what `registerPartitionWithProducer` returned.
   * Tells every open gate of this environment that reads the partition (only those of `consumerId`, the
   * `CreateInputGateRequest.consumerId`, when given): `InputGate.updatePartitionInfo`. Returns how many
   * gates were told (0: none reads it here). SHF_ERR_INVALID_ARGUMENT for a bad descriptor or one whose
   * partition a gate reads as another type. An environment whose gates learn of new attempts by
   * themselves (in memory) does not have it.
   */
  updatePartitionInfo?(descriptor: ShuffleDescriptor, consumerId?: string): number;

  close(): Promise<void>;
}
