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
import type { Compression } from '../format/block-codec.js';
import { type PartitionFileSummary, PartitionFileWriter, type Region } from '../format/partition-file-writer.js';
import type { BlobReader, BlobWriter } from '../storage/blob-store.js';
import { SortBuffer } from './sort-buffer.js';
import { splitRegion } from './split-region.js';
import { type WriterBudget, writerBudget } from './writer-budget.js';

type State = 'open' | 'finishing' | 'commit-pending' | 'finished' | 'failed' | 'closed';

export interface SortMergeWriterSettings {
  readonly descriptor: ShuffleDescriptor;
  /** Where the data object goes (a blob store's writer, or a push to a shuffle server). */
  readonly blob: BlobWriter;
  readonly producerMemoryBytes: number;
  readonly bufferSizeBytes: number;
  readonly maxRecordBytes: number;
  readonly compression: Compression;
  readonly logger: Logger;
  /** What the writer does with its bytes, for messages: `writing`, `pushing`. */
  readonly action: string;
  /**
   * The array the writer counts framed bytes per subpartition into (one zero per subpartition), for a
   * blob writer that reads the counts when it completes. @defaultValue a new array
   */
  readonly subpartitionBytes?: number[];
  /** A local scratch file for the regions; the object is then written merged at `finish()` (PartitionFileWriter's `spill`). */
  readonly spill?: BlobWriter & BlobReader & { close(): Promise<void> };
  /** Called once the writer is closed (whatever its outcome). */
  readonly onClosed?: () => void;
}

/**
 * One BLOCKING / BLOCKING_PERSISTENT partition attempt written in the sort-merge layout, whatever the
 * bytes' destination: records are framed into a sort buffer; when it holds a region's worth, the region
 * is spilled (PartitionFileWriter: LZ4 on the thread pool, CRC32C, then appended to the blob writer, or
 * to a local spill file) while the producer fills the next one. Up to `budget.spillsInFlight` regions are
 * spilled at once (writerBudget); `emitRecord` returns false when the region being filled is full and
 * no spill may start, and `ready()` resolves when the oldest spill is done.
 *
 * A record is copied whole before `emitRecord` returns, so a record larger than what is left of its
 * region's share makes that region oversized: it is spilled at once, in pieces of one share each (one
 * after the other, so at most one piece's LZ4 output exists: no second copy of the record), `emitRecord`
 * returns false, and `ready()` waits until the writer is back within `memoryLimitBytes`. Until then the
 * writer holds at most `memoryLimitBytes` plus the blocks that record was framed into (per copy: a
 * broadcast frames it once per subpartition). `finish()` writes the last
 * region, the index and the footer, completes the object (with a spill file: uploads it merged) and
 * commits the attempt (`commitAttempt`): only then is it visible.
 *
 * Subclasses say how an attempt commits, what an aborted attempt leaves to clean, and how its lease is
 * renewed (`startLease` runs `renewLease` periodically until the writer ends). State changes:
 * open -> finishing -> commit-pending -> finished, and any of the first three -> failed; `close()` ends
 * in closed unless finished. A retryable commit failure keeps commit-pending: `finish()` may be called
 * again to retry the commit.
 */
export abstract class SortMergePartitionWriter implements ResultPartitionWriter {
  readonly partitionId: ResultPartitionId;
  readonly numberOfSubpartitions: number;
  protected readonly descriptor: ShuffleDescriptor;
  protected readonly logger: Logger;
  /** Framed bytes (records with their length prefix) per subpartition. */
  protected readonly subpartitionBytes: number[];
  protected readonly file: PartitionFileWriter;
  private readonly sort: SortBuffer;
  private readonly budget: WriterBudget;
  private readonly maxRecordBytes: number;
  private state: State = 'open';
  private records = 0;
  private bytes = 0;
  /** Regions being spilled, oldest first (at most budget.spillsInFlight). */
  private readonly spills: Promise<void>[] = [];
  /** The piece being written of the oversized region being spilled, if any (it settles, never rejects). */
  private oversizedPiece: Promise<void> | undefined;
  /** The whole spill of an oversized region: no other region may start before its last piece is handed over. */
  private oversizedSpill: Promise<void> | undefined;
  /** A spill or lease failure: the writer cannot finish. */
  private broken: ShuffleError | null = null;
  private cleanup: Promise<void> | null = null;
  private closing: Promise<void> | null = null;
  private summary: PartitionFileSummary | null = null;
  private lease: NodeJS.Timeout | undefined;
  private leaseInFlight = false;

