import type { PartitionDescriptor, ProducerDescriptor, ShuffleDescriptor, SubpartitionRange } from '@weft/shuffle-api';
import type { TaskFault } from '../faults/fault-injector.js';

/**
 * One output of a task: the result partition its subtask writes for one job edge. Plain JSON.
 * BLOCKING partitions are registered by the job master (`descriptor` set); pipelined ones by the task
 * executor that runs the region, with its own pipelined ShuffleMaster (`descriptor` absent) — unless the
 * job master spread the region over several executors: then it registered them too (`descriptor` set,
 * its producer's `location` the executor's). PIPELINED_APPROXIMATE partitions (`approximate`) are pipelined
 * ones registered by the executor too, whose consumers are other regions of the same executor: they find the
 * descriptor of the partition's current attempt in the executor (ApproximatePartitions).
 */
export interface OutputDeployment {
  readonly edgeIndex: number;
  readonly edgeId: string;
  readonly pipelined: boolean;
  /** PIPELINED_APPROXIMATE (then `pipelined` too). @defaultValue false */
  readonly approximate?: boolean;
  /** An approximate output: the consumer subtask (`"<vertex>#<i>"`) of each subpartition, which its losses are counted for. */
  readonly consumerIds?: readonly string[];
  readonly partition: PartitionDescriptor;
  readonly producer: ProducerDescriptor;
  readonly descriptor?: ShuffleDescriptor;
  /** Report the bytes of each subpartition with the task's result (its consumer's parallelism is decided from them). @defaultValue false */
  readonly reportSubpartitionBytes?: boolean;
}

/** One partition an input reads, and who produces it. */
export interface InputPartition {
  readonly partitionId: string;
  /** The producing attempt `"<vertex>#<i>@<attempt>"`. */
  readonly producerAttemptId: string;
  /** The producer runs in the same region (in the same executor, unless the region is spread over several). */
  readonly sameRegion: boolean;
  /** Set for blocking partitions, and for pipelined ones of a spread region (registered by the job master); otherwise resolved in the executor. */
  readonly descriptor?: ShuffleDescriptor;
}

/** One input of a task: the partitions of one job edge it reads, and which subpartition of each. */
export interface InputDeployment {
  readonly edgeIndex: number;
  readonly edgeId: string;
  /** The head operator's logical input. */
  readonly inputIndex: number;
  readonly pipelined: boolean;
  /** PIPELINED_APPROXIMATE (then `pipelined` too): the producers are other regions, resolved in the executor. @defaultValue false */
  readonly approximate?: boolean;
  readonly partitions: readonly InputPartition[];
  readonly subpartitions: SubpartitionRange;
}

/** Everything a task executor needs to run one execution attempt. Plain JSON. */
export interface TaskDeployment {
  /** `"<vertexId>#<subtask>@<attempt>"` (ExecutionAttemptId). */
  readonly attemptId: string;
  /** `"<vertexId>#<subtask>"`. */
  readonly executionVertexId: string;
  readonly vertexId: string;
  /** Index of the vertex in the job plan. */
  readonly vertexIndex: number;
  readonly subtask: number;
  readonly parallelism: number;
  readonly attempt: number;
  readonly outputs: readonly OutputDeployment[];
  readonly inputs: readonly InputDeployment[];
  /** A fault planted on purpose (fault injection); absent normally. */
  readonly fault?: TaskFault;
  /** The task's managed memory budget (RunJobOptions.taskMemoryBytes); absent: defaultTaskMemoryBytes() of the executor's machine. */
  readonly taskMemoryBytes?: number;
  /** Where the task's spill directory goes (RunJobOptions.spillDir); absent: the executor's os.tmpdir(). */
  readonly spillDir?: string;
}

/** A pipelined region's tasks deployed together to one task executor (all of them, or its share of a spread region). Plain JSON. */
export interface RegionDeployment {
  readonly jobId: string;
  readonly region: number;
  readonly tasks: readonly TaskDeployment[];
}

/** Per-edge output counters of a task. */
export interface OutputMetrics {
  readonly edgeIndex: number;
  readonly records: number;
  readonly bytes: number;
  /**
   * An approximate output: per consumer subtask (`"<vertex>#<i>"`), the records of this attempt its gone
   * consumer attempts never got — in buffers dropped while none was attached, or whose tail was skipped
   * for the next attempt (the shuffle's counters, ResultPartitionWriterMetrics.recordsLostBySubpartition).
   * Only entries above 0.
   */
  readonly recordsLostByConsumer?: Readonly<Record<string, number>>;
  /**
   * Framed bytes of each subpartition of a blocking output (their sum is `bytes`); only in a finished
   * task's result, not in live progress, and only for an output whose consumer is decided at run time
   * (`OutputDeployment.reportSubpartitionBytes`). What the adaptive scheduler decides consumers from.
   */
  readonly subpartitionBytes?: readonly number[];
}

/** A task's counters, while it runs (progress) and when it ends. */
export interface TaskMetrics {
  readonly recordsIn: number;
  /** Records a window operator of the task dropped as late (absent: none). */
  readonly lateRecordsDropped?: number;
  readonly outputs: readonly OutputMetrics[];
  /**
   * Approximate inputs: per producer subtask (`"<vertex>#<i>"`), the partial records this attempt's gates
   * discarded when that producer's attempt went away (`channel-unavailable` with partialRecordBytes > 0).
   * Only entries above 0; absent when none.
   */
  readonly partialRecordsDiscardedByProducer?: Readonly<Record<string, number>>;
  /** Records its gates handed over that it did not process: the rest of the batch it was in when it failed. Absent when none. */
  readonly recordsUnprocessed?: number;
  /**
   * Approximate inputs: records this attempt's state will never see — between how far the state it started
   * from had read a channel (its checkpoint's, or 0) and the record the channel resumed at when it attached
   * again (`channel-resumed`; InputPositions). Counted, not estimated. Absent when none.
   */
  readonly recordsLostOnInputs?: number;
}
