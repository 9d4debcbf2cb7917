import { deserializeTaskError, EngineError, isFromWorkerCheckpointMessage, type RegionDeployment, type TaskCheckpointingProvider, type TaskExecutor, type TaskExecutorListener, type TaskProgress, WorkerCheckpointRelay } from '@weft/engine';
import { type Logger, type ShuffleDescriptor, type ShuffleLocation, type TaskExecutorId } from '@weft/shuffle-api';
import type { ExecutorInitMessage } from './control-protocol.js';
import type { ExecutorRecord } from './executor-record.js';
import { type MasterConnection, openControlConnection } from './open-control-connection.js';

export interface RemoteTaskExecutorRequest {
  readonly id: TaskExecutorId;
  readonly record: ExecutorRecord;
  /** Signed; its `executorId` is `id`. */
  readonly init: ExecutorInitMessage;
  readonly listener: TaskExecutorListener;
  readonly logger: Logger;
  /** Connecting and loading the job. */
  readonly startTimeoutMs: number;
  /** Silent this long (no heartbeat, no message), the executor is lost. */
  readonly heartbeatTimeoutMs: number;
  /** A checkpointed job: the executor's task attempts are linked to it (its `init` says `checkpointed`). @defaultValue none */
  readonly checkpointing?: TaskCheckpointingProvider | undefined;
}

/**
 * A cluster task executor, seen from a job master: one control connection to it, on which the signed
 * `init` went and deployments, cancellations and shutdown go; task events, progress and heartbeats come
 * back. A dropped connection, a silence of `heartbeatTimeoutMs`, or `destroy` (its registry record
 * expired) makes it lost — reported once through `onExecutorLost`; `draining` from it is reported as
 * `onExecutorRetiring`. `close()` tells it the job is done (it frees the job's slots).
 */
export class RemoteTaskExecutor implements TaskExecutor {
  readonly kind = 'remote';
  readonly id: TaskExecutorId;
  readonly slots: number;
  readonly record: ExecutorRecord;
  readonly #connection: MasterConnection;
  readonly #options: RemoteTaskExecutorRequest;
  #progress: readonly TaskProgress[] = [];
  #lastHeard = Date.now();
  #watchdog: ReturnType<typeof setInterval> | undefined;
  #state: 'ready' | 'closing' | 'gone' = 'ready';
  #closed: Promise<void> | undefined;
  readonly #gone: Promise<void>;
  #resolveGone: () => void = () => {};

  #shuffleLocation: ShuffleLocation | undefined;
  readonly #checkpoints: WorkerCheckpointRelay | undefined;

  private constructor(options: RemoteTaskExecutorRequest, connection: MasterConnection, slots: number) {
    this.#options = options;
    const provider = options.checkpointing;
    this.#checkpoints = provider === undefined ? undefined : new WorkerCheckpointRelay({ provider, send: (message) => this.#send(message), logger: options.logger });
    this.id = options.id;
    this.record = options.record;
    this.slots = slots;
    this.#connection = connection;
    this.#gone = new Promise((resolve) => (this.#resolveGone = resolve));
  }

  /** Connects, sends the deployment's `init`, and resolves once the executor loaded the job (`ready`). */
  static async connect(options: RemoteTaskExecutorRequest): Promise<RemoteTaskExecutor> {
    const connection = await openControlConnection(options.record.advertisedUrl, options.startTimeoutMs);
    return new Promise<RemoteTaskExecutor>((resolve, reject) => {
      const timer = setTimeout(() => fail(new Error(`did not load the job within ${options.startTimeoutMs} ms`)), options.startTimeoutMs);
      let settled = false;
      const fail = (error: Error): void => {
        clearTimeout(timer);
        if (settled) return;
        settled = true;
        connection.destroy();
        const code = (error as { code?: unknown }).code;
        reject(code === 'WEFT_ERR_DEPLOYMENT_REFUSED' ? error : new EngineError('WEFT_ERR_TASK_EXECUTOR_LOST', `task executor ${options.record.id} (${options.record.advertisedUrl}) failed to start the job: ${error.message}`, { cause: error, context: { taskExecutorId: options.id } }));
      };
      connection.onMessage = (message) => {
        if (message.type === 'ready') {
          clearTimeout(timer);
          settled = true;
          const executor = new RemoteTaskExecutor(options, connection, message.slots);
          executor.#shuffleLocation = message.shuffleLocation;
          executor.#attach();
          resolve(executor);
        } else if (message.type === 'init-failed') {
          fail(deserializeTaskError(message.error));
        }
      };
      connection.onClose = (error) => fail(error ?? new Error('the connection closed'));
      connection.send(options.init);
    });
  }