  constructor(private readonly settings: SortMergeWriterSettings) {
    this.descriptor = settings.descriptor;
    this.partitionId = settings.descriptor.partition.partitionId;
    this.numberOfSubpartitions = settings.descriptor.partition.numberOfSubpartitions;
    this.logger = settings.logger;
    this.maxRecordBytes = settings.maxRecordBytes;
    this.subpartitionBytes = settings.subpartitionBytes ?? new Array<number>(this.numberOfSubpartitions).fill(0);
    const regionsTo = settings.spill ?? settings.blob;
    this.budget = writerBudget(settings.producerMemoryBytes, this.numberOfSubpartitions, settings.bufferSizeBytes, regionsTo.maxRetainedBytes);
    // blocks of the region being filled and of the regions being spilled come back to the pool
    // without LZ4 every block is stored as framed: checksummed the moment it is full, while in cache
    this.sort = new SortBuffer(
      this.numberOfSubpartitions,
      this.budget.blockBytes,
      (1 + this.budget.spillsInFlight) * this.budget.regionShareBytes,
      settings.compression === 'none',
    );
    this.file = new PartitionFileWriter({
      blob: settings.blob,
      numberOfSubpartitions: this.numberOfSubpartitions,
      compression: settings.compression,
      recycle: (buffer) => this.sort.recycle(buffer),
      ...(settings.spill === undefined ? {} : { spill: settings.spill }),
    });
  }

  /** Commits the completed object. Resolves when committed; resolves with the refusal when the store turned it away for good; throws when the outcome is unknown. */
  protected abstract commitAttempt(summary: PartitionFileSummary): Promise<ShuffleError | undefined>;

  /** Renews the attempt's lease once (see `startLease`). */
  protected abstract renewLease(): Promise<void>;

  /** Runs after a commit landed. */
  protected async afterCommit(): Promise<void> {}

  /** Cleans what an aborted attempt leaves besides its object (already dropped); `recordFailure` is false when its commit was refused. */
  protected async discardAttempt(cause: unknown, recordFailure: boolean): Promise<void> {
    void cause;
    void recordFailure;
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
    checkRecord(record, this.maxRecordBytes);
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
    checkRecord(record, this.maxRecordBytes);
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
      if (this.state !== 'open') return;
      if (this.sort.activeBytes >= this.budget.regionBytes) {
        if (this.oversizedSpill !== undefined) await this.oversizedSpill;
        else if (this.spills.length < this.budget.spillsInFlight) this.startSpill();
        else await this.spills[0];
        continue;
      }
      // an oversized region being spilled: wait, piece after piece, until the writer is within its limit
      if (this.oversizedPiece === undefined || this.metrics.bufferedBytes <= this.budget.memoryLimitBytes) return;
      await this.oversizedPiece;
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
      while (this.spills.length > 0) await this.spills[this.spills.length - 1];
      if (this.broken !== null) throw this.broken;
      const oversized = this.sort.activeBytes > this.budget.regionShareBytes;
      const last = this.sort.isEmpty ? undefined : this.sort.takeRegion();
      // no more records: the pool's blocks go back to the system before the object is completed
      this.sort.drain();
      if (last !== undefined) await this.spillRegion(last, oversized);
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
    this.closing ??= (async () => {
      if (this.state === 'open' || this.state === 'finishing' || this.state === 'commit-pending') {
        this.abort(new ShuffleError('SHF_ERR_CLOSED', `writer of partition ${this.partitionId} was closed before finish()`, { context: { partitionId: this.partitionId } }));
      }
      try {
        await this.cleanup;
      } finally {
        this.stopLease();
        if (this.state !== 'finished') this.state = 'closed';
        this.settings.onClosed?.();
      }
    })();
    return this.closing;
  }

  [Symbol.asyncDispose](): Promise<void> {
    return this.close();
  }

  /** Renews the lease every `everyMs` (never two renewals at once) until the writer is finished, failed or closed. */
  protected startLease(everyMs: number): void {
    this.lease = setInterval(() => {
      if (this.leaseInFlight) return;
      this.leaseInFlight = true;
      this.renewLease()
        .catch((error: unknown) => this.logger.warn({ partitionId: this.partitionId, error: (error as Error).message }, 'lease renewal failed'))
        .finally(() => {
          this.leaseInFlight = false;
        });
    }, everyMs);
    this.lease.unref();
  }

  /** True while the writer may still finish (a lost lease then breaks it: see `breakWith`). */
  protected get writing(): boolean {
    return this.state === 'open' || this.state === 'finishing';
  }

