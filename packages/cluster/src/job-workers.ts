import type { ChildProcess } from 'node:child_process';
import { EngineError, type RegionDeployment, type TaskCheckpointingProvider, type TaskEvent, type TaskProgress, type WorkerInitMessage, WorkerProcessTaskExecutor, serializeTaskError } from '@weft/engine';
import { type Logger, type ShuffleDescriptor, type ShuffleLocation, taskExecutorId } from '@weft/shuffle-api';

export interface JobWorkersOptions {
  /** What each worker loads (its `slots` is set to 1 here). */
  readonly init: WorkerInitMessage;
  /** Worker processes: one region each at a time (the job's slots on this executor). */
  readonly workers: number;
  readonly cwd: string;
  /** Node options of new worker processes. */
  readonly execArgv: readonly string[];
  readonly logger: Logger;
  /** Processes forked ahead of the job (used first; extra ones are stopped, missing ones forked). */
  readonly prestarted?: readonly ChildProcess[];
  /** Every task event of every worker, and the failures of tasks a lost worker ran. */
  readonly onTaskEvent: (event: TaskEvent) => void;
  /** @defaultValue the engine's (30000) */
  readonly heartbeatTimeoutMs?: number;
  /** A worker that started later (a replacement) changed `shuffleLocation`. @defaultValue none */
  readonly onShuffleLocation?: (location: ShuffleLocation | undefined) => void;
  /** A checkpointed job: each worker's tasks are linked through it (JobHost's link to the job master). @defaultValue none */
  readonly checkpointing?: TaskCheckpointingProvider;
}

/** One slot: a worker process and the attempts of the region it runs. */
interface Slot {
  readonly index: number;
  worker: WorkerProcessTaskExecutor;
  readonly attempts: Set<string>;
  /** Attempts that finished in its process: their pipelined outputs live there. */
  readonly finished: Set<string>;
  state: 'starting' | 'ready' | 'gone';
}

/**
 * The worker processes one job runs in on a task executor, one slot each (as `weft run --workers` runs a
 * job locally): a region is deployed to an idle worker, or waits for one; user code never runs in the
 * task executor's own process, so a task that crashes or runs out of memory takes down its worker only.
 * A worker that dies fails the tasks it ran (`WEFT_ERR_TASK_EXECUTOR_LOST`, naming it: the job master
 * fails them over) and is replaced by a new process; the executor keeps its registration and its slots.
 */
export class JobWorkers {
  readonly #options: JobWorkersOptions;
  readonly #init: WorkerInitMessage;
  readonly #slots: Slot[] = [];
  readonly #queue: RegionDeployment[] = [];
  #closed: Promise<void> | undefined;

  private constructor(options: JobWorkersOptions) {
    this.#options = options;
    this.#init = { ...options.init, slots: 1 };
  }

  /** Starts every worker and resolves once each loaded the job; on any failure all are stopped and it rejects. */
  static async start(options: JobWorkersOptions): Promise<JobWorkers> {
    const workers = new JobWorkers(options);
    // a prestarted process that died while it waited is not used
    const children = (options.prestarted ?? []).filter((c) => c.exitCode === null && c.signalCode === null);
    for (const extra of children.splice(options.workers)) extra.kill('SIGKILL');
    const started = await Promise.allSettled(Array.from({ length: options.workers }, (_, i) => workers.#startSlot(i, children[i])));
    const failure = started.find((r): r is PromiseRejectedResult => r.status === 'rejected');
    if (failure !== undefined) {
      await workers.close();
      throw failure.reason;
    }
    return workers;
  }

  deploy(deployment: RegionDeployment): void {
    this.#queue.push(deployment);
    this.#dispatch();
  }

  cancel(attemptIds: readonly string[], reason: string): void {
    const wanted = new Set(attemptIds);
    // a region still waiting for a worker never ran: its tasks are cancelled here
    for (let q = this.#queue.length - 1; q >= 0; q--) {
      const waiting = this.#queue[q] as RegionDeployment;
      if (!waiting.tasks.some((t) => wanted.has(t.attemptId))) continue;
      this.#queue.splice(q, 1);
      for (const task of waiting.tasks) this.#options.onTaskEvent({ type: 'cancelled', attemptId: task.attemptId });
    }
    for (const slot of this.#slots) {
      const mine = [...slot.attempts].filter((a) => wanted.has(a));
      if (mine.length > 0) slot.worker.cancel(mine, reason);
    }
  }

  /**
   * New attempts of approximate partitions (TaskExecutor.updatePartitionInfo), told to every worker that
   * runs; one starting now learns them with the deployments that read them.
   */
  updatePartitionInfo(descriptors: readonly ShuffleDescriptor[]): void {
    for (const slot of this.#slots) if (slot?.state === 'ready') slot.worker.updatePartitionInfo(descriptors);
  }

  /**
   * Where the job's pipelined partitions are served from this executor, when the job has one worker here
   * and its pipelined shuffle serves other executors: that worker's location. With more workers a
   * deployment may land on any of them, so the executor offers none (its regions stay whole).
   */
  get shuffleLocation(): ShuffleLocation | undefined {
    const only = this.#slots.length === 1 ? this.#slots[0] : undefined;
    return only?.state === 'ready' ? only.worker.shuffleLocation : undefined;
  }

  progress(): TaskProgress[] {
    return this.#slots.flatMap((s) => [...s.worker.progress()]);
  }

  /** Cancels what runs and stops every worker (each shuts down gracefully, killed after 10 s). Idempotent. */
  close(): Promise<void> {
    this.#closed ??= (async () => {
      for (const waiting of this.#queue.splice(0)) for (const task of waiting.tasks) this.#options.onTaskEvent({ type: 'cancelled', attemptId: task.attemptId });
      await Promise.all(this.#slots.map((s) => s.worker.close()));
    })();
    return this.#closed;
  }

  #startSlot(index: number, child: ChildProcess | undefined): Promise<void> {
    const worker = this.#newWorker(index);
    const slot: Slot = { index, worker, attempts: new Set(), finished: new Set(), state: 'starting' };
    const replacing = this.#slots[index] !== undefined;
    this.#slots[index] = slot;
    return worker.start(child, this.#init).then(() => {
      slot.state = 'ready';
      if (replacing) this.#options.onShuffleLocation?.(this.shuffleLocation);
      this.#dispatch();
    });
  }

  #newWorker(index: number): WorkerProcessTaskExecutor {
    const { cwd, execArgv, logger, heartbeatTimeoutMs, checkpointing } = this.#options;
    return new WorkerProcessTaskExecutor(
      {
        slotsPerWorker: 1,
        cwd,
        execArgv,
        logger,
        ...(heartbeatTimeoutMs === undefined ? {} : { heartbeatTimeoutMs }),
        ...(checkpointing === undefined ? {} : { checkpointing }),
        listener: {
          onTaskEvent: (_id, event) => this.#onTaskEvent(index, event),
          onExecutorLost: (_id, error) => this.#onWorkerLost(index, error),
        },
      },
      taskExecutorId(`${this.#init.executorId}.worker-${index}`),
    );
  }

