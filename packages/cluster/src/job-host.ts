import { pathToFileURL } from 'node:url';
import { EngineError, type ExternalFileSystem, InProcessTaskExecutor, type TaskEvent, loadJob, rebuildFileSystem, rebuildShuffleFactory, resolveSerializer, serializeTaskError } from '@weft/engine';
import { type Logger, jobId as toJobId, taskExecutorId } from '@weft/shuffle-api';
import type { ControlSocket } from './control-socket.js';
import type { ExecutorInitMessage, FromExecutorMessage, ToExecutorMessage } from './control-protocol.js';

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
}

/**
 * One job on a task executor: the job's code loaded from its bundle, its shuffles rebuilt, and an
 * in-process task executor running the regions its job master deploys, reporting over the control
 * connection. The connection can change (`attach`): a new job master of the same job takes over the
 * tasks. While no connection is attached, reports are dropped (the job master that deployed them is gone).
 */
export class JobHost {
  readonly jobId: string;
  readonly slots: number;
  readonly bundleSha256: string;
  readonly fingerprint: string;
  readonly #executor: InProcessTaskExecutor;
  /** The job's external file systems (`s3://` inputs and outputs), rebuilt here; closed with the job. */
  readonly #fileSystems: readonly ExternalFileSystem[];
  readonly #running = new Set<string>();
  readonly #timers: ReturnType<typeof setInterval>[] = [];
  readonly #logger: Logger;
  #connection: HostConnection | undefined;
  #closed: Promise<void> | undefined;
  #onIdle: (() => void) | undefined;

  private constructor(options: JobHostOptions, executor: InProcessTaskExecutor, fileSystems: readonly ExternalFileSystem[], hold: { host: JobHost | undefined }) {
    this.jobId = options.init.jobId;
    this.slots = options.slots;
    this.bundleSha256 = options.init.bundleSha256;
    this.fingerprint = options.init.fingerprint;
    this.#executor = executor;
    this.#fileSystems = fileSystems;
    this.#logger = options.logger;
    hold.host = this;
    const { heartbeatIntervalMs, progressIntervalMs } = options.init;
    this.#timers.push(setInterval(() => this.#send({ type: 'heartbeat' }), heartbeatIntervalMs));
    this.#timers.push(
      setInterval(() => {
        const tasks = this.#executor.progress();
        if (tasks.length > 0) this.#send({ type: 'progress', tasks });
      }, progressIntervalMs),
    );
  }

  /** Loads the job from its bundle and starts its in-process executor; rejects (nothing left running) when it cannot. */
  static async start(options: JobHostOptions): Promise<JobHost> {
    const { init } = options;
    const [loaded, pipelined, blocking, fileSystems] = await Promise.all([
      loadJob({ job: pathToFileURL(options.bundleFile).href, args: init.args, parallelism: init.parallelism, exchangeMode: init.exchangeMode, cwd: options.cwd, checkInputs: false }),
      rebuildShuffleFactory(init.pipelined, 'pipelined'),
      rebuildShuffleFactory(init.blocking, 'blocking'),
      Promise.all(init.fileSystems.map(rebuildFileSystem)),
    ]);
    if (loaded.plan.fingerprint !== init.fingerprint) {
      throw new EngineError('WEFT_ERR_INVALID_JOB', `the job's build function made a different graph on task executor ${init.executorId} than in the job master; it must be deterministic (no randomness, clock or environment)`, { context: { field: 'build' } });
    }
    const hold: { host: JobHost | undefined } = { host: undefined };
    const executor = await InProcessTaskExecutor.start({
      id: taskExecutorId(init.executorId),
      slots: options.slots,
      jobId: toJobId(init.jobId),
      plan: loaded.plan,
      pipelined,
      blocking,
      fileSystems,
      cwd: options.cwd,
      serializer: loaded.definition.options.serializer ?? resolveSerializer(init.serializer),
      logger: options.logger,
      killProcess: () => process.kill(process.pid, 'SIGKILL'),
      listener: {
        onTaskEvent: (_executor, event) => hold.host?.onTaskEvent(event),
        onExecutorLost: () => {},
      },
    });
    return new JobHost(options, executor, fileSystems, hold);
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
      const error = serializeTaskError(new EngineError('WEFT_ERR_TASK_EXECUTOR_LOST', refuse, { context: { taskExecutorId: this.#executor.id } }));
      for (const task of tasks) this.#send({ type: 'task-event', event: { type: 'failed', attemptId: task.attemptId, error } });
      return;
    }
    for (const task of tasks) this.#running.add(task.attemptId);
    this.#executor.deploy(message.deployment);
  }

  cancel(attemptIds: readonly string[], reason: string): void {
    this.#executor.cancel(attemptIds, reason);
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

  onTaskEvent(event: TaskEvent): void {
    if (event.type === 'finished' || event.type === 'failed' || event.type === 'cancelled') {
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
      let timer: ReturnType<typeof setTimeout> | undefined;
      const bounded = new Promise<void>((resolve) => {
        timer = setTimeout(() => {
          this.#logger.warn({ jobId: this.jobId, running: this.#running.size }, `the job's tasks did not stop within ${CLOSE_TIMEOUT_MS} ms of their cancellation; its slots are freed anyway`);
          resolve();
        }, CLOSE_TIMEOUT_MS);
      });
      await Promise.race([this.#executor.close().catch((error: unknown) => this.#logger.warn({ jobId: this.jobId, error: (error as Error).message }, 'closing the job on this executor failed')), bounded]);
      clearTimeout(timer);
      await Promise.all(this.#fileSystems.map((fs) => fs.close().catch(() => {})));
    })();
    return this.#closed;
  }

  #send(message: FromExecutorMessage): void {
    this.#connection?.send(message);
  }
}
