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
  validateUserEvent,
} from '@weft/shuffle-api';
import { type WriterBudget, writerBudget } from '../blocking/remote-result-partition-writer.js';
import { SortBuffer } from '../blocking/sort-buffer.js';
import { PartitionFileWriter } from '../format/partition-file-writer.js';
import type { ResolvedShuffleServerClientOptions } from './client-options.js';
import { HttpPushBlobWriter } from './http-push-blob-writer.js';
import type { AttemptTarget, ShuffleServerClient } from './shuffle-server-client.js';

type State = 'open' | 'finishing' | 'commit-pending' | 'finished' | 'failed' | 'closed';

export interface ServerWriterOptions {
  readonly descriptor: ShuffleDescriptor;
  readonly target: AttemptTarget;
  readonly client: ShuffleServerClient;
  readonly options: ResolvedShuffleServerClientOptions;
  readonly logger: Logger;
  readonly onClosed?: () => void;
}

/**
 * Writes one partition attempt to a shuffle server: records are framed into the sort buffer; full regions
 * are encoded into the sort-merge layout (PartitionFileWriter: LZ4, CRC32C, index) and pushed as they are
 * spilled — one streamed PUT, or one replayable PUT at the end for a small partition. `finish()` completes
 * the push and commits the attempt; a conflict (another attempt won) rejects with SHF_ERR_COMMIT_CONFLICT,
 * and the server deletes this attempt's data. `fail()` / early `close()` abort the push and delete what
 * the server holds of this attempt.
 */
export class ServerResultPartitionWriter implements ResultPartitionWriter {
  readonly partitionId: ResultPartitionId;
  readonly numberOfSubpartitions: number;
  private readonly sort: SortBuffer;
  private readonly file: PartitionFileWriter;
  private readonly blob: HttpPushBlobWriter;
  private readonly budget: WriterBudget;
  private readonly subpartitionBytes: number[];
  private state: State = 'open';
  private records = 0;
  private bytes = 0;
  private spill: Promise<void> | null = null;
  private broken: ShuffleError | null = null;
  private cleanup: Promise<void> | null = null;
  private closing: Promise<void> | null = null;
  private lease: NodeJS.Timeout | undefined;

  constructor(private readonly w: ServerWriterOptions) {
    this.partitionId = w.descriptor.partition.partitionId;
    this.numberOfSubpartitions = w.descriptor.partition.numberOfSubpartitions;
    this.subpartitionBytes = new Array<number>(this.numberOfSubpartitions).fill(0);
    this.blob = new HttpPushBlobWriter({
      client: w.client,
      target: w.target,
      maxBufferedBytes: w.options.maxBufferedPushBytes,
      streamQueueBytes: 0,
      logger: w.logger,
      commitRequest: () => ({ descriptor: w.descriptor, subpartitionBytes: this.subpartitionBytes }),
    });
    this.budget = writerBudget(w.options.producerMemoryBytes, this.numberOfSubpartitions, w.options.bufferSizeBytes, this.blob.maxRetainedBytes);
    this.sort = new SortBuffer(this.numberOfSubpartitions, this.budget.blockBytes, 2 * this.budget.regionBytes);
    this.file = new PartitionFileWriter({
      blob: this.blob,
      numberOfSubpartitions: this.numberOfSubpartitions,
      compression: w.options.compression,
      recycle: (buffer) => this.sort.recycle(buffer),
    });
  }

  /** Takes the attempt's lease at the server (so early readers wait) and keeps renewing it until the writer ends. */
  async open(): Promise<void> {
    const ttl = this.w.options.attemptLeaseMs;
    await this.w.client.lease(this.w.target, ttl);
    this.lease = setInterval(() => {
      this.w.client.lease(this.w.target, ttl).catch((error: unknown) => {
        this.w.logger.warn({ partitionId: this.partitionId, error: (error as Error).message }, 'lease renewal failed');
      });
    }, Math.max(10, Math.floor(ttl / 3)));
    this.lease.unref();
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
    // blocking partitions become visible only on commit
  }

  async finish(): Promise<void> {
    if (this.state === 'commit-pending') return this.commit();
    if (this.state !== 'open') throw this.stateError('finish');
    this.state = 'finishing';
    try {
      while (this.spill !== null) await this.spill;
      if (this.broken !== null) throw this.broken;
      if (!this.sort.isEmpty) await this.file.writeRegion(this.sort.takeRegion());
      await this.file.finish();
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
    this.closing ??= (async () => {
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
    const spill = this.file.writeRegion(this.sort.takeRegion()).then(
      () => {
        if (this.spill === spill) this.spill = null;
      },
      (error: unknown) => {
        if (this.spill === spill) this.spill = null;
        this.broken ??= asShuffleError(error, this.partitionId);
        this.w.logger.warn({ partitionId: this.partitionId, error: (error as Error).message }, 'push failed');
      },
    );
    this.spill = spill;
  }

  private async commit(): Promise<void> {
    try {
      // a small partition was committed with its push
      if (this.blob.committed === undefined) await this.w.client.commit(this.w.target, this.w.descriptor, this.subpartitionBytes);
    } catch (error) {
      // still unknown (server unreachable, after retries): finish() may be called again to retry the commit
      if (isShuffleError(error) && error.retryable) throw error;
      this.abort(error);
      await this.cleanup;
      throw error;
    }
    this.state = 'finished';
    this.stopLease();
    this.w.logger.debug({ partitionId: this.partitionId, bytes: this.bytes, regions: this.file.numberOfRegions }, 'commit-pending -> finished');
  }

  /** Fails the writer: drops buffers, aborts the push and deletes the attempt's data on the server. Idempotent. */
  private abort(cause: unknown): void {
    if (this.state === 'failed' || this.state === 'closed' || this.state === 'finished') return;
    const from = this.state;
    this.state = 'failed';
    this.stopLease();
    this.sort.discard();
    const spill = this.spill;
    this.cleanup = (async () => {
      await spill?.catch(() => undefined);
      await this.file.abort().catch((error: unknown) => this.w.logger.warn({ partitionId: this.partitionId, error: (error as Error).message }, 'could not delete a failed attempt'));
    })();
    this.w.logger.debug({ partitionId: this.partitionId, cause: (cause as Error)?.message }, `${from} -> failed`);
  }

  private stopLease(): void {
    clearInterval(this.lease);
    this.lease = undefined;
  }

  private stateError(operation: string): ShuffleError {
    return invalidArgument('state', `${operation} on the writer of partition ${this.partitionId}, which is ${this.state}`, { partitionId: this.partitionId });
  }
}

function asShuffleError(error: unknown, partitionId: string): ShuffleError {
  if (isShuffleError(error)) return error;
  return new ShuffleError('SHF_ERR_STORAGE_UNAVAILABLE', `pushing partition ${partitionId} failed: ${(error as Error)?.message ?? String(error)}`, {
    cause: error,
    context: { partitionId },
  });
}
