import type { ChildProcess } from 'node:child_process';
import { type Logger, type ShuffleDescriptor, type ShuffleLocation, type TaskExecutorId, noopLogger } from '@weft/shuffle-api';
import { EngineError, isEngineError } from '../errors/engine-error.js';
import { deserializeTaskError } from '../runtime/task-error-serialization.js';
import type { RegionDeployment } from '../runtime/task-deployment.js';
import type { TaskProgress } from '../runtime/task-events.js';
import type { TaskExecutor } from './task-executor.js';
import { WorkerCheckpointRelay } from './worker-checkpoint-relay.js';
import { DEFAULT_HEARTBEAT_TIMEOUT_MS, type WorkerPoolOptions } from './worker-pool-options.js';

/** What one worker process needs of its pool's options (a task executor of the cluster starts its own workers). */
export type WorkerProcessOptions = Pick<WorkerPoolOptions, 'slotsPerWorker' | 'listener' | 'cwd' | 'logger' | 'execArgv' | 'heartbeatTimeoutMs' | 'startTimeoutMs' | 'checkpointing'>;
import { defaultExecArgv, forkWorker } from './worker-process.js';
import { type FromWorkerMessage, isFromWorkerCheckpointMessage, type ToWorkerMessage, type WorkerInitMessage } from './worker-protocol.js';

/** How long a killed worker may take to exit before it is reported lost anyway. */
const EXIT_WAIT_MS = 5000;

/**
 * One worker process, seen from the job master: `start` forks it (or takes a prestarted one) and resolves
 * once it loaded the job; deployments, cancellations and shutdown go to it over IPC, task events and
 * progress come back. Silent for `heartbeatTimeoutMs`, it is killed; gone, it is reported lost once its
 * process exited.
 */
export class WorkerProcessTaskExecutor implements TaskExecutor {
  readonly kind = 'worker';
  readonly id: TaskExecutorId;
  readonly slots: number;
  readonly #options: WorkerProcessOptions;
  readonly #logger: Logger;
  #child: ChildProcess | undefined;
  #progress: readonly TaskProgress[] = [];
  #lastHeartbeat = Date.now();
  #watchdog: ReturnType<typeof setInterval> | undefined;
  #state: 'starting' | 'ready' | 'closing' | 'gone' = 'starting';
  #exited: Promise<void> = Promise.resolve();
  #closed: Promise<void> | undefined;
  #shuffleLocation: ShuffleLocation | undefined;
  /** A checkpointed job's link between its JobCheckpointing and the worker's tasks. */
  readonly #checkpoints: WorkerCheckpointRelay | undefined;

  constructor(options: WorkerProcessOptions, id: TaskExecutorId) {
    this.#options = options;
    this.id = id;
    this.slots = options.slotsPerWorker;
    this.#logger = (options.logger ?? noopLogger).child({ taskExecutorId: id });
    const provider = options.checkpointing;
    this.#checkpoints = provider === undefined ? undefined : new WorkerCheckpointRelay({ provider, send: (message) => this.#send(message), logger: this.#logger });
  }

  /** The worker's process id (undefined before it was forked). */
  get pid(): number | undefined {
    return this.#child?.pid;
  }

  /** Where the worker's pipelined shuffle serves partitions to other executors, as it reported when ready. */
  get shuffleLocation(): ShuffleLocation | undefined {
    return this.#shuffleLocation;
  }

