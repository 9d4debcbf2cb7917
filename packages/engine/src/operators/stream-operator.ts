import type { JsonValue, Logger } from '@weft/shuffle-api';
import type { RuntimeContext } from '../api/functions.js';
import type { ExternalFileSystem } from '../io/external-file-system.js';
import type { StreamConnector } from '../io/stream-connector.js';
import type { TaskMemory } from '../memory/task-memory.js';
import type { TaskBackpressure } from '../runtime/backpressure.js';
import type { OperatorStateAccess } from '../runtime/task-checkpointing.js';
import type { TaskIdentity } from '../runtime/user-function-error.js';

/** Where an operator emits: the next operator of its chain, a network output, or several. Synchronous. */
export interface Output {
  collect(value: unknown): void;
}

/**
 * Where an operator sends its watermark (the task broadcasts it, in band, on every output of the task, in
 * order with the records emitted before it; a watermark that does not rise is not sent).
 */
export interface WatermarkOutput {
  emitWatermark(watermarkMs: number): void;
  /** Nothing held back until the next watermark: consumers leave this task's channels out of theirs. */
  markIdle(): void;
}

/** What an operator knows of where it runs. */
export interface OperatorContext extends TaskIdentity {
  readonly jobId: string;
  readonly backpressure: TaskBackpressure;
  readonly signal: AbortSignal;
  /** Directory relative paths resolve against (the job master's working directory). */
  readonly cwd: string;
  /** Where `<scheme>://` inputs and outputs live (RunJobOptions.fileSystems). */
  readonly fileSystems: readonly ExternalFileSystem[];
  /** Where stream sources read (RunJobOptions.streamConnectors). Worker processes rebuild them from their references. @defaultValue [] */
  readonly streamConnectors?: readonly StreamConnector[];
  /** The task's logger (carries the operator and the attempt). @defaultValue a no-op logger */
  readonly logger?: Logger;
  /** Consumer subtasks of this operator's first network output (0 when it has none). */
  readonly outputConsumers: number;
  /** The task's managed memory (its budget, shared by its operators) and spill directory. */
  readonly memory: TaskMemory;
  /**
   * The operator's checkpointed state, when the job takes checkpoints (undefined in batch jobs): what an
   * operator keeps there survives a failure — its task restarts from the latest completed checkpoint.
   */
  readonly state?: OperatorStateAccess;
  /** In a checkpointed job: waits for the job's final checkpoint (TaskCheckpointing.awaitFinalCheckpoint), for a source at its end. */
  readonly awaitFinalCheckpoint?: () => Promise<number | undefined>;
  /** The task's watermark output (absent where a task runs no watermarks, e.g. operators built in tests). */
  readonly watermarks?: WatermarkOutput;
}

/** What a checkpointed operator may do at a checkpoint (Flink's StreamOperator snapshot hooks). */
export interface CheckpointedOperator {
  /** Before the barrier goes downstream: emit what must precede it (a combiner does not: its partials are state, see snapshotState). */
  prepareSnapshotPreBarrier?(): void;
  /**
   * Write what it keeps outside its state backends into them (a source's positions, a combiner's partial
   * aggregates); the task snapshots them next. A promise: what must be durable before the checkpoint is acknowledged (a sink's pre-commit,
   * its buffered lines written); a rejection declines the checkpoint.
   */
  snapshotState?(checkpointId: number): Promise<void> | void;
  /**
   * Checkpoint `checkpointId` is complete (recorded in the job's CheckpointStore; Flink's
   * notifyCheckpointComplete): what the operator snapshotted up to it is durable — a stream source
   * acknowledges the entries read before it, a two-phase-commit sink commits what it pre-committed for it.
   * Not called for aborted checkpoints; a failure may come before any call, so what it does must be safe
   * to redo after a restore. A rejection (or a throw) fails the task.
   */
  notifyCheckpointComplete?(checkpointId: number): Promise<void> | void;
}

