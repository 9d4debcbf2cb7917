import type { JobId } from './ids.js';
import type { PartitionDescriptor } from './partition-descriptor.js';
import type { PartitionsLostNotice } from './partitions-lost.js';
import type { ProducerDescriptor } from './producer-descriptor.js';
import type { ShuffleDescriptor } from './shuffle-descriptor.js';

/** What the engine tells the ShuffleMaster about a job when registering it. */
export interface JobShuffleContext {
  readonly jobId: JobId;
  /**
   * The epoch of the job master run registering the job (its lease on `jobId`, increasing with every
   * run; the same epoch its RegisterPartitionRequests carry). Registering the job raises the newest epoch
   * the backends know for it before `registerJob` resolves — so a resuming master that lists partitions
   * next has already fenced every older one — and is refused with SHF_ERR_FENCED when a newer epoch
   * registered the job (or a partition of it) before. Once a newer epoch did, this master's
   * `releasePartitionExternally` and `unregisterJob` for the job reject with SHF_ERR_FENCED and delete
   * nothing: an old job master that wakes up cannot take what the newer run uses. Omitted: no fencing by
   * epoch for this master's releases (an engine without a job lease).
   */
  readonly epoch?: number;
  /**
   * Optional; the master calls it to tell the job that finished (committed) partitions of it can no longer
   * be read: the storage holding their last copy is gone (Flink's `stopTrackingAndReleasePartitions`, as
   * flink-remote-shuffle calls it when a shuffle worker is lost). The engine then treats them as lost —
   * not available for re-reading (docs/DESIGN.md, region failover): a failover that restarts a reader of
   * one, or a region that reads one and is (re)scheduled, re-runs their producers; it restarts nothing by
   * itself at the call.
   *
   * For the master:
   * - name only partitions whose every copy is gone for good (the process holding it died: connection
   *   refused, or no longer registered), never one a replica, a tier or a server that is only slow still
   *   holds, and never one not committed yet (its writer fails, or moves, on its own);
   * - call it any time between `registerJob` resolving and `unregisterJob` being called, never after;
   *   from `reportFailure` preferably before that report resolves — an engine may wait a little for the
   *   report before it decides which tasks restart, so that one failover re-runs every producer whose output
   *   went with the dead storage, rather than one failover per partition as each reader finds one;
   * - it may name a partition again (idempotent), and an attempt the job already replaced (ignored).
   *
   * For the engine: it returns at once (it may not throw, nor call the master back synchronously); a
   * partition whose named attempt is not its producer's current finished attempt is ignored (it is being
   * produced again, or was released). Omitted: the master has nobody to tell; readers of a lost partition
   * find out one by one (SHF_ERR_PARTITION_NOT_FOUND).
   */
  partitionsLost?(notice: PartitionsLostNotice): void;
}

/**
 * One partition about to be produced by one producer attempt.
 *
 * Attempts: the newest registration of a partition is the one whose writer may commit. Registering it
 * again for another producer attempt (with or without `releasePartitionExternally` in between) fences
 * every older attempt: an older writer's `finish()` rejects with SHF_ERR_COMMIT_CONFLICT, an older commit
 * is no longer visible, and consumers of the new descriptor see only the new attempt's records.
 * Registering it again for the same attempt and epoch is idempotent (a commit stays).
 */
export interface RegisterPartitionRequest {
  readonly jobId: JobId;
  readonly partition: PartitionDescriptor;
  readonly producer: ProducerDescriptor;
  /**
   * The epoch of the job master run registering it (the lease it holds on `jobId`, increasing with every
   * run). A master must refuse a registration with an epoch older than the newest it has seen for the job
   * — and the commit of a partition registered under one once a newer epoch was seen — with
   * SHF_ERR_FENCED, so an old job master that wakes up cannot change anything. Omitted: no fencing by
   * epoch (an engine without a job lease); such a registration is never refused for its epoch.
   */
  readonly epoch?: number;
}

/**
 * A task failure, as the engine hands it to `ShuffleMaster.reportFailure`: the job and the failure's
 * cause exactly as the task reported it (an Error with its cause chain, rebuilt on the job master's
 * side when the task ran in another process; `code` and `context` are kept).
 */
