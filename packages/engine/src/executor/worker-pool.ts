import { type ChildProcess, fork } from 'node:child_process';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { type Logger, type ShuffleServiceFactory, type ShuffleServiceReference, type TaskExecutorId, noopLogger, taskExecutorId } from '@weft/shuffle-api';
import type { ExchangeMode } from '../api/exchange-mode.js';
import { EngineError, isEngineError } from '../errors/engine-error.js';
import type { LoadedJob } from '../graph/load-job.js';
import type { SerializerName } from '../serialization/serializers.js';
import { deserializeTaskError } from '../runtime/task-error-serialization.js';
import type { RegionDeployment } from '../runtime/task-deployment.js';
import type { TaskProgress } from '../runtime/task-events.js';
import type { TaskExecutor, TaskExecutorListener } from './task-executor.js';
import type { FromWorkerMessage, ToWorkerMessage, WorkerInitMessage } from './worker-protocol.js';

/** @see WorkerPoolOptions.heartbeatIntervalMs */
export const DEFAULT_HEARTBEAT_INTERVAL_MS = 1000;
/** @see WorkerPoolOptions.heartbeatTimeoutMs */
export const DEFAULT_HEARTBEAT_TIMEOUT_MS = 30_000;
/** How long a killed worker may take to exit before it is reported lost anyway. */
const EXIT_WAIT_MS = 5000;

export interface PrestartWorkersOptions {
  readonly workers: number;
  readonly cwd: string;
  /** @defaultValue process.execArgv without test-runner and inspector flags */
  readonly execArgv?: readonly string[];
  /** Modules (specifiers or file URLs: the job module, the shuffle modules) each worker starts importing at once. */
  readonly preload?: readonly string[];
}

/**
 * Worker processes forked ahead of a job, so their start-up (Node, the TypeScript loader, the engine, the
 * shuffle modules, the job module) overlaps the job master's own. Hand them to `runJob({ prestartedWorkers })`,
 * which takes them over, or `close()` them.
 */
export class PrestartedWorkers {
  readonly #children: ChildProcess[];
  #taken = false;

  constructor(options: PrestartWorkersOptions) {
    const env = { ...process.env, WEFT_WORKER_PRELOAD: JSON.stringify(options.preload ?? []) };
    this.#children = Array.from({ length: options.workers }, () => forkWorker(options.execArgv ?? defaultExecArgv(), options.cwd, env));
  }

  get count(): number {
    return this.#children.length;
  }

  /** @internal — the pool takes the processes; they are then closed with the job. */
  take(): ChildProcess[] {
    if (this.#taken) throw new EngineError('WEFT_ERR_ILLEGAL_STATE', 'prestarted workers were already used by a job');
    this.#taken = true;
    return this.#children;
  }

  /** Kills the processes unless a job took them. Idempotent. */
  async close(): Promise<void> {
    if (this.#taken) return;
    this.#taken = true;
    await Promise.all(
      this.#children.map((child) => {
        if (child.exitCode !== null || child.signalCode !== null) return undefined;
        const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
        child.kill('SIGKILL');
        return exited;
      }),
    );
  }
}

/** Forks worker processes ahead of a job (see PrestartedWorkers). */
export function prestartWorkers(options: PrestartWorkersOptions): PrestartedWorkers {
  return new PrestartedWorkers(options);
}

function forkWorker(execArgv: readonly string[], cwd: string, env?: NodeJS.ProcessEnv): ChildProcess {
  return fork(workerEntry(), [], {
    execArgv: absoluteExecArgv(execArgv),
    cwd,
    serialization: 'advanced',
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    ...(env === undefined ? {} : { env }),
  });
}