  /**
   * Where the executor's worker serves the job's pipelined partitions to other executors (when the job
   * holds one slot there and its pipelined shuffle does), as it last said: the job master may spread a
   * region over such executors.
   */
  get shuffleLocation(): ShuffleLocation | undefined {
    return this.#shuffleLocation;
  }

  deploy(deployment: RegionDeployment): void {
    this.#checkpoints?.deployed(deployment.tasks);
    this.#send({ type: 'deploy', deployment });
  }

  cancel(attemptIds: readonly string[], reason: string): void {
    this.#send({ type: 'cancel', attemptIds, reason });
  }

  /** New attempts of approximate partitions the job master registered: relayed to the executor's workers. */
  updatePartitionInfo(descriptors: readonly ShuffleDescriptor[]): void {
    this.#send({ type: 'update-partition-info', descriptors });
  }

  /** Drops the connection and reports the executor lost (its registry record expired, tasks ignore cancellation). */
  destroy(error: Error): void {
    this.#lost(error);
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
    if (this.#watchdog !== undefined) clearInterval(this.#watchdog);
    if (this.#state !== 'ready') return;
    this.#state = 'closing';
    this.#checkpoints?.detachAll();
    this.#connection.send({ type: 'shutdown' });
    const timer = setTimeout(() => this.#connection.destroy(), 10_000);
    await this.#gone;
    clearTimeout(timer);
  }

  #attach(): void {
    const { listener, logger, heartbeatTimeoutMs } = this.#options;
    this.#connection.onMessage = (message) => {
      this.#lastHeard = Date.now();
      if (this.#state === 'gone') return;
      switch (message.type) {
        case 'task-event':
          // an attempt's counters and checkpoint link go once it ended (not at `running` or `reading`: it still runs)
          if (message.event.type === 'finished' || message.event.type === 'failed' || message.event.type === 'cancelled') {
            this.#progress = this.#progress.filter((p) => p.attemptId !== message.event.attemptId);
            this.#checkpoints?.detach(message.event.attemptId);
          }
          listener.onTaskEvent(this.id, message.event);
          return;
        case 'progress':
          this.#progress = message.tasks;
          return;
        case 'shuffle-location':
          this.#shuffleLocation = message.location;
          listener.onShuffleLocationChanged?.(this.id);
          return;
        case 'draining':
          logger.info({ taskExecutorId: this.id }, 'task executor drains');
          listener.onExecutorRetiring?.(this.id);
          return;
        case 'log':
          logger[message.level]({ ...message.fields, taskExecutorId: this.id }, message.message);
          return;
        default:
          if (isFromWorkerCheckpointMessage(message)) this.#checkpoints?.handle(message);
          return;
      }
    };
    this.#connection.onClose = (error) => {
      this.#resolveGone();
      this.#lost(error ?? new Error(`its control connection closed (${this.record.advertisedUrl})`));
    };
    this.#watchdog = setInterval(() => {
      if (Date.now() - this.#lastHeard > heartbeatTimeoutMs) this.#lost(new Error(`no heartbeat for ${heartbeatTimeoutMs} ms (--heartbeat-timeout)`));
    }, Math.min(1000, heartbeatTimeoutMs));
    this.#watchdog.unref();
  }

  #send(message: Parameters<MasterConnection['send']>[0]): void {
    if (this.#state === 'gone') return;
    if (!this.#connection.send(message)) this.#lost(new Error('its control connection is closed'));
  }

  #lost(error: Error): void {
    if (this.#state !== 'ready') {
      this.#resolveGone();
      return;
    }
    this.#state = 'gone';
    if (this.#watchdog !== undefined) clearInterval(this.#watchdog);
    this.#progress = [];
    this.#checkpoints?.detachAll();
    this.#connection.destroy();
    this.#resolveGone();
    // an expected fault, by its code: the job's report shows the reason, not a stack trace of the socket's
    const lost = error instanceof EngineError ? error : new EngineError('WEFT_ERR_TASK_EXECUTOR_LOST', error.message, { context: { taskExecutorId: this.id } });
    this.#options.listener.onExecutorLost(this.id, lost);
  }
}
