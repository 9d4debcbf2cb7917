import { type JobId, type Logger, type ShuffleMaster, type ShuffleServiceFactory, taskExecutorId } from '@weft/shuffle-api';
import type { TaskCheckpointingProvider } from '../runtime/task-checkpointing.js';
import { InProcessTaskExecutor } from '../executor/in-process-task-executor.js';
import type { PrestartedWorkers } from '../executor/prestarted-workers.js';
import type { TaskExecutor, TaskExecutorListener } from '../executor/task-executor.js';
import type { TaskExecutorProvider } from '../executor/task-executor-provider.js';
import { EngineError } from '../errors/engine-error.js';
import { WorkerPool } from '../executor/worker-pool.js';
import type { WorkerPoolOptions } from '../executor/worker-pool-options.js';
import type { LoadedJob } from '../graph/load-job.js';
import type { ExternalFileSystem } from '../io/external-file-system.js';
import type { StreamConnector } from '../io/stream-connector.js';
import type { RecordSerializerFactory } from '../serialization/record-serializer.js';
import type { SerializerName } from '../serialization/serializers.js';
import { streamConnectorReferences } from './check-stream-sources.js';
import { FencedShuffleMaster } from './fenced-shuffle-master.js';
import type { JobFence } from './job-fence.js';
import { type PartitionsLostListener, PartitionsLostRelay } from './partitions-lost-relay.js';

/** The two shuffle services a job uses; the engine never picks one itself (docs/DESIGN.md). */
export interface JobShuffleServices {
  /**
   * For must-be-pipelined edges inside a region: the in-memory shuffle (a region then runs whole in one
   * executor), or one whose environments serve partitions to other executors (`ShuffleEnvironment.location`,
   * e.g. @weft/shuffle-network): with worker processes or a provider's executors a region is then spread
   * over them.
   */
  readonly pipelined: ShuffleServiceFactory;
  /** For BLOCKING edges between regions: must be readable from every executor (for workers: another process). */
  readonly blocking: ShuffleServiceFactory;
}

export interface JobSessionOptions {
  readonly jobId: JobId;
  readonly loaded: LoadedJob;
  readonly args: readonly string[];
  readonly shuffle: JobShuffleServices;
  /** `inprocess`: one executor in this process; `workers`: a pool of worker processes; or a provider's executors. */
  readonly executor: 'inprocess' | 'workers' | TaskExecutorProvider;
  readonly workers: number;
  readonly slotsPerExecutor: number;
  readonly cwd: string;
  readonly fileSystems: readonly ExternalFileSystem[];
  /** Where stream sources read; executors outside this process get the references of those that have one. @defaultValue [] */
  readonly streamConnectors?: readonly StreamConnector[] | undefined;
  /** The serializer in process; workers resolve it by `serializerName`. */
  readonly serializer: RecordSerializerFactory;
  readonly serializerName: SerializerName;
  readonly logger: Logger;
  /** Start a worker process in place of each one lost (workers only). */
  readonly replaceLostWorkers: boolean;
  readonly workerExecArgv?: readonly string[] | undefined;
  readonly prestartedWorkers?: PrestartedWorkers | undefined;
  readonly heartbeatIntervalMs?: number | undefined;
  readonly heartbeatTimeoutMs?: number | undefined;
  /** RunJobOptions.approximateReconnectTimeoutMs, for the executors (in process, and each worker process). @defaultValue its default */
  readonly approximateReconnectTimeoutMs?: number | undefined;
  /** The job master run's lease epoch, given to `registerJob` (JobShuffleContext.epoch). @defaultValue none */
  readonly epoch?: number | undefined;
  /**
   * The run's fence: the blocking master is used behind it (FencedShuffleMaster), and once the run is
   * fenced `close()` does not unregister the job (a newer run owns it). @defaultValue none
   */
  readonly fence?: JobFence | undefined;
}

/**
 * The services a job runs on, apart from its job master (Flink's session: the shuffle masters and the
 * resource side): the blocking ShuffleMaster — created here, started and the job registered with it in
 * `start`, the job unregistered and the master closed in `close` — and the executor provider: the
 * in-process task executor or a worker pool, and replacements for lost workers.
 *
 * Ownership: every executor it starts (replacements included, from the moment they are forked, so one
 * still starting is stopped too) is closed by `close()`, which runs every step even if one fails
 * (failures are logged) and is what a job's `finally` calls, whether or not `start` succeeded.
 * A fenced run (JobSessionOptions.fence) leaves the job registered: its partitions are the newer run's.
 */
export class JobSession {
  readonly blockingMaster: ShuffleMaster;
  /**
   * The job's own master of the pipelined shuffle, for executors outside this process (workers, a
   * provider's): it registers the pipelined partitions of regions spread over them. Started and the job
   * registered with it in `startShuffle`; the job unregistered before the executors close. Absent in
   * process (the in-process executor keeps its own).
   */
  readonly pipelinedMaster: ShuffleMaster | undefined;
  readonly #options: JobSessionOptions;
  readonly #executors: TaskExecutor[] = [];
  #poolOptions: WorkerPoolOptions | undefined;
  #replaced = 0;
  #shuffleStarted: Promise<void> | undefined;
  readonly #partitionsLost: PartitionsLostRelay;