  /** Starts the worker in `prestarted` (or a new process) and resolves once it loaded the job. */
  start(prestarted: ChildProcess | undefined, init: WorkerInitMessage): Promise<void> {
    const child = prestarted ?? forkWorker(this.#options.execArgv ?? defaultExecArgv(), this.#options.cwd);
    this.#child = child;
    this.#exited = child.exitCode !== null || child.signalCode !== null ? Promise.resolve() : new Promise<void>((resolve) => child.once('exit', () => resolve()));
    return new Promise<void>((resolve, reject) => {
      const timeoutMs = this.#options.startTimeoutMs ?? 60_000;
      let settled = false;
      const timer = setTimeout(() => fail(new Error(`did not load the job within ${timeoutMs} ms`)), timeoutMs);
      const fail = (error: Error): void => {
        clearTimeout(timer);
        if (settled) return;
        settled = true;
        if (this.#state === 'starting') this.#state = 'gone';
        child.kill('SIGKILL');
        reject(isEngineError(error) ? error : new EngineError('WEFT_ERR_TASK_EXECUTOR_LOST', `worker ${this.id} failed to start: ${error.message}`, { cause: error, context: { taskExecutorId: this.id } }));
      };
      child.on('message', (raw: unknown) => {
        const message = raw as FromWorkerMessage;
        if (message.type === 'ready' && this.#state === 'starting' && !settled) {
          settled = true;
          clearTimeout(timer);
          this.#state = 'ready';
          this.#shuffleLocation = message.shuffleLocation;
          this.#lastHeartbeat = Date.now();
          this.#startWatchdog();
          resolve();
          return;
        }
        if (message.type === 'init-failed') {
          fail(deserializeTaskError(message.error));
          return;
        }
        this.#onMessage(message);
      });
      child.on('error', (error) => {
        if (settled) this.#lost(error);
        // the init message could not go to a worker that just died (EPIPE, channel closed): its exit, next,
        // says how it died — what WorkerPool retries a killed worker by
        else if (!isDeadChannel(error)) fail(error);
      });
      child.on('exit', (code, signal) => {
        const error = workerExited(child.pid, signal ?? `code ${code}`);
        // Closed while it started, it exits before it is ready: the start fails.
        if (!settled) fail(error);
        else if (this.#state === 'ready') this.#lost(error);
      });
      if (child.exitCode !== null || child.signalCode !== null) {
        fail(workerExited(child.pid, child.signalCode ?? `code ${child.exitCode}`, ' before it started'));
        return;
      }
      child.send(init);
    });
  }

  deploy(deployment: RegionDeployment): void {
    this.#checkpoints?.deployed(deployment.tasks);
    this.#send({ type: 'deploy', deployment });
  }

  /** Kills the worker process (SIGKILL); it is reported lost once it exited. */
  destroy(error: Error): void {
    this.#lost(error);
  }

  updatePartitionInfo(descriptors: readonly ShuffleDescriptor[]): void {
    this.#send({ type: 'update-partition-info', descriptors });
  }

  cancel(attemptIds: readonly string[], reason: string): void {
    this.#send({ type: 'cancel', attemptIds, reason });
  }

  progress(): readonly TaskProgress[] {
    return this.#progress;
  }

  close(): Promise<void> {
    this.#closed ??= this.#close();
    return this.#closed;
  }

  async [Symbol.asyncDispose](): Promise<void> {
    await this.close();
  }

  async #close(): Promise<void> {
    const was = this.#state;
    this.#state = 'closing';
    if (this.#watchdog !== undefined) clearInterval(this.#watchdog);
    this.#checkpoints?.detachAll();
    const child = this.#child;
    if (child === undefined || child.exitCode !== null || child.signalCode !== null) return;
    // A worker still loading the job runs no task: stop it at once. A ready one shuts down gracefully.
    if (was === 'starting') child.kill('SIGKILL');
    else if (was === 'ready') this.#send({ type: 'shutdown' });
    const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
    await this.#exited;
    clearTimeout(timer);
  }

  #send(message: ToWorkerMessage): void {
    const child = this.#child;
    if (child === undefined || !child.connected) return;
    child.send(message, (error) => {
      if (error !== null && error !== undefined && this.#state === 'ready') this.#lost(error);
    });
  }

  #onMessage(message: FromWorkerMessage): void {
    // A lost worker's last messages may still arrive after its loss was decided: they are dropped.
    if (this.#state === 'gone' && message.type !== 'log') return;
    switch (message.type) {
      case 'task-event':
        if (message.event.type === 'finished' || message.event.type === 'failed' || message.event.type === 'cancelled') {
          this.#progress = this.#progress.filter((p) => p.attemptId !== message.event.attemptId);
          this.#checkpoints?.detach(message.event.attemptId);
        }
        this.#options.listener.onTaskEvent(this.id, message.event);
        return;
      case 'heartbeat':
        this.#lastHeartbeat = Date.now();
        return;
      case 'progress':
        this.#lastHeartbeat = Date.now();
        this.#progress = message.tasks;
        return;
      case 'log':
        this.#logger[message.level](message.fields, message.message);
        return;
      default:
        if (isFromWorkerCheckpointMessage(message)) this.#checkpoints?.handle(message);
        return;
    }
  }

  #startWatchdog(): void {
    const timeoutMs = this.#options.heartbeatTimeoutMs ?? DEFAULT_HEARTBEAT_TIMEOUT_MS;
    this.#watchdog = setInterval(() => {
      if (Date.now() - this.#lastHeartbeat <= timeoutMs) return;
      this.#lost(new Error(`no heartbeat for ${timeoutMs} ms (heartbeatTimeoutMs), so it was killed`));
    }, Math.min(1000, timeoutMs));
    this.#watchdog.unref();
  }

  /**
   * The worker is gone: its process is killed if it still runs, and the loss is reported once it exited
   * (a zombie that could still commit output is never assumed dead while it lives).
   */
  #lost(error: Error): void {
    if (this.#state !== 'ready') return;
    this.#state = 'gone';
    if (this.#watchdog !== undefined) clearInterval(this.#watchdog);
    // its tasks' checkpoints: a source on it no longer counts as running, nothing it still sends is taken
    this.#checkpoints?.detachAll();
    // #progress stays as last reported: the counters of the tasks lost with it (an approximate job's recoveries read them)
    const child = this.#child;
    let reported = false;
    const report = (): void => {
      if (reported) return;
      reported = true;
      this.#options.listener.onExecutorLost(this.id, error);
    };
    if (child === undefined || child.exitCode !== null || child.signalCode !== null) {
      report();
      return;
    }
    child.kill('SIGKILL');
    const timer = setTimeout(report, EXIT_WAIT_MS);
    timer.unref();
    void this.#exited.then(() => {
      clearTimeout(timer);
      report();
    });
  }
}

/**
 * A worker process that exited (`how`: its signal or `code N`): an expected fault, by its code
 * (WEFT_ERR_TASK_EXECUTOR_LOST), so a report shows its message, not a stack of Node's internals.
 */
function workerExited(pid: number | undefined, how: string, when = ''): EngineError {
  return new EngineError('WEFT_ERR_TASK_EXECUTOR_LOST', `worker process ${pid} exited with ${how}${when}`, { context: { pid, exit: how } });
}

/** A send to a child process whose end of the IPC channel is gone (it died or is dying). */
function isDeadChannel(error: Error): boolean {
  const code = (error as NodeJS.ErrnoException).code;
  return code === 'EPIPE' || code === 'ERR_IPC_CHANNEL_CLOSED' || code === 'ECONNRESET';
}
