import { noopLogger } from '@weft/shuffle-api';
import { EngineError, isEngineError } from '../errors/engine-error.js';
import { type StreamEntry, type StreamReader, streamConnectorOf } from '../io/stream-connector.js';
import { awaitFinalCheckpoint } from './await-final-checkpoint.js';
import type { OperatorContext, Output, SourceOperator } from './stream-operator.js';

export interface StreamSourceSpec {
  readonly url: string;
  readonly stream: string;
  readonly group: string;
  readonly consumerPrefix: string;
  readonly startId: '0' | '$';
  readonly batchSize: number;
  readonly blockMs: number;
  readonly endField: string | undefined;
}

/**
 * The union list state of the subtasks that had read their end marker, as `[subtask, parallelism]`: a
 * checkpoint taken after it covers everything they emitted, and its completion acknowledged the marker, so
 * a restore from it must not wait for one again (Flink's FLIP-147: a task finished at a checkpoint stays
 * finished on restore).
 */
const STREAM_SOURCE_ENDED_STATE = 'readRedisStream-ended';

/** A URL with its password (`redis://user:secret@host`) hidden, for messages and logs. */
export function redactSourceUrl(url: string): string {
  return url.replace(/^([a-z][a-z0-9+.-]*:\/\/)([^@/]*)@/iu, (_, scheme: string, auth: string) => `${scheme}${auth.includes(':') ? `${auth.slice(0, auth.indexOf(':'))}:***` : '***'}@`);
}

/** `WEFT_ERR_SOURCE_UNAVAILABLE` naming the operator, the (redacted) URL and the stream. */
export function sourceUnavailable(request: { readonly operator: string; readonly url: string; readonly stream: string; readonly problem: string; readonly cause?: unknown }): EngineError {
  const source = redactSourceUrl(request.url);
  return new EngineError('WEFT_ERR_SOURCE_UNAVAILABLE', `operator ${JSON.stringify(request.operator)} cannot read stream ${JSON.stringify(request.stream)} at ${source}: ${request.problem}`, {
    context: { operator: request.operator, source, stream: request.stream },
    ...(request.cause === undefined ? {} : { cause: request.cause }),
  });
}

/**
 * `ctx.readRedisStream`: one consumer (`<prefix>-<subtask>`) of a consumer group, through the job's
 * StreamConnector. It reads its consumer's pending entries first (delivered to an earlier attempt and not
 * acknowledged), then new ones, emitting each as a StreamEntry. At-least-once: the ids emitted before a
 * checkpoint's barrier are acknowledged when that checkpoint completes (notifyCheckpointComplete), so a
 * restore re-reads exactly the entries no completed checkpoint covers. Subtask 0 first claims the pending
 * entries of consumers of subtasks that no longer exist (a restore with a smaller parallelism).
 *
 * With `endField`, an entry having that field ends the subtask (it emits the rest of that read's entries,
 * not the marker); a read that brought it more than one marker appends the surplus to the stream again,
 * for the other subtasks, and only then lets a checkpoint acknowledge them: a failure between the read and
 * the append leaves them pending, to be put back by the next attempt. In a checkpointed job it then waits
 * for the job's final checkpoint and acknowledges everything before it finishes; in a job without
 * checkpoints it acknowledges when it ends. Restored from a checkpoint taken after it ended (the same
 * parallelism, or every subtask had ended), it reads nothing: it acknowledges what is still pending for it
 * (that checkpoint covers it), putting the markers among it back first (its own one too when its
 * acknowledgement had not landed: an extra marker in the stream), and finishes as above. A restore at
 * another parallelism of a stream only some subtasks had finished reads as usual: the markers the
 * finished ones consumed are gone, so the subtasks that lack one wait for more.
 */