export interface WorkerPoolOptions {
  readonly workers: number;
  readonly slotsPerWorker: number;
  readonly jobId: string;
  readonly loaded: LoadedJob & { readonly moduleUrl: string };
  readonly args: readonly string[];
  readonly parallelism: number;
  readonly exchangeMode: ExchangeMode;
  readonly pipelined: ShuffleServiceFactory;
  readonly blocking: ShuffleServiceFactory;
  readonly listener: TaskExecutorListener;
  readonly cwd: string;
  readonly serializer: SerializerName;
  readonly logger?: Logger;
  /** @defaultValue process.execArgv without test-runner and inspector flags */
  readonly execArgv?: readonly string[];
  /** @defaultValue 1000 */
  readonly heartbeatIntervalMs?: number;
  /**
   * A worker silent for this long is killed and reported lost. A worker's heartbeats stop while a user
   * function runs synchronously, so keep it above the longest call of one. @defaultValue 30000
   */
  readonly heartbeatTimeoutMs?: number;
  /** @defaultValue 250 */
  readonly progressIntervalMs?: number;
  /** How long a worker may take to load the job and report ready. @defaultValue 60000 */
  readonly startTimeoutMs?: number;
  /** Processes forked ahead of time: used first (extra ones are stopped, missing ones forked). */
  readonly prestarted?: PrestartedWorkers;
}

/** The worker's entry file: the TypeScript source when running from source, the built file otherwise. */
function workerEntry(): string {
  const ext = import.meta.url.endsWith('.ts') ? '.ts' : '.js';
  return fileURLToPath(new URL(`./worker-main${ext}`, import.meta.url));
}

function defaultExecArgv(): string[] {
  return process.execArgv.filter((a) => !a.startsWith('--test') && !a.startsWith('--inspect') && !a.startsWith('--experimental-test'));
}

const PRELOAD_FLAGS = new Set(['--import', '--require', '-r', '--loader', '--experimental-loader']);

/**
 * Workers may run in another directory than this process, so bare preload specifiers (`--import tsx`)
 * are resolved here, from this process's directory, to absolute file URLs.
 */
function absoluteExecArgv(execArgv: readonly string[]): string[] {
  const require = createRequire(join(process.cwd(), 'noop.js'));
  const absolute = (specifier: string): string => {
    if (/^(\.|\/|file:|node:|data:)/.test(specifier)) return specifier;
    try {
      return pathToFileURL(require.resolve(specifier)).href;
    } catch {
      return specifier;
    }
  };
  const out: string[] = [];
  for (let i = 0; i < execArgv.length; i++) {
    const arg = execArgv[i] as string;
    const eq = arg.indexOf('=');
    if (eq > 0 && PRELOAD_FLAGS.has(arg.slice(0, eq))) out.push(`${arg.slice(0, eq)}=${absolute(arg.slice(eq + 1))}`);
    else if (PRELOAD_FLAGS.has(arg) && i + 1 < execArgv.length) out.push(arg, absolute(execArgv[++i] as string));
    else out.push(arg);
  }
  return out;
}

function requireReference(factory: ShuffleServiceFactory, field: string): ShuffleServiceReference {
  if (factory.reference === undefined) {
    throw new EngineError('WEFT_ERR_INVALID_ARGUMENT', `the ${field} shuffle service ${JSON.stringify(factory.shuffleServiceId)} has no reference, so worker processes cannot rebuild it; use the in-process executor`, {
      context: { field: `shuffle.${field}` },
    });
  }
  return factory.reference;
}

/**
 * A pool of worker processes (child_process.fork), each a task executor with `slotsPerWorker` slots, so a
 * job uses every core. Workers load the job module themselves and rebuild both shuffle factories from
 * their references; records never cross the IPC channel — only deployments, task events, progress and
 * heartbeats do. A worker that exits, or misses heartbeats for `heartbeatTimeoutMs` (it is then killed),
 * is reported lost once its process is gone — so nothing it ran can still write after the job master
 * learns of the loss. `startReplacement` forks a new worker to take a lost one's place.
 */
export class WorkerPool {
  /** Starts `workers` processes and resolves once every one loaded the job; on any failure, stops them all. */
  static async start(options: WorkerPoolOptions): Promise<WorkerProcessTaskExecutor[]> {
    requireReference(options.pipelined, 'pipelined');
    requireReference(options.blocking, 'blocking');
    const executors = Array.from({ length: options.workers }, (_, i) => new WorkerProcessTaskExecutor(options, taskExecutorId(`worker-${i}`)));
    const children = options.prestarted?.take() ?? [];
    for (const extra of children.slice(executors.length)) extra.kill('SIGKILL');
    const results = await Promise.allSettled(executors.map((e, i) => e.start(children[i], initMessage(options, e.id))));
    const failure = results.find((r): r is PromiseRejectedResult => r.status === 'rejected');
    if (failure !== undefined) {
      await Promise.all(executors.map((e) => e.close()));
      throw failure.reason;
    }
    return executors;
  }

