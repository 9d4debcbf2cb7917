import {
  type Logger,
  type ResultPartitionId,
  type ResultPartitionWriter,
  type ResultPartitionWriterMetrics,
  type ShuffleDescriptor,
  type ShuffleEvent,
  ShuffleError,
  checkRecord,
  encodeEvent,
  invalidArgument,
  isShuffleError,
  partitionNotFound,
  serializeError,
  validateUserEvent,
} from '@weft/shuffle-api';
import type { ResolvedRemoteShuffleOptions } from '../config/remote-shuffle-options.js';
import { PartitionFileWriter } from '../format/partition-file-writer.js';
import type { MetadataStore } from '../metadata/metadata-store.js';
import type { BlobWriter } from '../storage/blob-store.js';
import { MIN_BLOCK_BYTES, SortBuffer } from './sort-buffer.js';

type State = 'open' | 'finishing' | 'commit-pending' | 'finished' | 'failed' | 'closed';

export interface RemoteWriterOptions {
  readonly descriptor: ShuffleDescriptor;
  readonly writeId: string;
  readonly blob: BlobWriter;
  readonly meta: MetadataStore;
  readonly options: ResolvedRemoteShuffleOptions;
  readonly logger: Logger;
  /** Called once the writer is closed (whatever its outcome). */
  readonly onClosed?: () => void;
}

/** How a writer splits its memory budget (see RemoteShuffleOptions.producerMemoryBytes). */
export interface WriterBudget {
  readonly memoryLimitBytes: number;
  /** The sort buffer spills a region when it holds this much. */
  readonly regionBytes: number;
  readonly blockBytes: number;
}

/**
 * Budget = memoryLimitBytes. At most four region-sized shares are alive at once — the region being
 * filled, the one being spilled (its raw blocks until appended), its LZ4 output, and (S3) the part body
 * being uploaded — plus the blob writer's retained tail (an S3 part below the minimum) and the index.
 */
export function writerBudget(producerMemoryBytes: number, numberOfSubpartitions: number, bufferSizeBytes: number, retainedBytes: number): WriterBudget {
  const floor = 4 * numberOfSubpartitions * MIN_BLOCK_BYTES * 4 + retainedBytes;
  const memoryLimitBytes = Math.max(producerMemoryBytes, floor);
  const regionBytes = Math.floor((memoryLimitBytes - retainedBytes) / 4);
  const blockBytes = Math.max(MIN_BLOCK_BYTES, Math.min(bufferSizeBytes, Math.floor(regionBytes / (4 * numberOfSubpartitions))));
  return { memoryLimitBytes, regionBytes: regionBytes - blockBytes, blockBytes };
}

/**
 * Writes one BLOCKING / BLOCKING_PERSISTENT partition attempt into one sort-merge data object. Records
 * are framed into a sort buffer; when it holds a region's worth, the region is spilled (LZ4 on the thread
 * pool, CRC32C, then appended: a file write or an S3 part) while the producer fills the next one.
 * `emitRecord` returns false while both are busy. `finish()` writes the last region, the index and the
 * footer, completes the object and commits the attempt in the metadata store: only then is it visible.
 *
 * The attempt's lease is renewed every quarter of `attemptLeaseMs` until the writer is closed.
 */
export class RemoteResultPartitionWriter implements ResultPartitionWriter {
  readonly partitionId: ResultPartitionId;
  readonly numberOfSubpartitions: number;
  private readonly descriptor: ShuffleDescriptor;
  private readonly sort: SortBuffer;
  private readonly file: PartitionFileWriter;
  private readonly budget: WriterBudget;
  private readonly subpartitionBytes: number[];
  private readonly logger: Logger;
  private state: State = 'open';
  private records = 0;
  private bytes = 0;
  private spill: Promise<void> | null = null;
  /** A spill or lease failure: the writer cannot finish. */
  private broken: ShuffleError | null = null;
  private cleanup: Promise<void> | null = null;
  private closing: Promise<void> | null = null;
  private heartbeat: NodeJS.Timeout | undefined;
  private heartbeatInFlight = false;
  private summary: Awaited<ReturnType<PartitionFileWriter['finish']>> | null = null;

  constructor(private readonly w: RemoteWriterOptions) {
    this.descriptor = w.descriptor;
    this.partitionId = w.descriptor.partition.partitionId;
    this.numberOfSubpartitions = w.descriptor.partition.numberOfSubpartitions;
    this.logger = w.logger;
    this.subpartitionBytes = new Array<number>(this.numberOfSubpartitions).fill(0);
    this.budget = writerBudget(w.options.producerMemoryBytes, this.numberOfSubpartitions, w.options.bufferSizeBytes, w.blob.maxRetainedBytes);
    this.sort = new SortBuffer(this.numberOfSubpartitions, this.budget.blockBytes, 2 * this.budget.regionBytes);
    this.file = new PartitionFileWriter({
      blob: w.blob,
      numberOfSubpartitions: this.numberOfSubpartitions,
      compression: w.options.compression,
      recycle: (buffer) => this.sort.recycle(buffer),
    });
    const every = Math.max(25, Math.floor(w.options.attemptLeaseMs / 4));
    this.heartbeat = setInterval(() => this.renewLease(), every);
    this.heartbeat.unref();
  }

