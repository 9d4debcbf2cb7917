import { type JobId, type Logger, type ShuffleDescriptor, type ShuffleLocation, type ShuffleServiceFactory, type TaskExecutorId, noopLogger } from '@weft/shuffle-api';
import type { JobPlan } from '../graph/job-plan.js';
import type { ExternalFileSystem } from '../io/external-file-system.js';
import type { StreamConnector } from '../io/stream-connector.js';
import type { RecordSerializerFactory } from '../serialization/record-serializer.js';
import type { TaskCheckpointingProvider } from '../runtime/task-checkpointing.js';
import type { RegionDeployment } from '../runtime/task-deployment.js';
import type { TaskProgress } from '../runtime/task-events.js';
import { ApproximatePartitions } from './approximate-partitions.js';
import { type ExecutorShuffle, RegionRunner } from './region-runner.js';
import type { TaskExecutor, TaskExecutorListener } from './task-executor.js';

export interface InProcessTaskExecutorOptions {
  readonly id: TaskExecutorId;
  readonly slots: number;
  readonly jobId: JobId;
  readonly plan: JobPlan;
  readonly pipelined: ShuffleServiceFactory;
  readonly blocking: ShuffleServiceFactory;
  readonly listener: TaskExecutorListener;
  readonly cwd: string;
  /** Where `<scheme>://` inputs and outputs live. @defaultValue [] */
  readonly fileSystems?: readonly ExternalFileSystem[];
  /** Where stream sources read (RunJobOptions.streamConnectors). @defaultValue [] */
  readonly streamConnectors?: readonly StreamConnector[];
  readonly serializer: RecordSerializerFactory;
  readonly logger?: Logger;
  /** Kills this process (a planted `kill-process` fault): set by worker processes only. */
  readonly killProcess?: () => void;
  /** Links each task to the job's checkpoints (RunJobOptions.checkpointing). @defaultValue none: no checkpoints */
  readonly checkpointing?: TaskCheckpointingProvider;
  /** Where other hosts reach this one (ShuffleEnvironmentContext.peerAddress), for the pipelined environment. @defaultValue its options' */
  readonly peerAddress?: { readonly listenHost: string; readonly advertisedHost: string };
  /** How long a task waits for an approximate input's partition (RegionRunnerOptions). @defaultValue DEFAULT_APPROXIMATE_RECONNECT_TIMEOUT_MS */
  readonly approximateReconnectTimeoutMs?: number;
}

/**
 * A task executor inside the job master's process: regions run as concurrent async tasks on the one event
 * loop. For tests, small jobs, and jobs whose blocking shuffle lives in this process's memory.
 */
export class InProcessTaskExecutor implements TaskExecutor {
  readonly kind = 'inprocess';
  readonly id: TaskExecutorId;
  readonly slots: number;
  readonly #options: InProcessTaskExecutorOptions;
  readonly #shuffle: ExecutorShuffle;
  readonly #runners = new Set<RegionRunner>();
  readonly #running = new Set<Promise<void>>();
  #closed: Promise<void> | undefined;

  private constructor(options: InProcessTaskExecutorOptions, shuffle: ExecutorShuffle) {
    this.#options = options;
    this.id = options.id;
    this.slots = options.slots;
    this.#shuffle = shuffle;
  }