  #onTaskEvent(index: number, event: TaskEvent): void {
    const slot = this.#slots[index] as Slot;
    if (event.type === 'finished' || event.type === 'failed' || event.type === 'cancelled') {
      if (!slot.attempts.delete(event.attemptId)) return; // a lost worker's late report
      if (event.type === 'finished') slot.finished.add(event.attemptId);
      this.#options.onTaskEvent(event);
      this.#dispatch();
      return;
    }
    if (slot.attempts.has(event.attemptId)) this.#options.onTaskEvent(event);
  }

  /** A worker died: its tasks fail (the job master fails them over) and a new process takes its slot. */
  #onWorkerLost(index: number, error: Error): void {
    const slot = this.#slots[index] as Slot;
    if (slot.state === 'gone' && slot.attempts.size === 0) return;
    const pid = slot.worker.pid;
    slot.state = 'gone';
    const lost = new EngineError('WEFT_ERR_TASK_EXECUTOR_LOST', `worker process ${String(pid)} of task executor ${this.#init.executorId} was lost: ${error.message}`, {
      cause: error,
      context: { taskExecutorId: this.#init.executorId },
    });
    const attempts = [...slot.attempts];
    slot.attempts.clear();
    const finished = [...slot.finished];
    slot.finished.clear();
    // its location is gone with it, until a replacement is ready
    if (this.#slots.length === 1) this.#options.onShuffleLocation?.(undefined);
    // the outputs of what finished there first: the failovers of its running tasks then restart their producers
    for (const attemptId of finished) this.#options.onTaskEvent({ type: 'outputs-lost', attemptId });
    for (const attemptId of attempts) this.#options.onTaskEvent({ type: 'failed', attemptId, error: serializeTaskError(lost) });
    if (this.#closed !== undefined) return;
    this.#options.logger.warn({ pid, tasks: attempts.length, error: error.message }, 'a worker process was lost; starting a new one in its place');
    this.#startSlot(index, undefined).catch((failure: unknown) => {
      (this.#slots[index] as Slot).state = 'gone';
      // the job ended while it started: close() stopped it, nothing failed
      if (this.#closed !== undefined) {
        this.#options.logger.debug({ error: (failure as Error).message }, 'a replacement worker process was stopped as the job ended');
        return;
      }
      this.#options.logger.error({ error: (failure as Error).message }, 'a replacement worker process failed to start; the slot stays empty');
      this.#failQueuedIfNoWorker();
    });
  }

  #dispatch(): void {
    if (this.#closed !== undefined) return;
    for (const slot of this.#slots) {
      if (this.#queue.length === 0) return;
      if (slot === undefined || slot.state !== 'ready' || slot.attempts.size > 0) continue;
      const deployment = this.#queue.shift() as RegionDeployment;
      for (const task of deployment.tasks) slot.attempts.add(task.attemptId);
      slot.worker.deploy(deployment);
    }
  }

  #failQueuedIfNoWorker(): void {
    if (this.#slots.some((s) => s.state !== 'gone')) return;
    const error = serializeTaskError(new EngineError('WEFT_ERR_TASK_EXECUTOR_LOST', `task executor ${this.#init.executorId} has no worker process left for the job`, { context: { taskExecutorId: this.#init.executorId } }));
    for (const waiting of this.#queue.splice(0)) for (const task of waiting.tasks) this.#options.onTaskEvent({ type: 'failed', attemptId: task.attemptId, error });
  }
}
