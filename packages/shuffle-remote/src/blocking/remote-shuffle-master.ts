import {
  type JobId,
  type JobShuffleContext,
  type Logger,
  type RegisterPartitionRequest,
  type ShuffleDescriptor,
  type ShuffleMaster,
  type ShuffleMasterContext,
  type StoredPartition,
  closedError,
  fencedError,
  invalidArgument,
  noopLogger,
  validateEpoch,
  validateId,
  validatePartitionDescriptor,
  validateProducerDescriptor,
} from '@weft/shuffle-api';
import type { ResolvedRemoteShuffleOptions } from '../config/remote-shuffle-options.js';
import { type AttemptRecord, type ReleasedAttempts, isCollectible } from '../metadata/metadata-store.js';
import { REMOTE_DESCRIPTOR_DETAILS, REMOTE_SHUFFLE_SERVICE_ID, checkRemoteDescriptor } from './descriptor-checks.js';
import { encodeKeySegment } from '../storage/object-key.js';
import { StorePair } from './store-pair.js';

/** What one sweep did. */
export interface SweepResult {
  /**
   * Garbage attempts (uncommitted, conflicting, failed, abandoned or released) collected: their object,
   * if they had one, is deleted, and the metadata store no longer lists it.
   */
  readonly collectedAttempts: number;
  /**
   * Objects that existed and were deleted, among those attempts. Fewer when an attempt never created its
   * object (a producer that died before its first byte) or its object went up only at `finish()` (S3
   * `upload: 'spill'`) or was already gone.
   */
  readonly deletedObjects: number;
  /** Attempts whose deletion failed; a later sweep tries again. */
  readonly failedDeletions: number;
}

const SWEEP_BATCH = 500;

/**
 * The control side of the remote shuffle. Registrations, commits and releases live in the metadata
 * store, so a new master on the same stores (JobMaster failover) lists exactly the partitions an old
 * one saw committed, with their sizes.
 *
 * `sweep()` (run at `start()` unless `sweepOnStart` is false, then every `sweepIntervalMs`) deletes the objects of attempts that will
 * never be visible: failed, conflicting, released, and abandoned ones — writers whose lease ran out
 * (a crashed producer). A live writer renews its lease, so a sweep never takes its object from under
 * it; only `unregisterJob` (the job is over: no writer of it may still run) deletes every attempt's object.
 *
 * Fencing (JobShuffleContext.epoch): `registerJob` raises the job's newest epoch in the metadata store
 * before it resolves; this master's epoch for the job is the one it registered it with (else the newest
 * it registered a partition with). Its releases and `unregisterJob` carry it, and the store refuses them
 * (SHF_ERR_FENCED, nothing deleted) in the same atomic step that would remove a commit record.
 */
export class RemoteShuffleMaster implements ShuffleMaster {
  readonly shuffleServiceId = REMOTE_SHUFFLE_SERVICE_ID;
  private readonly stores: StorePair;
  private readonly logger: Logger;
  private started = false;
  private closed = false;
  #closing: Promise<void> | undefined;
  private timer: NodeJS.Timeout | undefined;
  private sweeping: Promise<SweepResult> | undefined;
  /** This master's job master epoch per job (JobShuffleContext.epoch, else its registrations'). */
  readonly #epochs = new Map<string, number>();

  constructor(
    private readonly options: ResolvedRemoteShuffleOptions,
    context: ShuffleMasterContext = {},
  ) {
    this.logger = context.logger ?? noopLogger;
    this.stores = new StorePair(options, this.logger, context.clock);
  }

  async start(): Promise<void> {
    if (this.closed) throw closedError('remote shuffle master');
    if (this.started) return;
    await this.stores.start();
    this.started = true;
    if (this.options.sweepOnStart) await this.sweep();
    if (this.options.sweepIntervalMs > 0 && !this.closed) {
      this.timer = setInterval(() => {
        this.sweep().catch((error: unknown) => this.logger.warn({ error: (error as Error).message }, 'sweep failed'));
      }, this.options.sweepIntervalMs);
      this.timer.unref();
    }
    this.logger.info({ store: this.stores.blob.description, meta: this.stores.meta.description }, 'remote shuffle master started');
  }