export class StreamSource implements SourceOperator {
  recordsEmitted = 0;
  #reader: StreamReader | undefined;
  /** Ids emitted since the last checkpoint's barrier. */
  #unacked: string[] = [];
  /** Ids emitted before each checkpoint's barrier, waiting for it to complete. */
  readonly #byCheckpoint = new Map<number, string[]>();
  /** Acknowledgements under way, in order. */
  #acking: Promise<void> = Promise.resolve();
  #ackError: EngineError | undefined;
  /** This subtask read its end marker (in this attempt, or before the checkpoint it was restored from). */
  #ended: boolean;
  /** The checkpoint this attempt was restored from says this subtask had read its end marker. */
  readonly #endedAtRestore: boolean;

  constructor(
    private readonly spec: StreamSourceSpec,
    private readonly output: Output,
    private readonly context: OperatorContext,
  ) {
    // read before anything snapshots (a snapshot overwrites the restored list)
    this.#endedAtRestore = endedAtRestore(context);
    this.#ended = this.#endedAtRestore;
  }

  snapshotState(checkpointId: number): void {
    this.#byCheckpoint.set(checkpointId, this.#unacked);
    this.#unacked = [];
    const { state, subtask, parallelism } = this.context;
    state?.operator().listState<[number, number]>(STREAM_SOURCE_ENDED_STATE, 'union').update(this.#ended ? [[subtask, parallelism]] : []);
  }

  notifyCheckpointComplete(checkpointId: number): void {
    const ids: string[] = [];
    for (const [id, entries] of this.#byCheckpoint) {
      if (id > checkpointId) continue;
      for (const entry of entries) ids.push(entry);
      this.#byCheckpoint.delete(id);
    }
    if (ids.length > 0) this.#ack(ids);
  }

  async run(): Promise<void> {
    const { spec, context } = this;
    const connector = streamConnectorOf(spec.url, context.streamConnectors ?? []);
    if (connector === undefined) {
      throw this.#unavailable(`no stream connector serves this URL (RunJobOptions.streamConnectors)`);
    }
    const consumer = `${spec.consumerPrefix}-${context.subtask}`;
    try {
      this.#reader = await connector.open({ operator: context.operatorName, url: spec.url, stream: spec.stream, group: spec.group, consumer, startId: spec.startId, logger: context.logger ?? noopLogger });
      const reader = this.#reader;
      if (context.subtask === 0) await reader.claimFrom((name) => this.#isOrphan(name));
      if (this.#endedAtRestore) {
        // everything still pending for this consumer came before its marker: the checkpoint covers it; the
        // markers among it may be other subtasks' ends the attempt that read them had not put back yet
        const markers: StreamEntry[] = [];
        for (let entries = await reader.readPending(spec.batchSize); entries.length > 0; entries = await reader.readPending(spec.batchSize)) {
          for (const entry of entries) {
            if (this.#isMarker(entry)) markers.push(entry);
            else this.#unacked.push(entry.id);
          }
        }
        await this.#putBack(reader, markers);
      } else {
        await this.#readToEnd(reader);
      }
    } catch (error) {
      if (context.signal.aborted) throw context.signal.reason;
      throw isEngineError(error) ? error : this.#unavailable((error as Error).message, error);
    }
    await this.#finish();
  }

  /** Reads pending entries, then new ones, until an end marker; the markers beyond the first go back to the stream. */
  async #readToEnd(reader: StreamReader): Promise<void> {
    const { batchSize, blockMs } = this.spec;
    const markers: StreamEntry[] = [];
    for (;;) {
      const entries = await reader.readPending(batchSize);
      if (entries.length === 0) break;
      markers.push(...this.#emit(entries));
      await this.#pause();
    }
    while (markers.length === 0) {
      const entries = await reader.readNew(batchSize, blockMs);
      markers.push(...this.#emit(entries));
      await this.#pause();
    }
    // the markers beyond the first are other subtasks' ends (a restore may put one back twice; an extra marker is harmless)
    await this.#putBack(reader, markers.slice(1));
  }

  /** Appends other subtasks' end markers to the stream again; each original is acknowledged (next checkpoint) only once its copy is there. */
  async #putBack(reader: StreamReader, markers: readonly StreamEntry[]): Promise<void> {
    for (const marker of markers) {
      await reader.append(marker.fields);
      this.#unacked.push(marker.id);
    }
  }

  async close(): Promise<void> {
    const reader = this.#reader;
    this.#reader = undefined;
    await this.#acking.catch(() => {});
    await reader?.close();
  }

  /**
   * Emits the entries but the end markers; the markers read (the first one ends the subtask, the others are
   * for other subtasks: not acknowledged until #putBack appended them again).
   */
  #emit(entries: readonly StreamEntry[]): StreamEntry[] {
    const markers: StreamEntry[] = [];
    for (const entry of entries) {
      if (this.#isMarker(entry)) {
        markers.push(entry);
        if (!this.#ended) {
          // from the next checkpoint's snapshot on, which acknowledges the marker, a restore knows this subtask ended
          this.#ended = true;
          this.#unacked.push(entry.id);
        }
        continue;
      }
      this.#unacked.push(entry.id);
      this.output.collect({ id: entry.id, fields: entry.fields });
      this.recordsEmitted++;
    }
    return markers;
  }

  #isMarker(entry: StreamEntry): boolean {
    return this.spec.endField !== undefined && Object.hasOwn(entry.fields, this.spec.endField);
  }

  /** Between two reads: backpressure, cancellation, a failed acknowledgement, and a turn of the event loop (checkpoint triggers). */
  async #pause(): Promise<void> {
    const { backpressure, signal } = this.context;
    if (backpressure.blocked) await backpressure.wait();
    await new Promise<void>((resolve) => setImmediate(resolve));
    if (signal.aborted) throw signal.reason;
    if (this.#ackError !== undefined) throw this.#ackError;
  }

  /** The end marker was read: acknowledged once the job's final checkpoint covers everything emitted. */
  async #finish(): Promise<void> {
    if (this.context.awaitFinalCheckpoint === undefined) {
      this.#ack(this.#unacked);
      this.#unacked = [];
    } else {
      // undefined: no final checkpoint can be taken; what was not acknowledged stays pending (read again next time)
      await awaitFinalCheckpoint(this.context);
    }
    await this.#acking;
    if (this.#ackError !== undefined) throw this.#ackError;
  }

  #ack(ids: readonly string[]): void {
    const reader = this.#reader;
    if (reader === undefined || ids.length === 0) return;
    this.#acking = this.#acking.then(() =>
      reader.ack(ids).catch((error: unknown) => {
        this.#ackError ??= isEngineError(error) ? error : this.#unavailable(`acknowledging ${ids.length} entries failed: ${(error as Error).message}`, error);
      }),
    );
  }

  /** A consumer of this source's group whose subtask no longer exists (`<prefix>-<n>`, n >= parallelism). */
  #isOrphan(consumer: string): boolean {
    const prefix = `${this.spec.consumerPrefix}-`;
    if (!consumer.startsWith(prefix)) return false;
    const index = Number(consumer.slice(prefix.length));
    return Number.isInteger(index) && index >= this.context.parallelism;
  }

  #unavailable(problem: string, cause?: unknown): EngineError {
    return sourceUnavailable({ operator: this.context.operatorName, url: this.spec.url, stream: this.spec.stream, problem, ...(cause === undefined ? {} : { cause }) });
  }
}

/**
 * Whether the checkpoint a source attempt was restored from says its subtask had read its end marker: it
 * did at the same parallelism, or every subtask had (the stream is done, at any parallelism).
 */
function endedAtRestore(context: OperatorContext): boolean {
  const { state, subtask, parallelism } = context;
  if (state?.restored !== true) return false;
  const ended = state.operator().listState<[number, number]>(STREAM_SOURCE_ENDED_STATE, 'union').get();
  if (ended.length === 0) return false;
  const before = ended[0]?.[1] as number;
  if (new Set(ended.map(([s]) => s)).size === before) return true;
  return before === parallelism && ended.some(([s]) => s === subtask);
}
