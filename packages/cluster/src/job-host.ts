import type { ChildProcess } from 'node:child_process';
import { pathToFileURL } from 'node:url';
import { EngineError, type TaskEvent, type ToWorkerCheckpointMessage, WorkerCheckpointing, serializeTaskError } from '@weft/engine';
import type { Logger, ShuffleDescriptor, ShuffleLocation } from '@weft/shuffle-api';
import type { ControlSocket } from './control-socket.js';
import type { ExecutorInitMessage, FromExecutorMessage, ToExecutorMessage } from './control-protocol.js';
import { JobWorkers } from './job-workers.js';

/**
 * How long closing a job waits for its cancelled tasks. Past it the job's slots are freed regardless (the
 * tasks are attempts of a job master that is gone; a new one fences them by its epoch).
 */
const CLOSE_TIMEOUT_MS = 10_000;

export type HostConnection = ControlSocket<ToExecutorMessage, FromExecutorMessage>;

export interface JobHostOptions {
  readonly init: ExecutorInitMessage;
  /** The job's code, cached on disk. */
  readonly bundleFile: string;
  /** Slots this job holds on the executor. */
  readonly slots: number;
  /** Where the job's relative paths resolve (the job master's, when it exists here). */
  readonly cwd: string;
  readonly logger: Logger;
  /** Worker processes forked ahead of the job (the executor keeps some ready). @defaultValue none */
  readonly prestarted?: readonly ChildProcess[];
  /** How new worker processes start (Node options). */
  readonly execArgv: readonly string[];
  /** Where other hosts reach this one: the workers' pipelined shuffle listens and advertises there. @defaultValue the shuffle's options */
  readonly peerAddress?: { readonly listenHost: string; readonly advertisedHost: string };
}

/**
 * One job on a task executor: one worker process per slot the job holds (JobWorkers), each loading the
 * job's code from its bundle and rebuilding its shuffles and file systems, running the regions its job
 * master deploys; their reports go over the control connection. The connection can change (`attach`): a
 * new job master of the same job takes the job over (its slots and workers; the dead master's running
 * attempts are cancelled first, `cancelRunning`). While no connection is attached, reports are dropped.
 */
export class JobHost {
  readonly jobId: string;
  readonly slots: number;
  readonly bundleSha256: string;
  readonly fingerprint: string;
  readonly #workers: JobWorkers;
  readonly #executorId: string;
  readonly #running = new Set<string>();
  readonly #timers: ReturnType<typeof setInterval>[] = [];
  readonly #logger: Logger;
  #connection: HostConnection | undefined;
  /** A checkpointed job's link to its job master's checkpoints (the workers' WorkerProcessTaskExecutors relay to it). */
  readonly #checkpoints: WorkerCheckpointing | undefined;
  #closed: Promise<void> | undefined;
  #onIdle: (() => void) | undefined;

