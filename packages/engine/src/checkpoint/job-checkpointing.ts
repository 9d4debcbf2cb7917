import { type Logger, noopLogger } from '@weft/shuffle-api';
import { EngineError } from '../errors/engine-error.js';
import type { JobPlan } from '../graph/job-plan.js';
import { OperatorStateHolder } from '../runtime/operator-state-holder.js';
import type { TaskCheckpointing, TaskRestoreState, TaskSnapshot } from '../runtime/task-checkpointing.js';
import type { TaskDeployment } from '../runtime/task-deployment.js';
import type { CheckpointBarrierMode } from './checkpoint-barrier-handler.js';
import { CheckpointCoordinator } from './checkpoint-coordinator.js';
import type { CheckpointFailureReason } from './checkpoint-coordinator-options.js';
import { checkpointPrefix, keySegment } from './checkpoint-keys.js';
import type { CheckpointStorage } from './checkpoint-storage.js';
import type { CheckpointStore, CompletedCheckpoint, TaskStateHandle } from './checkpoint-store.js';
import { type CheckpointedJobEnd, type CheckpointRetention, DEFAULT_CHECKPOINT_RETENTION, discardsCheckpointsAtEnd } from './checkpoint-retention.js';
import { type DiscardedCheckpoints, discardJobCheckpoints } from './discard-job-checkpoints.js';

/** What a task's acknowledgement is recorded as in a completed checkpoint (its TaskStateHandle). */
export interface SnapshotHandle {
  readonly attemptId: string;
  readonly vertexId: string;
  readonly subtask: number;
  readonly parallelism: number;
  /** Storage keys of each operator's snapshots, by operator uid. */
  readonly operators: Readonly<Record<string, { readonly keyed?: string; readonly operator?: string }>>;
  readonly bytes: number;
}

export interface JobCheckpointingOptions {
  readonly jobId: string;
  readonly plan: JobPlan;
  readonly mode: CheckpointBarrierMode;
  readonly intervalMs: number;
  readonly timeoutMs?: number | undefined;
  readonly retained?: number | undefined;
  readonly tolerableFailures?: number | undefined;
  readonly store: CheckpointStore;
  readonly storage: CheckpointStorage;
  /** The checkpoint the run starts from (`--from-checkpoint`), already checked (checkRestorable). @defaultValue none: a fresh start */
  readonly restoreFrom?: CompletedCheckpoint | undefined;
  /** What `end()` does with the job's checkpoints. @defaultValue 'retain-on-cancellation' */
  readonly retention?: CheckpointRetention | undefined;
  /** Checkpoints failed more times in a row than tolerated: the job master fails over globally (JobMaster.fail), or the job fails. */
  readonly onFailure: (error: Error) => void;
  readonly logger?: Logger | undefined;
}

/** How the run's checkpoints went (JobResult.checkpoints). */
export interface CheckpointSummary {
  readonly mode: CheckpointBarrierMode;
  readonly intervalMs: number;
  readonly completed: number;
  readonly aborted: number;
  /** Why they were aborted (CheckpointFailureReason → count). */
  readonly abortReasons: Readonly<Partial<Record<CheckpointFailureReason, number>>>;
  /** The newest completed checkpoint's id, if any completed (in this run or before it). */
  readonly latestCompletedId?: number;
  /** The checkpoint the run started from (`--from-checkpoint`), if any. */
  readonly restoredFrom?: number;
  /** Task attempts that started from a checkpoint (a restart after a failure, or the start of a restored run). */
  readonly tasksRestored: number;
  /** Snapshot bytes of the newest completed checkpoint (all tasks). */
  readonly latestStateBytes?: number;
  /** Trigger to completion of the newest completed checkpoint, in milliseconds. */
  readonly latestDurationMs?: number;
  /** What the run's end did with the job's checkpoints (CheckpointingOptions.retention). */
  readonly retention: CheckpointRetention;
  /** What the run's end removed, when its retention said to (absent: they were kept, or the removal failed). */
  readonly discarded?: DiscardedCheckpoints;
  /** Why removing them at the end failed (a store down, or fenced: a newer run of the job id holds its lease). */
  readonly discardError?: string;
}