/** What a sink reports when its task finishes; the job master publishes it when the job succeeds. */
export type SinkOutput =
  | { readonly kind: 'text-file'; readonly sink: string; readonly path: string; readonly tempDir: string; readonly file: string; readonly subtask: number; readonly parallelism: number }
  | { readonly kind: 'collect'; readonly sink: string; readonly subtask: number; readonly parallelism: number; readonly values: unknown[] }
  /**
   * A two-phase-commit sink's pre-committed transactions, committed by the job master when the job
   * succeeds; `uid` is the sink operator's (unique in the plan, where `sink`, its name, may not be; absent
   * in an event log written before it was recorded).
   */
  | { readonly kind: 'two-phase-commit'; readonly sink: string; readonly uid?: string; readonly subtask: number; readonly parallelism: number; readonly handles: readonly JsonValue[] };

/**
 * A runtime operator (Flink's StreamOperator). `collect` receives the records of input 0 (the only input
 * of a chained operator); two-input heads also get `processInput` for input 1. Calls are synchronous;
 * slow work (writes) registers with the task's backpressure instead of blocking.
 *
 * Lifecycle, driven by the task: `open()` (successors first), records, `endInput(i)` per input,
 * `finish()` once every input ended (emit buffered state here, awaiting backpressure between records),
 * `close()` always — after success or failure.
 */
export interface StreamOperator extends Output, CheckpointedOperator {
  /** Inputs read one group after the other (a join's build side first); default: all at once. */
  readonly inputPhases?: readonly (readonly number[])[];
  open?(): Promise<void> | void;
  processInput?(value: unknown, input: number): void;
  /**
   * The head of a chain: the task's input watermark rose (Flink's processWatermark). An operator that has
   * this emits the watermark onward itself (`context.watermarks`), after what it fired; without it, the
   * task forwards the watermark — unless an operator of its chain makes its own (assignTimestampsAndWatermarks).
   */
  processWatermark?(watermarkMs: number): void;
  endInput?(input: number): Promise<void> | void;
  finish?(): Promise<void> | void;
  close?(): Promise<void> | void;
  /** After `finish()`: what a sink produced. */
  sinkOutput?(): SinkOutput | undefined;
}

/** A source: the head of a chain with no inputs; `run()` emits everything, honouring backpressure. */
export interface SourceOperator extends CheckpointedOperator {
  run(): Promise<void>;
  /** Records emitted so far. */
  readonly recordsEmitted: number;
  close?(): Promise<void> | void;
}

/** Emits the values of a Map-like iteration with backpressure and cancellation checks between records. */
export async function emitAll<T>(items: Iterable<T>, output: Output, context: OperatorContext, map: (item: T) => unknown): Promise<void> {
  const backpressure = context.backpressure;
  let n = 0;
  for (const item of items) {
    output.collect(map(item));
    if (backpressure.blocked) await backpressure.wait();
    if ((++n & 0x3fff) === 0) {
      if (context.signal.aborted) throw context.signal.reason;
      await new Promise<void>((resolve) => setImmediate(resolve));
    }
  }
}

/** The part of an operator's context user functions see. */
export function runtimeContextOf(context: OperatorContext): RuntimeContext {
  return Object.freeze({ operatorName: context.operatorName, subtask: context.subtask, parallelism: context.parallelism, attempt: context.attempt });
}

/**
 * An operator a text source may hand whole chunks of its UTF-8 bytes instead of line records — only when
 * the plan fused them (`ChainedOperator.fusion === 'text-chunks'`) and it is the source's only output.
 * `bytes[start, end)` holds whole lines separated by `\n` (a `\r` before it stays), ending before a
 * newline or at the end of the input; it is valid only during the call. Returns the lines it held (the
 * source's record count).
 */
export interface TextChunkInput {
  collectTextChunk(bytes: Uint8Array, start: number, end: number): number;
}

/** A count of words that takes UTF-8 text and scans it itself (the word-count combiner); returns the `\n` bytes seen. */
export interface WordCountInput {
  countWordsIn(bytes: Uint8Array, start: number, end: number): number;
}

export function isTextChunkInput(output: Output): output is Output & TextChunkInput {
  return typeof (output as Partial<TextChunkInput>).collectTextChunk === 'function';
}

export function isWordCountInput(output: Output): output is Output & WordCountInput {
  return typeof (output as Partial<WordCountInput>).countWordsIn === 'function';
}