  get metrics(): ResultPartitionWriterMetrics {
    return {
      records: this.records,
      bytes: this.bytes,
      bufferedBytes: this.sort.allocatedBytes + this.file.bufferedBytes,
      memoryLimitBytes: this.budget.memoryLimitBytes,
    };
  }

  emitRecord(record: Uint8Array, subpartition: number): boolean {
    if (this.state !== 'open') throw this.stateError('emitRecord');
    if (!((subpartition >>> 0) === subpartition && subpartition < this.numberOfSubpartitions)) {
      throw invalidArgument('subpartition', `${subpartition} is not an index in [0, ${this.numberOfSubpartitions})`, { partitionId: this.partitionId });
    }
    checkRecord(record, this.w.options.maxRecordBytes);
    if (this.broken !== null) throw this.broken;
    this.sort.write(record, subpartition);
    const framed = record.length + 4;
    this.records++;
    this.bytes += framed;
    this.subpartitionBytes[subpartition]! += framed;
    return this.afterWrite();
  }

  broadcastRecord(record: Uint8Array): boolean {
    if (this.state !== 'open') throw this.stateError('broadcastRecord');
    checkRecord(record, this.w.options.maxRecordBytes);
    if (this.broken !== null) throw this.broken;
    const framed = record.length + 4;
    for (let s = 0; s < this.numberOfSubpartitions; s++) {
      this.sort.write(record, s);
      this.subpartitionBytes[s]! += framed;
    }
    this.records += this.numberOfSubpartitions;
    this.bytes += framed * this.numberOfSubpartitions;
    return this.afterWrite();
  }

  broadcastEvent(event: ShuffleEvent): boolean {
    if (this.state !== 'open') throw this.stateError('broadcastEvent');
    validateUserEvent(event);
    if (this.broken !== null) throw this.broken;
    this.sort.addEvent(encodeEvent(event));
    return this.afterWrite();
  }

  async ready(): Promise<void> {
    for (;;) {
      if (this.state === 'failed' || this.state === 'closed') {
        throw new ShuffleError('SHF_ERR_CLOSED', `writer of partition ${this.partitionId} is ${this.state}`, { context: { partitionId: this.partitionId } });
      }
      if (this.broken !== null) throw this.broken;
      if (this.state !== 'open' || this.sort.activeBytes < this.budget.regionBytes) return;
      if (this.spill === null) {
        this.startSpill();
        return;
      }
      await this.spill;
    }
  }

  flush(): void {
    // blocking partitions become visible only on commit: nothing to hand over early
  }

  async finish(): Promise<void> {
    if (this.state === 'commit-pending') return this.commit();
    if (this.state !== 'open') throw this.stateError('finish');
    this.state = 'finishing';
    try {
      while (this.spill !== null) await this.spill;
      if (this.broken !== null) throw this.broken;
      if (!this.sort.isEmpty) await this.file.writeRegion(this.sort.takeRegion());
      this.summary = await this.file.finish();
    } catch (error) {
      this.abort(error);
      throw error;
    }
    if (this.state !== 'finishing') throw this.stateError('finish');
    this.state = 'commit-pending';
    return this.commit();
  }

  fail(cause: unknown): void {
    this.abort(cause);
  }

  close(): Promise<void> {
    if (this.closing !== null) return this.closing;
    this.closing = (async () => {
      if (this.state === 'open' || this.state === 'finishing' || this.state === 'commit-pending') {
        this.abort(new ShuffleError('SHF_ERR_CLOSED', `writer of partition ${this.partitionId} was closed before finish()`, { context: { partitionId: this.partitionId } }));
      }
      try {
        await this.cleanup;
      } finally {
        this.stopLease();
        if (this.state !== 'finished') this.state = 'closed';
        this.w.onClosed?.();
      }
    })();
    return this.closing;
  }

  [Symbol.asyncDispose](): Promise<void> {
    return this.close();
  }

  private afterWrite(): boolean {
    if (this.sort.activeBytes < this.budget.regionBytes) return true;
    if (this.spill !== null) return false;
    this.startSpill();
    return true;
  }

  private startSpill(): void {
    const region = this.sort.takeRegion();
    const spill = this.file.writeRegion(region).then(
      () => {
        if (this.spill === spill) this.spill = null;
      },
      (error: unknown) => {
        if (this.spill === spill) this.spill = null;
        this.broken ??= asShuffleError(error, this.partitionId);
        this.logger.warn({ partitionId: this.partitionId, error: (error as Error).message }, 'spill failed');
      },
    );
    this.spill = spill;
  }