/**
 * The job master's side of a checkpointed job: runs the CheckpointCoordinator over the job's tasks, hands
 * each task attempt its TaskCheckpointing (a source's subscription to triggers, where its
 * acknowledgement goes, the state it starts from), writes acknowledged snapshots to the CheckpointStorage
 * and hands the coordinator their keys. A task attempt deployed again (a failover) starts from the latest
 * completed checkpoint, and the checkpoints still pending are declined: their old attempts' barriers are
 * gone. Acknowledgements of attempts no longer current are ignored.
 */
export class JobCheckpointing {
  readonly #options: JobCheckpointingOptions;
  readonly #logger: Logger;
  readonly #coordinator: CheckpointCoordinator;
  readonly #sourceTasks: readonly string[];
  /** Current attempt of each execution vertex. */
  readonly #current = new Map<string, string>();
  /** Trigger listeners of the running source attempts, by execution vertex id. */
  readonly #triggers = new Map<string, { readonly attemptId: string; readonly listener: (checkpointId: number, timestampMs: number) => void }>();
  /** Completion listeners of the running attempts (stream sources, two-phase-commit sinks), by execution vertex id. */
  readonly #completions = new Map<string, { readonly attemptId: string; readonly listener: (checkpointId: number) => void }>();
  #restoreFrom: CompletedCheckpoint | undefined;
  readonly #loaded = new Map<string, Promise<TaskRestoreState>>();
  #completed = 0;
  #aborted = 0;
  readonly #abortReasons: Partial<Record<CheckpointFailureReason, number>> = {};
  #tasksRestored = 0;
  /** Sources waiting for the final checkpoint (awaitFinalCheckpoint): attempt id and resolver, by execution vertex id. */
  readonly #ended = new Map<string, { readonly attemptId: string; readonly resolve: (checkpointId: number | undefined) => void }>();
  /** The first checkpoint triggered once every source waited for the final one; its completion releases them. */
  #finalCheckpointId: number | undefined;
  /** Acknowledgements being written and recorded. */
  readonly #inFlight = new Set<Promise<void>>();
  /** Tasks a failover restarts whose next attempt has not loaded its state yet: no checkpoint is triggered meanwhile. */
  readonly #restarting = new Set<string>();
  #discarded: DiscardedCheckpoints | undefined;
  #discardError: string | undefined;

