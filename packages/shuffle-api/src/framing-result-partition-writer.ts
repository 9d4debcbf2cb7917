import type { Logger } from './logger.js';
import type { ResultPartitionId } from './ids.js';
import { RecordFramer } from './record-framer.js';
import { checkRecord } from './record-framing.js';
import type { ResultPartitionWriter, ResultPartitionWriterMetrics } from './result-partition-writer.js';
import { invalidArgument, ShuffleError } from './shuffle-error.js';
import { type ShuffleEvent, validateUserEvent } from './shuffle-event.js';

/**
 * Where a FramingResultPartitionWriter sends what it frames: a pipelined partition of an implementation
 * (in memory, over the network). One per partition attempt.
 */
export interface FramedPartitionSink {
  readonly numberOfSubpartitions: number;
  /** Allocates a segment for the writer's framers. */
  allocate(): Uint8Array;
  /** Gives back a segment the writer will not send (discarded on failure). */
  recycle(segment: Uint8Array): void;
  /** False while the writer should wait before emitting more. */
  readonly writable: boolean;
  /** Resolves when `writable` may have become true (or the sink failed). */
  whenWritable(): Promise<void>;
  readonly bufferedBytes: number;
  readonly memoryLimitBytes: number;
  /** PIPELINED_APPROXIMATE: per subpartition, the records its gone consumers never got whole (ResultPartitionWriterMetrics). @defaultValue absent: none are lost */
  recordsLostBySubpartition?(): readonly number[];
  /** A full segment of `subpartition`: `length` valid bytes, the first `partialRecordLength` of them the tail of a record begun in an earlier segment (RecordFramer). */
  addData(subpartition: number, segment: Uint8Array, length: number, partialRecordLength: number): void;
  addEvent(subpartition: number, event: ShuffleEvent): void;
  /** PIPELINED_APPROXIMATE: checkpoint `checkpointId` completed (ResultPartitionWriter.checkpointCompleted). @defaultValue absent: nothing is kept for it */
  checkpointCompleted?(checkpointId: number): void;
  /** PIPELINED_APPROXIMATE: the producer restored a checkpoint before writing (ResultPartitionWriter.restored). @defaultValue absent: nothing is kept for it */
  restored?(): void;
  /** All data and end-of-partition are added: the partition is complete. */
  finish(): void;
  /** The producer failed; readers get `error` after what they already received. */
  fail(error: ShuffleError): void;
}

const OPEN = 0;
const FINISHED = 1;
const FAILED = 2;
const CLOSED = 3;
const STATE_NAMES = ['open', 'finished', 'failed', 'closed'] as const;

export interface FramingWriterOptions {
  readonly partitionId: ResultPartitionId;
  readonly sink: FramedPartitionSink;
  readonly bufferSizeBytes: number;
  readonly maxRecordBytes: number;
  readonly logger: Logger;
  /** Asked at `finish()`: an error when this attempt may no longer commit (a newer attempt or epoch took over). */
  readonly commitRefusal?: () => ShuffleError | undefined;
  /** Called once when the writer finishes, fails or closes. */
  readonly onDone?: (outcome: 'finished' | 'failed') => void;
  /**
   * Flink's `execution.buffer-timeout`: a partly filled buffer is handed over once it is about this old
   * (one timer per writer, armed by the first record after the previous flush); 0 hands over every record
   * at once. A pipelined partition of a live stream needs it, or a slow stream's records wait for a full
   * buffer. @defaultValue absent: only full buffers (and `flush()`, `finish()`) hand over
   */
  readonly flushTimeoutMs?: number;
}

/**
 * A pipelined partition's writer for any implementation whose partition is a FramedPartitionSink (the
 * in-memory and the network shuffles): frames records per subpartition (RecordFramer) into segments of the
 * sink and hands each full segment over without copying.
 */
export class FramingResultPartitionWriter implements ResultPartitionWriter {
  readonly partitionId: ResultPartitionId;
  readonly numberOfSubpartitions: number;
  private readonly sink: FramedPartitionSink;
  private readonly framers: RecordFramer[];
  private readonly maxRecordBytes: number;
  private state = OPEN;
  private records = 0;
  private bytes = 0;
  private readonly flushTimeoutMs: number | undefined;
  private flushTimer: ReturnType<typeof setTimeout> | undefined;

  constructor(private readonly options: FramingWriterOptions) {
    this.partitionId = options.partitionId;
    this.sink = options.sink;
    this.numberOfSubpartitions = options.sink.numberOfSubpartitions;
    this.maxRecordBytes = options.maxRecordBytes;
    this.flushTimeoutMs = options.flushTimeoutMs;
    const sink = options.sink;
    this.framers = Array.from(
      { length: this.numberOfSubpartitions },
      (_, s) =>
        new RecordFramer(
          options.bufferSizeBytes,
          () => sink.allocate(),
          (segment, length, partialRecordLength) => sink.addData(s, segment, length, partialRecordLength),
        ),
    );
  }