  private async commit(): Promise<void> {
    const summary = this.summary!;
    const partition = this.descriptor.partition;
    let outcome;
    try {
      outcome = await this.w.meta.commit({
        jobId: this.descriptor.jobId,
        partitionId: this.partitionId,
        writeId: this.w.writeId,
        descriptor: this.descriptor,
        objectKey: this.w.blob.key,
        objectBytes: summary.objectBytes,
        numberOfRegions: summary.location.numberOfRegions,
        indexOffset: summary.location.indexOffset,
        indexLength: summary.location.indexLength,
        subpartitionBytes: this.subpartitionBytes,
        totalBytes: this.bytes,
        storedBytes: summary.storedBytes,
        committedAtMs: 0,
      });
    } catch (error) {
      // unknown outcome (store unreachable): finish() may be called again to retry the commit
      if (isShuffleError(error) && error.retryable) throw error;
      this.abort(error);
      throw error;
    }
    if (outcome.status === 'committed') {
      this.state = 'finished';
      this.stopLease();
      this.logger.debug({ partitionId: this.partitionId, writeId: this.w.writeId, bytes: this.bytes, regions: summary.location.numberOfRegions }, 'commit-pending -> finished');
      await this.w.meta.closeAttempt(this.w.writeId).catch(() => undefined);
      return;
    }
    const error =
      outcome.status === 'conflict'
        ? new ShuffleError('SHF_ERR_COMMIT_CONFLICT', `partition ${this.partitionId} was committed first by another attempt (${outcome.winner}); this attempt's data is discarded`, {
            context: { partitionId: this.partitionId, producerId: this.descriptor.producer.producerId },
          })
        : outcome.status === 'not-registered'
          ? partitionNotFound(this.partitionId, 'it was released (or never registered) while this attempt wrote it; its data is discarded')
          : new ShuffleError(
              'SHF_ERR_COMMIT_CONFLICT',
              `attempt ${this.descriptor.producer.producerId} of partition ${partition.partitionId} may no longer commit: it is ${outcome.state} (its lease ran out)`,
              { context: { partitionId: this.partitionId, producerId: this.descriptor.producer.producerId } },
            );
    this.abort(error, false);
    await this.cleanup;
    throw error;
  }

  /** Fails the writer: drops buffers and the object, records the failure. Idempotent. */
  private abort(cause: unknown, recordFailure = true): void {
    if (this.state === 'failed' || this.state === 'closed' || this.state === 'finished') return;
    const from = this.state;
    this.state = 'failed';
    this.sort.discard();
    const spill = this.spill;
    this.cleanup = (async () => {
      await spill?.catch(() => undefined);
      await this.file.abort().catch((error: unknown) => this.logger.warn({ partitionId: this.partitionId, error: (error as Error).message }, 'could not delete the object of a failed attempt'));
      if (recordFailure) await this.w.meta.failAttempt(this.w.writeId, serializeError(cause)).catch(() => undefined);
      await this.w.meta.closeAttempt(this.w.writeId).catch(() => undefined);
    })();
    this.logger.debug({ partitionId: this.partitionId, writeId: this.w.writeId, cause: (cause as Error)?.message }, `${from} -> failed`);
  }

  private renewLease(): void {
    if (this.heartbeatInFlight) return;
    this.heartbeatInFlight = true;
    this.w.meta.heartbeat(this.w.writeId, this.w.blob.uploadId).then(
      (state) => {
        this.heartbeatInFlight = false;
        if (state !== 'writing' && state !== 'committed' && (this.state === 'open' || this.state === 'finishing')) {
          this.broken ??= new ShuffleError('SHF_ERR_COMMIT_CONFLICT', `attempt ${this.descriptor.producer.producerId} of partition ${this.partitionId} lost its lease: it is ${state}`, {
            context: { partitionId: this.partitionId },
          });
        }
      },
      (error: unknown) => {
        this.heartbeatInFlight = false;
        this.logger.warn({ partitionId: this.partitionId, error: (error as Error).message }, 'lease renewal failed');
      },
    );
  }

  private stopLease(): void {
    if (this.heartbeat !== undefined) clearInterval(this.heartbeat);
    this.heartbeat = undefined;
  }

  private stateError(operation: string): ShuffleError {
    return invalidArgument('state', `${operation} on the writer of partition ${this.partitionId}, which is ${this.state}`, { partitionId: this.partitionId });
  }
}

function asShuffleError(error: unknown, partitionId: string): ShuffleError {
  if (isShuffleError(error)) return error;
  return new ShuffleError('SHF_ERR_STORAGE_UNAVAILABLE', `writing partition ${partitionId} failed: ${(error as Error)?.message ?? String(error)}`, {
    cause: error,
    context: { partitionId },
  });
}