  #checkpointing: TaskCheckpointingProvider | undefined;

  /** Links each task of the in-process executor or of the worker processes to the job's checkpoints; call before `start`. */
  useCheckpointing(provider: TaskCheckpointingProvider): void {
    this.#checkpointing = provider;
  }

  constructor(options: JobSessionOptions) {
    this.#options = options;
    this.#partitionsLost = new PartitionsLostRelay(options.logger);
    const master = options.shuffle.blocking.createShuffleMaster({ logger: options.logger });
    this.blockingMaster = options.fence === undefined ? master : new FencedShuffleMaster(master, options.fence);
    if (options.executor !== 'inprocess') {
      const pipelined = options.shuffle.pipelined.createShuffleMaster({ logger: options.logger });
      this.pipelinedMaster = options.fence === undefined ? pipelined : new FencedShuffleMaster(pipelined, options.fence);
    }
  }

  /** Every executor started so far, replacements included. */
  get executors(): readonly TaskExecutor[] {
    return this.#executors;
  }

  /**
   * Starts the blocking master (`start`, `registerJob`) and the task executors together (worker processes
   * take the longest), reporting to `listener`; rejects when either fails (what started is closed by `close`).
   */
  async start(listener: TaskExecutorListener): Promise<readonly TaskExecutor[]> {
    const startMaster = this.startShuffle();
    const [masterStarted, executorsStarted] = await Promise.allSettled([startMaster, this.#startExecutors(listener)]);
    if (executorsStarted.status === 'fulfilled') this.#executors.push(...executorsStarted.value);
    if (masterStarted.status === 'rejected') throw masterStarted.reason;
    if (executorsStarted.status === 'rejected') throw executorsStarted.reason;
    return [...this.#executors];
  }

  /**
   * Where the blocking master's notices of lost partitions go (JobShuffleContext.partitionsLost: the job
   * master's `partitionsLost`); those that came before are handed over at once.
   */
  onPartitionsLost(listener: PartitionsLostListener): void {
    this.#partitionsLost.attach(listener);
  }

  /**
   * Starts the blocking master and registers the job with it, once (memoized): `start` does it too; a
   * resumed run calls it first, to ask the master which partitions exist before its job master is built.
   * The blocking master may tell the job of partitions it lost (`onPartitionsLost`).
   */
  startShuffle(): Promise<void> {
    const { jobId, epoch } = this.#options;
    this.#shuffleStarted ??= (async () => {
      const context = { jobId, ...(epoch === undefined ? {} : { epoch }) };
      await Promise.all([
        (async () => {
          await this.blockingMaster.start();
          // with the epoch, the shuffle fences every older run of the job before this one lists or registers anything
          await this.blockingMaster.registerJob({ ...context, partitionsLost: this.#partitionsLost.notify });
        })(),
        (async () => {
          await this.pipelinedMaster?.start();
          await this.pipelinedMaster?.registerJob(context);
        })(),
      ]);
    })();
    return this.#shuffleStarted;
  }

  /** Starts a worker in place of a lost one; undefined where lost executors are not replaced (in process, or turned off). */
  get replaceExecutor(): ((lost: unknown) => Promise<TaskExecutor>) | undefined {
    if (this.#options.executor !== 'workers' || !this.#options.replaceLostWorkers) return undefined;
    return () => {
      const { executor, ready } = WorkerPool.startReplacement(this.#poolOptions as WorkerPoolOptions, taskExecutorId(`worker-${this.#options.workers + this.#replaced++}`));
      this.#executors.push(executor);
      return ready;
    };
  }

  /**
   * Closes every executor, then awaits `beforeUnregister` (the job master's partition releases in
   * flight), unregisters the job (releasing what is left of its partitions; not when the run is fenced:
   * they are the newer run's) and closes the blocking master.
   */
  async close(beforeUnregister: () => Promise<void>): Promise<void> {
    const { logger, jobId } = this.#options;
    const provider = this.#options.executor;
    // the pipelined partitions first, while their executors still listen (the regions are done: nothing reads them)
    const pipelined = this.pipelinedMaster;
    if (pipelined !== undefined) {
      if (this.#shuffleStarted !== undefined && this.#options.fence?.isFenced !== true) await pipelined.unregisterJob(jobId).catch((error: unknown) => logger.warn({ jobId, error: (error as Error).message }, 'unregistering the job from the pipelined shuffle failed'));
      await pipelined.close().catch(() => {});
    }
    if (typeof provider === 'object') await provider.close().catch((error: unknown) => logger.warn({ jobId, error: (error as Error).message }, 'closing the task executor provider failed'));
    await Promise.all(
      this.#executors.map((executor) => executor.close().catch((error: unknown) => logger.warn({ taskExecutorId: executor.id, error: (error as Error).message }, 'closing a task executor failed'))),
    );
    await beforeUnregister().catch((error: unknown) => logger.warn({ jobId, error: (error as Error).message }, 'awaiting partition releases failed'));
    if (this.#options.fence?.isFenced === true) logger.info({ jobId }, 'the job is not unregistered: a newer job master run owns it');
    else await this.blockingMaster.unregisterJob(jobId).catch((error: unknown) => logger.warn({ jobId, error: (error as Error).message }, 'unregistering the job failed'));
    this.#partitionsLost.close();
    await this.blockingMaster.close().catch(() => {});
  }

  async #startExecutors(listener: TaskExecutorListener): Promise<TaskExecutor[]> {
    const o = this.#options;
    if (typeof o.executor === 'object') {
      const moduleUrl = o.loaded.moduleUrl;
      const pipelined = o.shuffle.pipelined.reference;
      const blocking = o.shuffle.blocking.reference;
      if (moduleUrl === undefined) throw new EngineError('WEFT_ERR_INVALID_JOB', `a job run on ${o.executor.kind} executors must be given as a module path, so its code can travel`, { context: { field: 'job' } });
      if (pipelined === undefined || blocking === undefined) {
        throw new EngineError('WEFT_ERR_INVALID_ARGUMENT', `the ${pipelined === undefined ? 'pipelined' : 'blocking'} shuffle service has no reference, so ${o.executor.kind} executors cannot rebuild it`, { context: { field: 'shuffle' } });
      }
      const kind = o.executor.kind;
      const fileSystems = o.fileSystems.map((fs, i) => {
        if (fs.reference === undefined) throw new EngineError('WEFT_ERR_INVALID_ARGUMENT', `the ${fs.scheme}:// file system has no reference, so ${kind} executors cannot rebuild it`, { context: { field: `fileSystems[${i}]` } });
        return fs.reference;
      });
      const streamConnectors = streamConnectorReferences(o.streamConnectors);
      return [
        ...(await o.executor.start({
          jobId: o.jobId,
          jobModuleUrl: moduleUrl,
          args: o.args,
          plan: o.loaded.plan,
          parallelism: o.loaded.plan.defaultParallelism,
          exchangeMode: o.loaded.plan.exchangeMode,
          pipelined,
          blocking,
          fileSystems,
          ...(streamConnectors.length === 0 ? {} : { streamConnectors }),
          cwd: o.cwd,
          serializer: o.serializerName,
          listener,
          logger: o.logger,
          ...(this.#checkpointing === undefined ? {} : { checkpointing: this.#checkpointing }),
        })),
      ];
    }
    if (o.executor === 'inprocess') {
      return [
        await InProcessTaskExecutor.start({
          id: taskExecutorId('inprocess-0'),
          slots: o.slotsPerExecutor,
          jobId: o.jobId,
          plan: o.loaded.plan,
          pipelined: o.shuffle.pipelined,
          blocking: o.shuffle.blocking,
          listener,
          cwd: o.cwd,
          fileSystems: o.fileSystems,
          ...(o.streamConnectors === undefined ? {} : { streamConnectors: o.streamConnectors }),
          serializer: o.serializer,
          logger: o.logger,
          ...(this.#checkpointing === undefined ? {} : { checkpointing: this.#checkpointing }),
          ...(o.approximateReconnectTimeoutMs === undefined ? {} : { approximateReconnectTimeoutMs: o.approximateReconnectTimeoutMs }),
        }),
      ];
    }
    this.#poolOptions = {
      workers: o.workers,
      slotsPerWorker: o.slotsPerExecutor,
      jobId: o.jobId,
      loaded: o.loaded as LoadedJob & { moduleUrl: string },
      args: o.args,
      pipelined: o.shuffle.pipelined,
      blocking: o.shuffle.blocking,
      listener,
      cwd: o.cwd,
      fileSystems: o.fileSystems,
      streamConnectors: streamConnectorReferences(o.streamConnectors),
      serializer: o.serializerName,
      logger: o.logger,
      ...(o.workerExecArgv === undefined ? {} : { execArgv: o.workerExecArgv }),
      ...(o.prestartedWorkers === undefined ? {} : { prestarted: o.prestartedWorkers }),
      ...(o.heartbeatIntervalMs === undefined ? {} : { heartbeatIntervalMs: o.heartbeatIntervalMs }),
      ...(o.heartbeatTimeoutMs === undefined ? {} : { heartbeatTimeoutMs: o.heartbeatTimeoutMs }),
      ...(o.approximateReconnectTimeoutMs === undefined ? {} : { approximateReconnectTimeoutMs: o.approximateReconnectTimeoutMs }),
      ...(this.#checkpointing === undefined ? {} : { checkpointing: this.#checkpointing }),
    };
    return WorkerPool.start(this.#poolOptions);
  }
}