  /**
   * Forks one new worker `id` (in place of a lost one) at once; `ready` resolves once it loaded the job
   * (and rejects, the worker stopped, when it cannot). Closing `executor` meanwhile stops the start.
   */
  static startReplacement(options: WorkerPoolOptions, id: TaskExecutorId): { readonly executor: WorkerProcessTaskExecutor; readonly ready: Promise<WorkerProcessTaskExecutor> } {
    const executor = new WorkerProcessTaskExecutor(options, id);
    const ready = executor.start(undefined, initMessage(options, id)).then(
      () => executor,
      async (error: unknown) => {
        await executor.close();
        throw error;
      },
    );
    return { executor, ready };
  }
}

function initMessage(options: WorkerPoolOptions, id: TaskExecutorId): WorkerInitMessage {
  return {
    type: 'init',
    executorId: id,
    slots: options.slotsPerWorker,
    jobId: options.jobId,
    jobModuleUrl: options.loaded.moduleUrl,
    args: [...options.args],
    parallelism: options.parallelism,
    exchangeMode: options.exchangeMode,
    fingerprint: options.loaded.plan.fingerprint,
    pipelined: requireReference(options.pipelined, 'pipelined'),
    blocking: requireReference(options.blocking, 'blocking'),
    cwd: options.cwd,
    serializer: options.serializer,
    heartbeatIntervalMs: options.heartbeatIntervalMs ?? DEFAULT_HEARTBEAT_INTERVAL_MS,
    progressIntervalMs: options.progressIntervalMs ?? 250,
  };
}

/** One worker process, seen from the job master. */
export class WorkerProcessTaskExecutor implements TaskExecutor {
  readonly kind = 'worker';
  readonly id: TaskExecutorId;
  readonly slots: number;
  readonly #options: WorkerPoolOptions;
  readonly #logger: Logger;
  #child: ChildProcess | undefined;
  #progress: readonly TaskProgress[] = [];
  #lastHeartbeat = Date.now();
  #watchdog: ReturnType<typeof setInterval> | undefined;
  #state: 'starting' | 'ready' | 'closing' | 'gone' = 'starting';
  #exited: Promise<void> = Promise.resolve();
  #closed: Promise<void> | undefined;

  constructor(options: WorkerPoolOptions, id: TaskExecutorId) {
    this.#options = options;
    this.id = id;
    this.slots = options.slotsPerWorker;
    this.#logger = (options.logger ?? noopLogger).child({ taskExecutorId: id });
  }

  /** The worker's process id (undefined before it was forked). */
  get pid(): number | undefined {
    return this.#child?.pid;
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
      child.on('error', (error) => (settled ? this.#lost(error) : fail(error)));
      child.on('exit', (code, signal) => {
        const error = new Error(`worker process ${child.pid} exited with ${signal ?? `code ${code}`}`);
        // Closed while it started, it exits before it is ready: the start fails.
        if (!settled) fail(error);
        else if (this.#state === 'ready') this.#lost(error);
      });
      if (child.exitCode !== null || child.signalCode !== null) {
        fail(new Error(`worker process ${child.pid} exited with ${child.signalCode ?? `code ${child.exitCode}`} before it started`));
        return;
      }
      child.send(init);
    });
  }

  deploy(deployment: RegionDeployment): void {
    this.#send({ type: 'deploy', deployment });
  }

  /** Kills the worker process (SIGKILL); it is reported lost once it exited. */
  destroy(error: Error): void {
    this.#lost(error);
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

  async #close(): Promise<void> {
    const was = this.#state;
    this.#state = 'closing';
    if (this.#watchdog !== undefined) clearInterval(this.#watchdog);
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
    this.#progress = [];
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