  private constructor(options: JobHostOptions, workers: JobWorkers, hold: { host: JobHost | undefined }, checkpoints: WorkerCheckpointing | undefined) {
    this.#checkpoints = checkpoints;
    this.jobId = options.init.jobId;
    this.slots = options.slots;
    this.bundleSha256 = options.init.bundleSha256;
    this.fingerprint = options.init.fingerprint;
    this.#workers = workers;
    this.#executorId = options.init.executorId;
    this.#logger = options.logger;
    hold.host = this;
    const { heartbeatIntervalMs, progressIntervalMs } = options.init;
    this.#timers.push(setInterval(() => this.#send({ type: 'heartbeat' }), heartbeatIntervalMs));
    this.#timers.push(
      setInterval(() => {
        const tasks = this.#workers.progress();
        if (tasks.length > 0) this.#send({ type: 'progress', tasks });
      }, progressIntervalMs),
    );
  }

  /**
   * Starts the job's worker processes (each loads the job from its bundle, and refuses a graph other than
   * the job master's); rejects, nothing left running, when one cannot.
   */
  static async start(options: JobHostOptions): Promise<JobHost> {
    const { init } = options;
    const { bundleSha256: _sha, weftVersion: _version, issuedAtMs: _issued, signature: _signature, ...worker } = init;
    const hold: { host: JobHost | undefined } = { host: undefined };
    // a checkpointed job: the workers' checkpoint messages travel on over the control connection
    const checkpoints = init.checkpointed === true ? new WorkerCheckpointing((message) => {
          if (hold.host !== undefined) hold.host.#send(message);
        }) : undefined;
    const workers = await JobWorkers.start({
      ...(checkpoints === undefined ? {} : { checkpointing: checkpoints.provider }),
      init: { ...worker, type: 'init', jobModuleUrl: pathToFileURL(options.bundleFile).href, cwd: options.cwd, ...(options.peerAddress === undefined ? {} : { peerAddress: options.peerAddress }) },
      workers: options.slots,
      cwd: options.cwd,
      execArgv: options.execArgv,
      logger: options.logger,
      ...(options.prestarted === undefined ? {} : { prestarted: options.prestarted }),
      onTaskEvent: (event) => hold.host?.onTaskEvent(event),
      onShuffleLocation: (location) => hold.host?.shuffleLocationChanged(location),
    });
    return new JobHost(options, workers, hold, checkpoints);
  }

  /** Where this executor serves the job's pipelined partitions to other executors (JobWorkers.shuffleLocation), if it does. */
  get shuffleLocation(): ShuffleLocation | undefined {
    return this.#workers.shuffleLocation;
  }

  /** Tells the job master where the job's pipelined partitions are served from now (a replaced worker's). */
  shuffleLocationChanged(location: ShuffleLocation | undefined): void {
    this.#send(location === undefined ? { type: 'shuffle-location' } : { type: 'shuffle-location', location });
  }

  /** Tasks deployed and not yet ended. */
  get running(): number {
    return this.#running.size;
  }

  get attached(): boolean {
    return this.#connection !== undefined && !this.#connection.closed;
  }

  /** Reports go to `connection` from now on (undefined: nowhere). */
  attach(connection: HostConnection | undefined): void {
    this.#connection = connection;
  }

  deploy(message: Extract<ToExecutorMessage, { type: 'deploy' }>, refuse: string | undefined): void {
    const tasks = message.deployment.tasks;
    if (refuse !== undefined) {
      // a deployment that crossed the `draining` message: each task fails, and is placed elsewhere
      const error = serializeTaskError(new EngineError('WEFT_ERR_TASK_EXECUTOR_LOST', refuse, { context: { taskExecutorId: this.#executorId } }));
      for (const task of tasks) this.#send({ type: 'task-event', event: { type: 'failed', attemptId: task.attemptId, error } });
      return;
    }
    for (const task of tasks) this.#running.add(task.attemptId);
    this.#workers.deploy(message.deployment);
  }

  /** Cancels every task that runs (a new job master took the job over: they are the dead one's attempts). */
  cancelRunning(reason: string): void {
    if (this.#running.size > 0) this.#workers.cancel([...this.#running], reason);
  }

  cancel(attemptIds: readonly string[], reason: string): void {
    this.#workers.cancel(attemptIds, reason);
  }

  /** New attempts of approximate partitions the job master registered: every worker's gates reconnect to them. */
  updatePartitionInfo(descriptors: readonly ShuffleDescriptor[]): void {
    this.#workers.updatePartitionInfo(descriptors);
  }

  /** Resolves once no task runs (at once when none does). */
  idle(): Promise<void> {
    if (this.#running.size === 0) return Promise.resolve();
    return new Promise((resolve) => {
      const previous = this.#onIdle;
      this.#onIdle = () => {
        previous?.();
        resolve();
      };
    });
  }

  /** A checkpoint message of the job master for one of the job's task attempts (ignored when the job takes none). */
  checkpointMessage(message: ToWorkerCheckpointMessage): void {
    this.#checkpoints?.handle(message);
  }

  onTaskEvent(event: TaskEvent): void {
    if (event.type === 'finished' || event.type === 'failed' || event.type === 'cancelled') {
      this.#checkpoints?.detach(event.attemptId);
      this.#running.delete(event.attemptId);
      if (this.#running.size === 0) {
        const onIdle = this.#onIdle;
        this.#onIdle = undefined;
        onIdle?.();
      }
    }
    this.#send({ type: 'task-event', event });
  }

  /** Cancels what runs, waits for it, and releases the job's shuffle environments (idempotent). */
  close(): Promise<void> {
    this.#closed ??= (async () => {
      for (const timer of this.#timers) clearInterval(timer);
      this.#checkpoints?.close();
      let timer: ReturnType<typeof setTimeout> | undefined;
      const bounded = new Promise<void>((resolve) => {
        timer = setTimeout(() => {
          this.#logger.warn({ jobId: this.jobId, running: this.#running.size }, `the job's tasks did not stop within ${CLOSE_TIMEOUT_MS} ms of their cancellation; its slots are freed anyway`);
          resolve();
        }, CLOSE_TIMEOUT_MS);
      });
      await Promise.race([this.#workers.close().catch((error: unknown) => this.#logger.warn({ jobId: this.jobId, error: (error as Error).message }, 'closing the job on this executor failed')), bounded]);
      clearTimeout(timer);
    })();
    return this.#closed;
  }

  #send(message: FromExecutorMessage): void {
    this.#connection?.send(message);
  }
}
