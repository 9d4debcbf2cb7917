import type { ShuffleDescriptor, ShuffleLocation, TaskExecutorId } from '@weft/shuffle-api';
import type { RegionDeployment } from '../runtime/task-deployment.js';
import type { TaskEvent, TaskProgress } from '../runtime/task-events.js';

/** What a task executor reports to the job master. Calls arrive on the job master's event loop. */
export interface TaskExecutorListener {
  onTaskEvent(executor: TaskExecutorId, event: TaskEvent): void;
  /** The executor is gone (process exit, missed heartbeats, failed start): its running tasks are lost. */
  onExecutorLost(executor: TaskExecutorId, error: Error): void;
  /** A new executor can take work (a TaskExecutorProvider's, joining while the job runs). */
  onExecutorJoined?(executor: TaskExecutor): void;
  /** The executor takes no new work (it drains to stop); what it runs may still finish, and it is lost later. */
  onExecutorRetiring?(executor: TaskExecutorId): void;
  /** The executor's `shuffleLocation` changed (a cluster executor replaced its worker process): placements may change. */
  onShuffleLocationChanged?(executor: TaskExecutorId): void;
}

/**
 * Where regions run (Flink's TaskExecutor): the in-process executor, or one worker process of a pool.
 * Each offers `slots`. A pipelined region takes one slot and all of its tasks run in this executor,
 * exchanging pipelined data through the executor's own pipelined shuffle — unless executors report a
 * `shuffleLocation`: then the job master may spread a region's tasks over several of them (a slot on each),
 * and registers its pipelined partitions itself, so consumers read them from the producer's executor.
 *
 * `deploy` returns at once; the tasks report through the listener: `running`, then `finished`, `failed`
 * or `cancelled`. `cancel` asks running attempts to stop (each still reports). `close()` (idempotent, also
 * `[Symbol.asyncDispose]`) cancels what runs, waits for it, and releases the executor's shuffle
 * environments (and its process).
 */
export interface TaskExecutor extends AsyncDisposable {
  readonly id: TaskExecutorId;
  readonly slots: number;
  /** `inprocess`, `worker`, or a provider's kind (e.g. `remote`). */
  readonly kind: string;
  /** The operating-system process running the tasks, when it is not the job master's. */
  readonly pid?: number | undefined;
  /**
   * Where this executor's pipelined shuffle environment serves partitions to other executors
   * (ShuffleEnvironment.location), once it started. Absent: its pipelined partitions are read only inside it.
   */
  readonly shuffleLocation?: ShuffleLocation | undefined;
  deploy(deployment: RegionDeployment): void;
  cancel(attemptIds: readonly string[], reason: string): void;
  /**
   * The abrupt path, for tasks that ignore cancellation: kills the executor (a worker process) with every
   * task it runs; it is then reported lost through `onExecutorLost`. Absent where that is impossible (the
   * in-process executor cannot kill the job master's own process).
   */
  destroy?(error: Error): void;
  /**
   * The job master registered new attempts of PIPELINED_APPROXIMATE partitions (their producers restarted,
   * maybe on another executor): the executor's gates reading them reconnect there
   * (ShuffleEnvironment.updatePartitionInfo), and its tasks deployed later read these attempts. Sent to
   * every executor that serves partitions to others (`shuffleLocation`). Absent: never told (its
   * approximate partitions are registered by the executor itself).
   */
  updatePartitionInfo?(descriptors: readonly ShuffleDescriptor[]): void;
  /** Counters of the tasks running now (a worker's are as of its last progress message; a lost worker's, as of its last one before it was lost). */
  progress(): readonly TaskProgress[];
  close(): Promise<void>;
}