  /** Makes the writer unable to finish: the next call fails with `error`. */
  protected breakWith(error: ShuffleError): void {
    this.broken ??= error;
  }

  private afterWrite(): boolean {
    const active = this.sort.activeBytes;
    if (active < this.budget.regionBytes) return true;
    if (this.spills.length >= this.budget.spillsInFlight || this.oversizedSpill !== undefined) return false;
    this.startSpill();
    // an oversized region: the producer waits (ready()) until it is spilled enough
    return active <= this.budget.regionShareBytes;
  }

  private startSpill(): void {
    const done = (): void => {
      const at = this.spills.indexOf(spill);
      if (at >= 0) this.spills.splice(at, 1);
    };
    const oversized = this.sort.activeBytes > this.budget.regionShareBytes;
    const written = this.spillRegion(this.sort.takeRegion(), oversized);
    if (oversized) {
      const whole = written.catch(() => undefined).finally(() => {
        if (this.oversizedSpill === whole) this.oversizedSpill = undefined;
      });
      this.oversizedSpill = whole;
    }
    const spill: Promise<void> = written.then(done, (error: unknown) => {
      done();
      this.broken ??= this.asShuffleError(error);
      this.logger.warn({ partitionId: this.partitionId, error: (error as Error).message }, `${this.settings.action} a region failed`);
    });
    this.spills.push(spill);
  }

  /**
   * Writes a region; an oversized one in pieces of one region share, each started once the one before
   * is written, so its blocks go back to the pool piece by piece and only one piece is being compressed.
   */
  private async spillRegion(region: Region, oversized: boolean): Promise<void> {
    if (!oversized) return this.file.writeRegion(region);
    const pieces = splitRegion(region, this.budget.regionShareBytes);
    let next = 0;
    try {
      while (next < pieces.length) {
        const piece = this.file.writeRegion(pieces[next++]!);
        this.oversizedPiece = piece.catch(() => undefined);
        await piece;
      }
    } catch (error) {
      // the pieces not handed to the file writer still hold pooled blocks
      for (const piece of pieces.slice(next)) {
        for (const entries of piece.subpartitions) for (const entry of entries ?? []) if (entry.buffer !== undefined) this.sort.recycle(entry.buffer);
      }
      throw error;
    } finally {
      this.oversizedPiece = undefined;
    }
  }

  private async commit(): Promise<void> {
    const summary = this.summary!;
    let refusal: ShuffleError | undefined;
    try {
      refusal = await this.commitAttempt(summary);
    } catch (error) {
      // unknown outcome (store or server unreachable): finish() may be called again to retry the commit
      if (isShuffleError(error) && error.retryable) throw error;
      this.abort(error);
      await this.cleanup;
      throw error;
    }
    if (refusal !== undefined) {
      this.abort(refusal, false);
      await this.cleanup;
      throw refusal;
    }
    this.state = 'finished';
    this.stopLease();
    this.logger.debug({ partitionId: this.partitionId, bytes: this.bytes, regions: summary.location.numberOfRegions }, 'commit-pending -> finished');
    await this.afterCommit();
  }

  /** Fails the writer: drops buffers and the object, then `discardAttempt`. Idempotent. */
  private abort(cause: unknown, recordFailure = true): void {
    if (this.state === 'failed' || this.state === 'closed' || this.state === 'finished') return;
    const from = this.state;
    this.state = 'failed';
    this.stopLease();
    this.sort.discard();
    const spills = [...this.spills];
    this.cleanup = (async () => {
      await Promise.all(spills);
      await this.file.abort().catch((error: unknown) => this.logger.warn({ partitionId: this.partitionId, error: (error as Error).message }, 'could not delete the data of a failed attempt'));
      await this.discardAttempt(cause, recordFailure);
    })();
    this.logger.debug({ partitionId: this.partitionId, cause: (cause as Error)?.message }, `${from} -> failed`);
  }

  private stopLease(): void {
    if (this.lease !== undefined) clearInterval(this.lease);
    this.lease = undefined;
  }

  private stateError(operation: string): ShuffleError {
    return invalidArgument('state', `${operation} on the writer of partition ${this.partitionId}, which is ${this.state}`, { partitionId: this.partitionId });
  }

  private asShuffleError(error: unknown): ShuffleError {
    if (isShuffleError(error)) return error;
    return new ShuffleError('SHF_ERR_STORAGE_UNAVAILABLE', `${this.settings.action} partition ${this.partitionId} failed: ${(error as Error)?.message ?? String(error)}`, {
      cause: error,
      context: { partitionId: this.partitionId },
    });
  }
}
