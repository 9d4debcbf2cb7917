import { EngineError, invalidEngineArgument } from '../errors/engine-error.js';
import { findFencingRefusal } from '../errors/fencing-refusal.js';
import { COUNTED_FAILURES, type CheckpointCoordinatorOptions, type CheckpointFailureReason, type ResolvedCheckpointCoordinatorOptions, resolveCheckpointCoordinatorOptions } from './checkpoint-coordinator-options.js';
import type { CompletedCheckpoint, TaskStateHandle } from './checkpoint-store.js';

interface PendingCheckpoint {
  readonly checkpointId: number;
  readonly triggeredAtMs: number;
  readonly acknowledged: Map<string, TaskStateHandle>;
  readonly timeout: unknown;
  /** Every task acknowledged; being recorded in the store. */
  completing: boolean;
}

/**
 * The job master's side of checkpointing (Flink's CheckpointCoordinator, one job): triggers a checkpoint
 * every `intervalMs` (no more than `maxConcurrent` pending, `minPauseMs` after the last completion) by
 * telling the sources to inject barriers; collects every task's acknowledgement with its state handle; a
 * checkpoint every task acknowledged is recorded in the CheckpointStore — only then is it completed — and
 * older pending ones are subsumed, the oldest completed beyond `retained` removed with their state, and
 * tasks told (`notifyComplete`, for two-phase-commit sinks). A decline or the timeout aborts a checkpoint
 * and discards what was acknowledged for it; more consecutive counted failures than `tolerableFailures`
 * fail the job master (`onFailure` with WEFT_ERR_CHECKPOINT_FAILED: a global failover, or the job fails)
 * and clear the count (Flink's CheckpointFailureManager): the coordinator goes on triggering, for the
 * restarted tasks, until it is stopped.
 */
export class CheckpointCoordinator {
  readonly #options: ResolvedCheckpointCoordinatorOptions;
  readonly #tasks: ReadonlySet<string>;
  readonly #pending = new Map<number, PendingCheckpoint>();
  /** Completions under way (every acknowledgement in; being stored, older ones discarded). */
  readonly #completing = new Set<Promise<void>>();
  #latest: CompletedCheckpoint | undefined;
  #lastCompletedAtMs = Number.NEGATIVE_INFINITY;
  #consecutiveFailures = 0;
  #tick: unknown;
  #started = false;
  #stopped = false;

  constructor(options: CheckpointCoordinatorOptions) {
    this.#options = resolveCheckpointCoordinatorOptions(options);
    this.#tasks = new Set(this.#options.tasks);
  }

  /** The newest completed checkpoint this coordinator saw or found in the store at start. */
  get latestCompleted(): CompletedCheckpoint | undefined {
    return this.#latest;
  }