export interface ShuffleFailureReport {
  readonly jobId: JobId;
  readonly error: unknown;
}

/** A partition that exists and can be read, with its committed size per subpartition. */
export interface StoredPartition {
  readonly descriptor: ShuffleDescriptor;
  /** Bytes stored for each subpartition (framed record bytes, before compression). */
  readonly subpartitionBytes: readonly number[];
  readonly totalBytes: number;
}

/**
 * The control side of a shuffle service (Flink's ShuffleMaster), run by the job master.
 *
 * Lifecycle: `start()` once (fails fast on bad configuration or unreachable backends), then any number
 * of jobs: `registerJob`, `registerPartitionWithProducer` for each partition the scheduler deploys,
 * `releasePartitionExternally` when the scheduler no longer needs one, `reportFailure` (optional) for each
 * task failure, `unregisterJob` at the end.
 * `close()` releases what the master itself holds (connections, timers); it does not release partitions.
 * It is memoized: a second call resolves when the first one's work is done (it is done once); every call
 * after it rejects with SHF_ERR_CLOSED.
 *
 * `listPartitions` answers which finished partitions of a job still exist, with their sizes — a new
 * master on the same backends (JobMaster failover) sees exactly what an old one committed.
 *
 * Not in the contract: where data lives, or how descriptors encode it (`details`).
 */
export interface ShuffleMaster extends AsyncDisposable {
  readonly shuffleServiceId: string;

  start(): Promise<void>;
  close(): Promise<void>;

  registerJob(context: JobShuffleContext): Promise<void>;
  /**
   * The job is over: releases every partition of the job except BLOCKING_PERSISTENT ones, and forgets the
   * job. The caller promises that no producer of the job still runs (an engine calls it once its task
   * executors are closed), so an implementation may delete at once what any attempt of the job wrote,
   * committed or not; a writer still alive against that promise has its commit refused.
   * Fenced (SHF_ERR_FENCED, nothing deleted) when this master registered the job with an epoch and a
   * newer epoch registered it, or a partition of it, since (JobShuffleContext.epoch).
   */
  unregisterJob(jobId: JobId): Promise<void>;

  /** Registers a partition about to be produced; the descriptor is handed to producer and consumers. */
  registerPartitionWithProducer(request: RegisterPartitionRequest): Promise<ShuffleDescriptor>;

  /**
   * Releases the partition's data wherever it lives. Idempotent: releasing a released partition is a no-op.
   * Fenced (SHF_ERR_FENCED, nothing deleted) when this master registered the job with an epoch and a newer
   * epoch registered it, or a partition of it, since (JobShuffleContext.epoch). The check and the release
   * are one atomic step, so a release that is not refused never takes a newer run's partition.
   */
  releasePartitionExternally(descriptor: ShuffleDescriptor): Promise<void>;

  /** The finished (committed) partitions of `jobId` that can still be read. */
  listPartitions(jobId: JobId): Promise<readonly StoredPartition[]>;

  /**
   * Optional. The engine hands every task failure of a registered job here (Celeborn's
   * ReportWorkerUnavailable), before it registers the partitions of the tasks it restarts, so a master
   * can learn from the cause — e.g. stop placing partitions on a server a task could not reach — and
   * the restarted producers go elsewhere. The engine awaits it before that registration but ignores what
   * it returns or rejects with.
   *
   * An implementation must resolve for any `error` (most are not its own: user code, other shuffles,
   * unknown shapes, `null`) — never throw for an error it does not understand — and must not fail the
   * job, release partitions, or block for long (probe in the background; a short bounded check, a few
   * hundred milliseconds, is fine). When it concludes from the failure that storage holding the only copy of
   * finished partitions is gone, it tells the job (`JobShuffleContext.partitionsLost`) before it resolves:
   * the engine waits briefly for the report of a failure that names a partition unreadable before it
   * decides what restarts, so one failover covers them all. It is called between
   * `registerJob` and `unregisterJob`, possibly concurrently with other calls of this master.
   *
   * Not in the contract: what an implementation concludes from a failure, or how long it remembers it.
   */
  reportFailure?(report: ShuffleFailureReport): Promise<void>;
}