  get metrics(): ResultPartitionWriterMetrics {
    return {
      records: this.records,
      bytes: this.bytes,
      bufferedBytes: this.sink.bufferedBytes,
      memoryLimitBytes: this.sink.memoryLimitBytes,
      ...(this.sink.recordsLostBySubpartition === undefined ? {} : { recordsLostBySubpartition: this.sink.recordsLostBySubpartition() }),
    };
  }

  emitRecord(record: Uint8Array, subpartition: number): boolean {
    if (this.state !== OPEN) throw this.stateError('emitRecord');
    if (!((subpartition >>> 0) === subpartition && subpartition < this.numberOfSubpartitions)) {
      throw invalidArgument('subpartition', `${subpartition} is not an index in [0, ${this.numberOfSubpartitions})`, { partitionId: this.partitionId });
    }
    checkRecord(record, this.maxRecordBytes);
    const framer = this.framers[subpartition]!;
    framer.write(record);
    this.records++;
    this.bytes += record.length + 4;
    if (this.flushTimeoutMs !== undefined) this.afterWrite(framer);
    return this.sink.writable;
  }

  broadcastRecord(record: Uint8Array): boolean {
    if (this.state !== OPEN) throw this.stateError('broadcastRecord');
    checkRecord(record, this.maxRecordBytes);
    for (const framer of this.framers) framer.write(record);
    this.records += this.numberOfSubpartitions;
    this.bytes += (record.length + 4) * this.numberOfSubpartitions;
    if (this.flushTimeoutMs !== undefined) for (const framer of this.framers) this.afterWrite(framer);
    return this.sink.writable;
  }

  broadcastEvent(event: ShuffleEvent): boolean {
    if (this.state !== OPEN) throw this.stateError('broadcastEvent');
    validateUserEvent(event);
    for (let s = 0; s < this.numberOfSubpartitions; s++) {
      this.framers[s]!.flush();
      this.sink.addEvent(s, event);
    }
    return this.sink.writable;
  }

  async ready(): Promise<void> {
    while (this.state === OPEN && !this.sink.writable) await this.sink.whenWritable();
    if (this.state === FAILED || this.state === CLOSED) {
      throw new ShuffleError('SHF_ERR_CLOSED', `writer of partition ${this.partitionId} is ${STATE_NAMES[this.state]}`, {
        context: { partitionId: this.partitionId },
      });
    }
  }

  checkpointCompleted(checkpointId: number): void {
    if (this.state === OPEN || this.state === FINISHED) this.sink.checkpointCompleted?.(checkpointId);
  }

  restored(): void {
    if (this.state === OPEN) this.sink.restored?.();
  }

  flush(): void {
    if (this.state !== OPEN) return;
    for (const framer of this.framers) framer.flush();
  }

  async finish(): Promise<void> {
    if (this.state !== OPEN) throw this.stateError('finish');
    this.stopFlushTimer();
    const refused = this.options.commitRefusal?.();
    if (refused !== undefined) {
      this.fail(refused);
      throw refused;
    }
    for (const framer of this.framers) framer.flush();
    this.sink.finish();
    this.state = FINISHED;
    this.options.logger.debug({ partitionId: this.partitionId, records: this.records, bytes: this.bytes }, 'open -> finished');
    this.options.onDone?.('finished');
  }

  fail(cause: unknown): void {
    if (this.state !== OPEN) return;
    this.state = FAILED;
    this.stopFlushTimer();
    for (const framer of this.framers) {
      const segment = framer.discard();
      if (segment !== null) this.sink.recycle(segment);
    }
    const message = cause instanceof Error ? cause.message : String(cause);
    this.sink.fail(
      new ShuffleError('SHF_ERR_PRODUCER_FAILED', `producer of partition ${this.partitionId} failed: ${message}`, {
        cause,
        context: { partitionId: this.partitionId },
      }),
    );
    this.options.logger.debug({ partitionId: this.partitionId, cause: message }, 'open -> failed');
    this.options.onDone?.('failed');
  }

  async close(): Promise<void> {
    if (this.state === OPEN) {
      this.fail(new ShuffleError('SHF_ERR_CLOSED', `writer of partition ${this.partitionId} was closed before finish()`));
    }
    this.stopFlushTimer();
    this.state = CLOSED;
  }

  [Symbol.asyncDispose](): Promise<void> {
    return this.close();
  }

  /** With a flush timeout: 0 hands the record's buffer over now; otherwise the timer is armed if it is not. */
  private afterWrite(framer: RecordFramer): void {
    if (this.flushTimeoutMs === 0) {
      framer.flush();
      return;
    }
    if (this.flushTimer !== undefined || framer.pendingBytes === 0) return;
    this.flushTimer = setTimeout(() => {
      this.flushTimer = undefined;
      this.flush();
    }, this.flushTimeoutMs);
    this.flushTimer.unref?.();
  }

  private stopFlushTimer(): void {
    if (this.flushTimer !== undefined) clearTimeout(this.flushTimer);
    this.flushTimer = undefined;
  }

  private stateError(operation: string): ShuffleError {
    return invalidArgument('state', `${operation} on the writer of partition ${this.partitionId}, which is ${STATE_NAMES[this.state]}`, {
      partitionId: this.partitionId,
    });
  }
}