  constructor(options: JobCheckpointingOptions) {
    this.#options = options;
    this.#logger = (options.logger ?? noopLogger).child({ jobId: options.jobId });
    this.#restoreFrom = options.restoreFrom;
    const tasks = options.plan.vertices.flatMap((v) => Array.from({ length: v.parallelism }, (_, i) => `${v.id}#${i}`));
    this.#sourceTasks = options.plan.vertices.filter((v) => v.inputs.length === 0).flatMap((v) => Array.from({ length: v.parallelism }, (_, i) => `${v.id}#${i}`));
    this.#coordinator = new CheckpointCoordinator({
      tasks,
      intervalMs: options.intervalMs,
      ...(options.timeoutMs === undefined ? {} : { timeoutMs: options.timeoutMs }),
      ...(options.retained === undefined ? {} : { retained: options.retained }),
      ...(options.tolerableFailures === undefined ? {} : { tolerableFailures: options.tolerableFailures }),
      store: options.store,
      triggerSources: (checkpointId, triggeredAtMs) => this.#triggerSources(checkpointId, triggeredAtMs),
      notifyComplete: (checkpointId) => {
        this.#completed += 1;
        this.#restoreFrom = this.#coordinator.latestCompleted;
        this.#logger.debug({ checkpointId }, 'checkpoint completed');
        const releaseFinal = this.#finalCheckpointId !== undefined && checkpointId >= this.#finalCheckpointId;
        for (const [taskId, { attemptId, listener }] of this.#completions) {
          if (this.#current.get(taskId) !== attemptId) continue;
          try {
            listener(checkpointId);
          } catch (error) {
            this.#logger.warn({ checkpointId, taskId, error: (error as Error).message }, 'a task failed on a checkpoint completion');
          }
        }
        if (releaseFinal) this.#releaseEnded(checkpointId);
      },
      notifyAborted: (checkpointId, reason: CheckpointFailureReason) => {
        this.#aborted += 1;
        this.#abortReasons[reason] = (this.#abortReasons[reason] ?? 0) + 1;
        this.#logger.debug({ checkpointId, reason }, 'checkpoint aborted');
      },
      discardState: (handle) => this.#discard(handle),
      onFailure: options.onFailure,
    });
  }

  start(): Promise<void> {
    return this.#coordinator.start();
  }

  /**
   * Stops triggering (pending checkpoints are aborted) and resolves once every acknowledgement under way
   * settled: nothing writes to the storage or the store afterwards. Idempotent.
   */
  async stop(): Promise<void> {
    this.#coordinator.stop();
    this.#releaseEnded(undefined);
    while (this.#inFlight.size > 0) await Promise.allSettled([...this.#inFlight]);
  }

  /**
   * The run ended (after `stop()`): removes the job's checkpoints when its retention says so for `end`
   * (discardJobCheckpoints: records first, then data; nothing once a newer run of the job id took the
   * lease). Never rejects: a failed removal is logged and reported in the summary, and leaves garbage for
   * `weft gc`. Resolves with what was removed, undefined when they were kept.
   */
  async end(end: CheckpointedJobEnd): Promise<DiscardedCheckpoints | undefined> {
    await this.stop();
    const retention = this.#options.retention ?? DEFAULT_CHECKPOINT_RETENTION;
    if (!discardsCheckpointsAtEnd(retention, end)) {
      this.#logger.debug({ retention, end }, 'checkpoints kept at the end of the run');
      return undefined;
    }
    try {
      this.#discarded = await discardJobCheckpoints({ jobId: this.#options.jobId, store: this.#options.store, storage: this.#options.storage });
      this.#logger.debug({ retention, end, ...this.#discarded }, 'checkpoints removed at the end of the run');
      return this.#discarded;
    } catch (error) {
      this.#discardError = (error as Error).message;
      this.#logger.warn({ retention, end, storage: this.#options.storage.description, error: this.#discardError }, 'removing the checkpoints at the end of the run failed: `weft gc` collects what is left');
      return undefined;
    }
  }

  summary(): CheckpointSummary {
    const latest = this.#coordinator.latestCompleted;
    const handles = latest === undefined ? [] : Object.values(latest.tasks);
    return {
      mode: this.#options.mode,
      intervalMs: this.#options.intervalMs,
      completed: this.#completed,
      aborted: this.#aborted,
      abortReasons: { ...this.#abortReasons },
      ...(latest === undefined ? {} : { latestCompletedId: latest.checkpointId, latestStateBytes: handles.reduce((n, h) => n + (typeof h['bytes'] === 'number' ? h['bytes'] : 0), 0), latestDurationMs: latest.completedAtMs - latest.triggeredAtMs }),
      ...(this.#options.restoreFrom === undefined ? {} : { restoredFrom: this.#options.restoreFrom.checkpointId }),
      tasksRestored: this.#tasksRestored,
      retention: this.#options.retention ?? DEFAULT_CHECKPOINT_RETENTION,
      ...(this.#discarded === undefined ? {} : { discarded: this.#discarded }),
      ...(this.#discardError === undefined ? {} : { discardError: this.#discardError }),
    };
  }

  /**
   * A failover was decided (a task's, or the job master's own): its tasks restart, so what is pending is
   * aborted (`FAILOVER`, not counted toward the tolerated failures) and no checkpoint is triggered until
   * each of them started its next attempt and loaded its state — as Flink's coordinator neither lets a
   * failover's checkpoints expire nor triggers while not all tasks run (restoring is not running). Without
   * this, a restart backoff or a restore longer than the checkpoint timeout made an expiry of the failover's
   * own making count as a checkpoint failure.
   */
  failedOver(tasks: readonly string[]): void {
    for (const task of tasks) this.#restarting.add(task);
    this.#coordinator.abortPending();
  }

  /** The TaskCheckpointing of a task attempt about to run (RegionRunner's TaskCheckpointingProvider). */
  readonly forTask = async (task: TaskDeployment): Promise<TaskCheckpointing> => {
    const taskId = task.executionVertexId;
    const previous = this.#current.get(taskId);
    this.#current.set(taskId, task.attemptId);
    if (this.#ended.has(taskId) || (previous !== undefined && previous !== task.attemptId)) {
      // the attempt that waited for the final checkpoint is gone: the others wait for one after this attempt ends
      this.#ended.delete(taskId);
      this.#finalCheckpointId = undefined;
    }
    if (previous !== undefined && previous !== task.attemptId) {
      // a failover: what is pending now waits for barriers its old attempts will never send
      for (const checkpointId of this.#coordinator.pendingCheckpointIds) this.#coordinator.decline(checkpointId, taskId, 'DECLINED');
      // one that had all its acknowledgements completes first (discarding the one it subsumes): every
      // task of the failover then restores from it — none from a checkpoint being discarded, none from another
      await this.#coordinator.settled();
    }
    const from = this.#restoreFrom;
    const restore = from === undefined ? undefined : await this.#restoreOf(from, task.vertexId);
    if (restore !== undefined) this.#tasksRestored += 1;
    const isCurrent = (): boolean => this.#current.get(taskId) === task.attemptId;
    // restarted and its state loaded (Flink's INITIALIZING → RUNNING): checkpoints may be triggered for it again
    if (isCurrent()) this.#restarting.delete(taskId);
    return {
      mode: this.#options.mode,
      restore,
      onTrigger: (listener) => {
        this.#triggers.set(taskId, { attemptId: task.attemptId, listener });
        return () => {
          if (this.#triggers.get(taskId)?.attemptId === task.attemptId) this.#triggers.delete(taskId);
        };
      },
      onComplete: (listener) => {
        this.#completions.set(taskId, { attemptId: task.attemptId, listener });
        return () => {
          if (this.#completions.get(taskId)?.attemptId === task.attemptId) this.#completions.delete(taskId);
        };
      },
      awaitFinalCheckpoint: () =>
        new Promise<number | undefined>((resolve) => {
          if (!isCurrent()) return resolve(undefined);
          this.#ended.set(taskId, { attemptId: task.attemptId, resolve });
        }),
      acknowledge: (snapshot) => {
        if (!isCurrent()) return;
        const done: Promise<void> = this.#acknowledge(task, snapshot)
          .catch((error: unknown) => this.#logger.warn({ checkpointId: snapshot.checkpointId, taskId, error: (error as Error).message }, 'acknowledging a checkpoint failed'))
          .finally(() => this.#inFlight.delete(done));
        this.#inFlight.add(done);
      },
      decline: (checkpointId, message, reason) => {
        if (!isCurrent()) return;
        this.#logger.debug({ checkpointId, taskId, reason, message }, 'checkpoint declined');
        this.#coordinator.decline(checkpointId, taskId, reason, message);
      },
    };
  };

  #triggerSources(checkpointId: number, timestampMs: number): void {
    if (this.#restarting.size > 0) throw new Error(`task ${this.#restarting.values().next().value} is restarting`);
    const missing = this.#sourceTasks.filter((t) => this.#current.get(t) === undefined || this.#triggers.get(t)?.attemptId !== this.#current.get(t));
    // a source not running (not started yet, restarting, or finished): no barrier goes out at all
    if (missing.length > 0) {
      // no checkpoint can be taken any more: sources waiting for a final one stop waiting
      if (this.#ended.size > 0 && missing.some((t) => this.#current.has(t) && this.#triggers.get(t) === undefined)) this.#releaseEnded(undefined);
      throw new Error(`source task ${missing[0]} is not running`);
    }
    if (this.#finalCheckpointId === undefined && this.#ended.size > 0 && this.#sourceTasks.every((t) => this.#ended.get(t)?.attemptId === this.#current.get(t))) this.#finalCheckpointId = checkpointId;
    for (const t of this.#sourceTasks) this.#triggers.get(t)?.listener(checkpointId, timestampMs);
  }

  #releaseEnded(checkpointId: number | undefined): void {
    const waiting = [...this.#ended.values()];
    this.#ended.clear();
    this.#finalCheckpointId = undefined;
    for (const { resolve } of waiting) resolve(checkpointId);
  }

  async #acknowledge(task: TaskDeployment, snapshot: TaskSnapshot): Promise<void> {
    const { checkpointId } = snapshot;
    const prefix = `${checkpointPrefix(this.#options.jobId, checkpointId)}${keySegment(task.executionVertexId)}`;
    const operators: Record<string, { keyed?: string; operator?: string }> = {};
    let bytes = 0;
    try {
      for (const [uid, state] of Object.entries(snapshot.operators)) {
        const keys: { keyed?: string; operator?: string } = {};
        for (const part of ['keyed', 'operator'] as const) {
          const data = state[part];
          if (data === undefined) continue;
          const key = `${prefix}/${keySegment(uid)}.${part}`;
          await this.#options.storage.write(key, data);
          keys[part] = key;
          bytes += data.byteLength;
        }
        operators[uid] = keys;
      }
    } catch (error) {
      this.#logger.warn({ checkpointId, taskId: task.executionVertexId, storage: this.#options.storage.description, error: (error as Error).message }, 'writing a checkpoint snapshot failed');
      await this.#discard({ operators } as unknown as TaskStateHandle);
      if (this.#current.get(task.executionVertexId) === task.attemptId) this.#coordinator.decline(checkpointId, task.executionVertexId, 'TASK_FAILURE', `task ${task.attemptId}: writing its snapshot failed: ${(error as Error).message}`);
      return;
    }
    const handle: SnapshotHandle = { attemptId: task.attemptId, vertexId: task.vertexId, subtask: task.subtask, parallelism: task.parallelism, operators, bytes };
    await this.#coordinator.acknowledge(checkpointId, task.executionVertexId, handle as unknown as TaskStateHandle);
  }

  async #discard(handle: TaskStateHandle): Promise<void> {
    const operators = (handle as unknown as Partial<SnapshotHandle>).operators ?? {};
    for (const keys of Object.values(operators)) {
      for (const key of [keys.keyed, keys.operator]) if (key !== undefined) await this.#options.storage.delete(key).catch(() => {});
    }
  }

  /**
   * The state of `vertexId`'s operators in `checkpoint` (loaded once per checkpoint and vertex). A snapshot
   * the storage cannot give back (a store that is down) rejects with `WEFT_ERR_STATE_RESTORE` naming the
   * checkpoint and the vertex: the task fails, and restarts as the restart strategy allows.
   */
  #restoreOf(checkpoint: CompletedCheckpoint, vertexId: string): Promise<TaskRestoreState> {
    const cacheKey = `${checkpoint.checkpointId}/${vertexId}`;
    // only the checkpoint restored from now is kept loaded
    for (const key of this.#loaded.keys()) if (!key.startsWith(`${checkpoint.checkpointId}/`)) this.#loaded.delete(key);
    let loaded = this.#loaded.get(cacheKey);
    if (loaded === undefined) {
      const { jobId, storage } = this.#options;
      loaded = loadRestoreState(checkpoint, vertexId, storage).catch((error: unknown) => {
        throw restoreRefused(checkpoint, jobId, `a snapshot of vertex ${vertexId} cannot be read from ${storage.description}: ${(error as Error).message}`, error);
      });
      this.#loaded.set(cacheKey, loaded);
      loaded.catch(() => this.#loaded.delete(cacheKey));
    }
    return loaded;
  }
}

/** `WEFT_ERR_STATE_RESTORE` naming the checkpoint. */
function restoreRefused(checkpoint: CompletedCheckpoint | number, jobId: string, problem: string, cause?: unknown): EngineError {
  const id = typeof checkpoint === 'number' ? checkpoint : checkpoint.checkpointId;
  return new EngineError('WEFT_ERR_STATE_RESTORE', `cannot restore job ${jobId} from checkpoint ${id}: ${problem}`, { context: { checkpointId: id, jobId }, ...(cause === undefined ? {} : { cause }) });
}

function handlesOf(checkpoint: CompletedCheckpoint, vertexId: string): SnapshotHandle[] {
  return Object.values(checkpoint.tasks)
    .map((h) => h as unknown as SnapshotHandle)
    .filter((h) => h.vertexId === vertexId)
    .sort((a, b) => a.subtask - b.subtask);
}

async function loadRestoreState(checkpoint: CompletedCheckpoint, vertexId: string, storage: CheckpointStorage): Promise<TaskRestoreState> {
  const operators: Record<string, { keyed: Uint8Array[]; operator: Uint8Array[] }> = {};
  for (const handle of handlesOf(checkpoint, vertexId)) {
    for (const [uid, keys] of Object.entries(handle.operators)) {
      const entry = (operators[uid] ??= { keyed: [], operator: [] });
      if (keys.keyed !== undefined) entry.keyed.push(await storage.read(keys.keyed));
      if (keys.operator !== undefined) entry.operator.push(await storage.read(keys.operator));
    }
  }
  return { checkpointId: checkpoint.checkpointId, operators };
}

/**
 * The checks of `resolveRestoreCheckpoint` that read no snapshot: the checkpoint (`latest` or an id) is
 * among the store's completed ones, and holds the state of every vertex of the plan, of all its old
 * subtasks. Cheap: a run makes them before it takes the job's lease, so a refused restore changes nothing.
 */
export async function findRestoreCheckpoint(request: { readonly jobId: string; readonly plan: JobPlan; readonly store: CheckpointStore; readonly from: 'latest' | number }): Promise<CompletedCheckpoint> {
  const { jobId, plan, store, from } = request;
  const completed = await store.completed();
  const checkpoint = from === 'latest' ? completed.at(-1) : completed.find((c) => c.checkpointId === from);
  if (checkpoint === undefined) {
    const known = completed.length === 0 ? 'it has no completed checkpoint' : `its completed checkpoints are ${completed.map((c) => c.checkpointId).join(', ')}`;
    throw new EngineError('WEFT_ERR_STATE_RESTORE', `cannot restore job ${jobId} from checkpoint ${String(from)}: no such checkpoint (${known})`, { context: { checkpointId: String(from), jobId } });
  }
  for (const vertex of plan.vertices) {
    const handles = handlesOf(checkpoint, vertex.id);
    if (handles.length === 0) throw restoreRefused(checkpoint, jobId, `it holds no state of vertex ${vertex.id} (a checkpoint of another job?)`);
    const oldParallelism = handles[0]?.parallelism ?? 0;
    if (handles.length !== oldParallelism || handles.some((h, i) => h.subtask !== i)) throw restoreRefused(checkpoint, jobId, `vertex ${vertex.id}'s state is incomplete: ${handles.length} of its ${oldParallelism} subtasks`);
  }
  return checkpoint;
}

/**
 * Picks the checkpoint a run restores from (`latest` or an id) among the store's completed ones and checks,
 * before anything runs, that the plan can start from it: every vertex has the state of all its old
 * subtasks, every snapshot is readable and intact, and keyed state has the plan's max parallelism (key
 * groups can be redistributed over another parallelism, not another max parallelism). Every failure is
 * `WEFT_ERR_STATE_RESTORE` naming the checkpoint; nothing is restored half.
 */
export async function resolveRestoreCheckpoint(request: { readonly jobId: string; readonly plan: JobPlan; readonly store: CheckpointStore; readonly storage: CheckpointStorage; readonly from: 'latest' | number }): Promise<CompletedCheckpoint> {
  const { jobId, plan, storage } = request;
  const checkpoint = await findRestoreCheckpoint(request);
  for (const vertex of plan.vertices) {
    let state: TaskRestoreState;
    try {
      state = await loadRestoreState(checkpoint, vertex.id, storage);
    } catch (error) {
      throw restoreRefused(checkpoint, jobId, `a snapshot of vertex ${vertex.id} cannot be read from ${storage.description}: ${(error as Error).message}`, error);
    }
    const keyedInput = plan.edges.find((e) => e.target === vertex.index && e.partitioning.type === 'hash');
    const head = vertex.operators[0]?.node;
    for (let subtask = 0; subtask < vertex.parallelism; subtask++) {
      for (const chained of vertex.operators) {
        const uid = chained.node.uid;
        const restored = state.operators[uid];
        if (restored === undefined) throw restoreRefused(checkpoint, jobId, `it holds no state of operator ${JSON.stringify(chained.node.name)} of vertex ${vertex.id}`);
        const holder = new OperatorStateHolder({ operator: chained.node.name, subtask, parallelism: vertex.parallelism, maxParallelism: chained.node === head ? keyedInput?.maxParallelism : undefined, restored });
        try {
          if (chained.node === head && keyedInput !== undefined) holder.keyed();
          holder.operator();
        } catch (error) {
          throw restoreRefused(checkpoint, jobId, `operator ${JSON.stringify(chained.node.name)} of vertex ${vertex.id}: ${(error as Error).message}`, error);
        }
      }
    }
  }
  return checkpoint;
}