  get pendingCheckpointIds(): number[] {
    return [...this.#pending.keys()].sort((a, b) => a - b);
  }

  /** Reads the latest completed checkpoint from the store and starts the periodic trigger. */
  async start(): Promise<void> {
    if (this.#started) return;
    this.#started = true;
    this.#latest = (await this.#options.store.completed()).at(-1);
    this.#schedule(this.#options.intervalMs);
  }

  /** Stops triggering and aborts every pending checkpoint (COORDINATOR_STOPPED). */
  stop(): void {
    if (this.#stopped) return;
    this.#stopped = true;
    this.#options.timers.clearTimeout(this.#tick);
    for (const pending of [...this.#pending.values()]) if (!pending.completing) this.#abort(pending, 'COORDINATOR_STOPPED');
  }

  /**
   * A failover restarts tasks: every pending checkpoint not already completing is aborted (`FAILOVER`, not
   * counted: Flink's JOB_FAILOVER_REGION), rather than left to expire while the tasks it waits for restart.
   */
  abortPending(): void {
    for (const pending of [...this.#pending.values()]) if (!pending.completing) this.#abort(pending, 'FAILOVER');
  }

  /** Triggers a checkpoint now (the periodic trigger calls this); undefined when it may not (stopped, too many pending). */
  async triggerCheckpoint(): Promise<number | undefined> {
    if (this.#stopped || this.#pending.size >= this.#options.maxConcurrent) return undefined;
    let checkpointId: number;
    try {
      checkpointId = await this.#options.store.nextCheckpointId();
    } catch (error) {
      // the store is unreachable (or closed at the job's end): no checkpoint this time, nothing to abort
      this.#failIfFenced(error);
      return undefined;
    }
    if (this.#stopped) return undefined;
    const triggeredAtMs = this.#options.clock();
    const pending: PendingCheckpoint = {
      checkpointId,
      triggeredAtMs,
      acknowledged: new Map(),
      completing: false,
      timeout: this.#options.timers.setTimeout(() => {
        if (this.#pending.get(checkpointId) === pending && !pending.completing) this.#abort(pending, 'EXPIRED');
      }, this.#options.timeoutMs),
    };
    this.#pending.set(checkpointId, pending);
    try {
      await this.#options.triggerSources(checkpointId, triggeredAtMs);
    } catch {
      if (this.#pending.get(checkpointId) === pending) this.#abort(pending, 'TRIGGER_FAILURE');
      return undefined;
    }
    return checkpointId;
  }

  /**
   * Task `taskId` took its snapshot of `checkpointId`. Completes the checkpoint once every task has;
   * resolves after that is recorded. A late acknowledgement (the checkpoint was aborted or completed) has its
   * state discarded.
   */
  async acknowledge(checkpointId: number, taskId: string, handle: TaskStateHandle): Promise<void> {
    if (!this.#tasks.has(taskId)) throw invalidEngineArgument('taskId', `${JSON.stringify(taskId)} is not a task of this job's checkpoints`);
    const pending = this.#pending.get(checkpointId);
    if (pending === undefined || pending.completing || pending.acknowledged.has(taskId)) {
      await this.#options.discardState(handle).catch(() => {});
      return;
    }
    pending.acknowledged.set(taskId, handle);
    if (pending.acknowledged.size !== this.#tasks.size) return;
    const completion = this.#complete(pending).finally(() => this.#completing.delete(completion));
    this.#completing.add(completion);
    await completion;
  }

  /**
   * Resolves once no completion is under way: a checkpoint whose acknowledgements were all in is stored,
   * the ones it subsumes discarded and `notifyComplete` called (what a restore after a failover waits
   * for, so it reads the latest checkpoint, never one being discarded).
   */
  async settled(): Promise<void> {
    while (this.#completing.size > 0) await Promise.allSettled([...this.#completing]);
  }

  /**
   * Task `taskId` cannot take checkpoint `checkpointId`: it is aborted. `TASK_FAILURE` counts toward the
   * tolerated failures; `DECLINED` does not. `message`: why (the job's failure names it, when this one fails it).
   */
  decline(checkpointId: number, taskId: string, reason: 'TASK_FAILURE' | 'DECLINED', message?: string): void {
    if (!this.#tasks.has(taskId)) throw invalidEngineArgument('taskId', `${JSON.stringify(taskId)} is not a task of this job's checkpoints`);
    const pending = this.#pending.get(checkpointId);
    if (pending !== undefined && !pending.completing) this.#abort(pending, reason, message);
  }

  async #complete(pending: PendingCheckpoint): Promise<void> {
    pending.completing = true;
    this.#options.timers.clearTimeout(pending.timeout);
    const completed: CompletedCheckpoint = {
      checkpointId: pending.checkpointId,
      triggeredAtMs: pending.triggeredAtMs,
      completedAtMs: this.#options.clock(),
      tasks: Object.fromEntries([...pending.acknowledged].sort(([a], [b]) => (a < b ? -1 : 1))),
    };
    try {
      await this.#options.store.addCompleted(completed);
    } catch (error) {
      pending.completing = false;
      // refused as fenced: not a failure to count (and fail over for) but the end of this run's checkpoints
      if (this.#failIfFenced(error)) return;
      this.#abort(pending, 'STORE_FAILURE', `recording it failed: ${(error as Error).message}`);
      return;
    }
    this.#pending.delete(pending.checkpointId);
    this.#latest = completed;
    this.#lastCompletedAtMs = completed.completedAtMs;
    this.#consecutiveFailures = 0;
    for (const older of [...this.#pending.values()]) if (older.checkpointId < completed.checkpointId && !older.completing) this.#abort(older, 'SUBSUMED');
    const all = await this.#options.store.completed();
    for (const old of all.slice(0, Math.max(0, all.length - this.#options.retained))) {
      await this.#options.store.remove(old.checkpointId);
      await Promise.all(Object.values(old.tasks).map((h) => this.#options.discardState(h).catch(() => {})));
    }
    this.#options.notifyComplete(completed.checkpointId);
  }

  #abort(pending: PendingCheckpoint, reason: CheckpointFailureReason, why?: string): void {
    this.#pending.delete(pending.checkpointId);
    this.#options.timers.clearTimeout(pending.timeout);
    for (const handle of pending.acknowledged.values()) void this.#options.discardState(handle).catch(() => {});
    this.#options.notifyAborted(pending.checkpointId, reason);
    if (!COUNTED_FAILURES.has(reason)) return;
    this.#consecutiveFailures += 1;
    if (this.#consecutiveFailures > this.#options.tolerableFailures) {
      const error = new EngineError(
        'WEFT_ERR_CHECKPOINT_FAILED',
        `checkpoint ${pending.checkpointId} failed (${reason}${why === undefined ? '' : `: ${why}`}): ${this.#consecutiveFailures} checkpoint failures in a row, ${this.#options.tolerableFailures} tolerated`,
        { context: { checkpointId: pending.checkpointId, reason, failures: this.#consecutiveFailures } },
      );
      this.#consecutiveFailures = 0;
      this.#options.onFailure(error);
    }
  }

  /**
   * A store's refusal saying a newer job master run took the job over: no checkpoint of this run can ever
   * be recorded again. It stops, and fails the job master with that refusal (not a failure to tolerate).
   */
  #failIfFenced(error: unknown): boolean {
    if (findFencingRefusal(error) === undefined) return false;
    if (this.#stopped) return true;
    this.stop();
    this.#options.onFailure(error as Error);
    return true;
  }

  #schedule(delayMs: number): void {
    if (this.#stopped) return;
    this.#tick = this.#options.timers.setTimeout(() => void this.#onTick(), delayMs);
  }

  async #onTick(): Promise<void> {
    const pause = this.#lastCompletedAtMs + this.#options.minPauseMs - this.#options.clock();
    if (pause > 0) {
      this.#schedule(pause);
      return;
    }
    this.#schedule(this.#options.intervalMs);
    await this.triggerCheckpoint();
  }
}