  close(): Promise<void> {
    this.#closing ??= this.#close();
    return this.#closing;
  }

  async #close(): Promise<void> {
    this.closed = true;
    if (this.timer !== undefined) clearInterval(this.timer);
    await this.sweeping?.catch(() => undefined);
    await this.stores.close();
  }

  [Symbol.asyncDispose](): Promise<void> {
    return this.close();
  }

  async registerJob(context: JobShuffleContext): Promise<void> {
    const jobId = validateId('jobId', context?.jobId);
    const epoch = validateEpoch('epoch', context.epoch);
    this.checkStarted();
    const outcome = await this.stores.meta.registerJob(jobId, epoch);
    if (outcome.status === 'fenced') throw fencedError('registration', { jobId, epoch: epoch ?? 0, newestEpoch: outcome.newestEpoch });
    if (epoch !== undefined) this.#epochs.set(jobId, epoch);
  }

  /**
   * The job is over: no producer of it runs any more (an engine calls this once its executors are closed).
   * Every non-persistent partition is released and its objects deleted now, also those of attempts whose
   * writer never let go (a worker killed mid-write: its lease would otherwise keep its object until a sweep
   * after `attemptLeaseMs`). Those attempts stay recorded until a sweep, so that an object a writer that is
   * somehow still alive completes afterwards is collected too (its commit is refused: the partition is gone).
   */
  async unregisterJob(jobId: JobId): Promise<void> {
    validateId('jobId', jobId);
    this.checkStarted();
    const epoch = this.#epochs.get(jobId);
    const released = await this.stores.meta.releaseJob(jobId, true, epoch);
    if (released.status === 'fenced') throw fencedError('unregisterJob', { jobId, epoch: epoch ?? 0, newestEpoch: released.newestEpoch });
    this.#epochs.delete(jobId);
    await this.collect(released);
    const unclaimed = released.attempts.filter((attempt) => !attempt.collected && !isCollectible(attempt, released.nowMs, this.options.attemptLeaseMs));
    await this.deleteObjects(unclaimed, { forget: false });
  }

  async registerPartitionWithProducer(request: RegisterPartitionRequest): Promise<ShuffleDescriptor> {
    if (typeof request !== 'object' || request === null) throw invalidArgument('request', 'expected {jobId, partition, producer}');
    const jobId = validateId('jobId', request.jobId) as JobId;
    const partition = validatePartitionDescriptor(request.partition, 'partition');
    const producer = validateProducerDescriptor(request.producer, 'producer');
    const epoch = validateEpoch('epoch', request.epoch);
    const descriptor = checkRemoteDescriptor({
      shuffleServiceId: REMOTE_SHUFFLE_SERVICE_ID,
      jobId,
      partition: { ...partition },
      producer: { ...producer },
      details: { ...REMOTE_DESCRIPTOR_DETAILS, ...(epoch === undefined ? {} : { epoch }) },
    });
    this.checkStarted();
    const outcome = await this.stores.meta.registerPartition({
      jobId,
      partitionId: partition.partitionId,
      persistent: partition.partitionType === 'BLOCKING_PERSISTENT',
      descriptor,
      ...(epoch === undefined ? {} : { epoch }),
    });
    if (outcome.status === 'fenced') {
      throw fencedError(`registration of partition ${partition.partitionId}`, { jobId, epoch: epoch ?? 0, newestEpoch: outcome.newestEpoch, partitionId: partition.partitionId });
    }
    if (epoch !== undefined && epoch > (this.#epochs.get(jobId) ?? -1)) this.#epochs.set(jobId, epoch);
    // a registration of another attempt replaced an older one: what that one wrote is garbage now
    if (outcome.released.attempts.length > 0) {
      this.logger.debug({ jobId, partitionId: partition.partitionId, attempt: producer.attempt, replaced: outcome.released.attempts.length }, 'registration replaced an older attempt');
      await this.collect(outcome.released);
    }
    return descriptor;
  }

  async releasePartitionExternally(descriptor: ShuffleDescriptor): Promise<void> {
    const checked = checkRemoteDescriptor(descriptor);
    this.checkStarted();
    const epoch = this.#epochs.get(checked.jobId);
    const released = await this.stores.meta.releasePartition(checked.jobId, checked.partition.partitionId, epoch);
    if (released.status === 'fenced') {
      const partitionId = checked.partition.partitionId;
      throw fencedError(`release of partition ${partitionId}`, { jobId: checked.jobId, epoch: epoch ?? 0, newestEpoch: released.newestEpoch, partitionId });
    }
    await this.collect(released);
  }

  async listPartitions(jobId: JobId): Promise<readonly StoredPartition[]> {
    validateId('jobId', jobId);
    this.checkStarted();
    const committed = await this.stores.meta.listCommitted(jobId);
    if (committed.length === 0) return [];
    // a commit whose data object is gone (deleted by hand, a lost disk) does not exist for a reader
    const present = new Set(await this.stores.blob.listKeys(`${encodeKeySegment('jobId', jobId)}/`));
    return committed
      .filter((commit) => present.has(commit.objectKey))
      .map((commit) => ({ descriptor: commit.descriptor, subpartitionBytes: [...commit.subpartitionBytes], totalBytes: commit.totalBytes }))
      .sort((a, b) => a.descriptor.partition.partitionIndex - b.descriptor.partition.partitionIndex);
  }

  /** Deletes the objects of every attempt that will never be visible and whose writer is gone. */
  sweep(): Promise<SweepResult> {
    this.checkStarted();
    this.sweeping ??= this.sweepOnce().finally(() => {
      this.sweeping = undefined;
    });
    return this.sweeping;
  }

  private async sweepOnce(): Promise<SweepResult> {
    let collectedAttempts = 0;
    let deletedObjects = 0;
    let failedDeletions = 0;
    const seen = new Set<string>();
    for (;;) {
      const batch = (await this.stores.meta.collectGarbage(this.options.attemptLeaseMs, SWEEP_BATCH)).filter((a) => !seen.has(a.writeId));
      if (batch.length === 0) break;
      for (const attempt of batch) seen.add(attempt.writeId);
      const result = await this.deleteObjects(batch);
      collectedAttempts += result.collectedAttempts;
      deletedObjects += result.deletedObjects;
      failedDeletions += result.failedDeletions;
      if (this.closed) break;
    }
    if (collectedAttempts + failedDeletions > 0) this.logger.info({ collectedAttempts, deletedObjects, failedDeletions }, 'swept garbage');
    return { collectedAttempts, deletedObjects, failedDeletions };
  }

  /**
   * Deletes at once the released attempts whose writers let go or whose lease ran out, judged by the
   * metadata store's clock (the one leases are renewed by); the others wait for a sweep.
   */
  private async collect(released: ReleasedAttempts): Promise<void> {
    await this.deleteObjects(released.attempts.filter((attempt) => isCollectible(attempt, released.nowMs, this.options.attemptLeaseMs)));
  }

  /** Deletes the attempts' objects; `forget: false` keeps their records (for a sweep to collect again). */
  private async deleteObjects(attempts: readonly AttemptRecord[], { forget = true } = {}): Promise<SweepResult> {
    let collectedAttempts = 0;
    let deletedObjects = 0;
    let failedDeletions = 0;
    for (const attempt of attempts) {
      try {
        const existed = await this.stores.blob.deleteExisting(attempt.objectKey, attempt.uploadId === undefined ? {} : { uploadId: attempt.uploadId });
        if (forget) await this.stores.meta.forgetAttempt(attempt.writeId);
        collectedAttempts++;
        if (existed) deletedObjects++;
      } catch (error) {
        failedDeletions++;
        this.logger.warn({ objectKey: attempt.objectKey, error: (error as Error).message }, 'could not delete a garbage object');
      }
    }
    return { collectedAttempts, deletedObjects, failedDeletions };
  }

  private checkStarted(): void {
    if (this.closed) throw closedError('remote shuffle master');
    if (!this.started) throw invalidArgument('state', 'the remote shuffle master is not started: call start() first');
  }
}