  /** Opens the executor's shuffle: on any failure, what was opened is closed again before the error is thrown. */
  static async start(options: InProcessTaskExecutorOptions): Promise<InProcessTaskExecutor> {
    const logger = (options.logger ?? noopLogger).child({ taskExecutorId: options.id });
    const pipelinedMaster = options.pipelined.createShuffleMaster({ logger });
    const undo: (() => Promise<void>)[] = [() => pipelinedMaster.close()];
    try {
      await pipelinedMaster.start();
      await pipelinedMaster.registerJob({ jobId: options.jobId });
      undo.push(() => pipelinedMaster.unregisterJob(options.jobId));
      const pipelinedEnvironment = options.pipelined.createShuffleEnvironment({ taskExecutorId: options.id, logger, ...(options.peerAddress === undefined ? {} : { peerAddress: options.peerAddress }) });
      undo.push(() => pipelinedEnvironment.close());
      await pipelinedEnvironment.start?.();
      const blockingEnvironment = options.blocking.createShuffleEnvironment({ taskExecutorId: options.id, logger });
      undo.push(() => blockingEnvironment.close());
      // a blocking store that is misconfigured or unreachable fails the executor's start, not its first task
      await blockingEnvironment.start?.();
      return new InProcessTaskExecutor(options, { pipelinedMaster, pipelinedEnvironment, blockingEnvironment, approximate: new ApproximatePartitions() });
    } catch (error) {
      for (const step of undo.reverse()) {
        await step().catch((closeError: unknown) => logger.warn({ error: (closeError as Error).message }, 'closing the shuffle of an executor that failed to start'));
      }
      throw error;
    }
  }

  /** Where its pipelined environment serves partitions to other executors (a network shuffle's), if it does. */
  get shuffleLocation(): ShuffleLocation | undefined {
    return this.#shuffle.pipelinedEnvironment.location;
  }

  deploy(deployment: RegionDeployment): void {
    const { listener } = this.#options;
    const runner = new RegionRunner({
      plan: this.#options.plan,
      deployment,
      shuffle: this.#shuffle,
      cwd: this.#options.cwd,
      fileSystems: this.#options.fileSystems ?? [],
      ...(this.#options.streamConnectors === undefined ? {} : { streamConnectors: this.#options.streamConnectors }),
      serializer: this.#options.serializer,
      onEvent: (event) => listener.onTaskEvent(this.id, event),
      ...(this.#options.logger === undefined ? {} : { logger: this.#options.logger }),
      ...(this.#options.killProcess === undefined ? {} : { killProcess: this.#options.killProcess }),
      ...(this.#options.checkpointing === undefined ? {} : { checkpointing: this.#options.checkpointing }),
      ...(this.#options.approximateReconnectTimeoutMs === undefined ? {} : { approximateReconnectTimeoutMs: this.#options.approximateReconnectTimeoutMs }),
    });
    this.#runners.add(runner);
    const run = runner.run().finally(() => {
      this.#runners.delete(runner);
      this.#running.delete(run);
    });
    this.#running.add(run);
  }

  updatePartitionInfo(descriptors: readonly ShuffleDescriptor[]): void {
    const { approximate, pipelinedEnvironment } = this.#shuffle;
    for (const descriptor of descriptors) {
      approximate?.publish(descriptor);
      pipelinedEnvironment.updatePartitionInfo?.(descriptor);
    }
  }

  cancel(attemptIds: readonly string[], reason: string): void {
    for (const runner of this.#runners) {
      const mine = attemptIds.filter((id) => runner.attemptIds.includes(id));
      if (mine.length > 0) runner.cancel(mine, reason);
    }
  }

  progress(): readonly TaskProgress[] {
    return [...this.#runners].flatMap((r) => r.progress());
  }

  close(): Promise<void> {
    this.#closed ??= this.#close();
    return this.#closed;
  }

  async [Symbol.asyncDispose](): Promise<void> {
    await this.close();
  }

  async #close(): Promise<void> {
    for (const runner of this.#runners) runner.cancel(undefined, 'the task executor is closing');
    await Promise.all(this.#running);
    const { pipelinedMaster, pipelinedEnvironment, blockingEnvironment } = this.#shuffle;
    const steps = [
      () => pipelinedEnvironment.close(),
      () => blockingEnvironment.close(),
      () => pipelinedMaster.unregisterJob(this.#options.jobId),
      () => pipelinedMaster.close(),
    ];
    for (const step of steps) {
      try {
        await step();
      } catch (error) {
        (this.#options.logger ?? noopLogger).warn({ taskExecutorId: this.id, error: (error as Error).message }, 'closing the in-process executor');
      }
    }
  }
}
