import {
  type JobId,
  type Logger,
  type ShuffleDescriptor,
  type ShuffleEnvironment,
  type ShuffleMaster,
  findShuffleError,
  noopLogger,
} from '@weft/shuffle-api';
import { EngineError, isEngineError } from '../errors/engine-error.js';
import type { JobPlan } from '../graph/job-plan.js';
import type { ExternalFileSystem } from '../io/external-file-system.js';
import type { StreamConnector } from '../io/stream-connector.js';
import type { RecordSerializerFactory } from '../serialization/record-serializer.js';
import { StreamTask, type TaskIo } from '../runtime/stream-task.js';
import { serializeTaskError } from '../runtime/task-error-serialization.js';
import type { TaskCheckpointingProvider } from '../runtime/task-checkpointing.js';
import type { InputPartition, RegionDeployment, TaskDeployment, TaskMetrics } from '../runtime/task-deployment.js';
import type { ApproximatePartitions } from './approximate-partitions.js';
import type { TaskEvent, TaskProgress } from '../runtime/task-events.js';

/** The shuffle side of one task executor. */
export interface ExecutorShuffle {
  /** The executor's own master of the pipelined shuffle: registers the pipelined partitions of its regions. */
  readonly pipelinedMaster: ShuffleMaster;
  readonly pipelinedEnvironment: ShuffleEnvironment;
  readonly blockingEnvironment: ShuffleEnvironment;
  /** The approximate partitions registered in this executor (ApproximatePartitions). @defaultValue none: approximate edges are refused */
  readonly approximate?: ApproximatePartitions;
}

/** How long a task waits for the partitions of its approximate inputs to be registered. @defaultValue 10 s */
export const DEFAULT_APPROXIMATE_RECONNECT_TIMEOUT_MS = 10_000;

export interface RegionRunnerOptions {
  readonly plan: JobPlan;
  readonly deployment: RegionDeployment;
  readonly shuffle: ExecutorShuffle;
  readonly cwd: string;
  readonly fileSystems: readonly ExternalFileSystem[];
  /** Where stream sources read. @defaultValue [] */
  readonly streamConnectors?: readonly StreamConnector[];
  readonly serializer: RecordSerializerFactory;
  readonly onEvent: (event: TaskEvent) => void;
  readonly logger?: Logger;
  /** Kills this process (a planted `kill-process` fault): set in worker processes only. */
  readonly killProcess?: () => void;
  /** Each task's link to the job's checkpoints (a checkpointed job run in the job master's process). @defaultValue none */
  readonly checkpointing?: TaskCheckpointingProvider;
  /** How long a task waits for an approximate input's partition (WEFT_ERR_APPROXIMATE_RECONNECT_TIMEOUT). @defaultValue DEFAULT_APPROXIMATE_RECONNECT_TIMEOUT_MS */
  readonly approximateReconnectTimeoutMs?: number;
}

interface Deferred {
  readonly promise: Promise<void>;
  resolve(): void;
  reject(error: unknown): void;
}

function deferred(): Deferred {
  let resolve!: () => void;
  let reject!: (error: unknown) => void;
  const promise = new Promise<void>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  promise.catch(() => {});
  return { promise, resolve, reject };
}

/** `WEFT_ERR_TASK_CANCELLED`. */
export function taskCancelled(reason: string): EngineError {
  return new EngineError('WEFT_ERR_TASK_CANCELLED', `task cancelled: ${reason}`);
}

/** True for failures that only echo another task's failure (its pipelined producer failed, or we cancelled it). */
function isEcho(error: unknown): boolean {
  return findShuffleError(error, 'SHF_ERR_PRODUCER_FAILED') !== undefined || isEngineError(error, 'WEFT_ERR_TASK_CANCELLED') || findShuffleError(error, 'SHF_ERR_CLOSED') !== undefined;
}

/**
 * Runs one pipelined region in a task executor — or this executor's part of a region the job master spread
 * over several: registers its pipelined partitions with the executor's pipelined ShuffleMaster (unless the
 * deployment carries their descriptors: the job master registered them), then runs every task concurrently. A task reading a BLOCKING partition produced
 * inside the region waits until that producer finished.
 *
 * When a task fails, the rest of the region is cancelled (a region fails and restarts as a whole); once all
 * have stopped, one `failed` event is reported — the root cause, not the consumers that merely saw their
 * producer fail — and `cancelled` for the others.
 */
export class RegionRunner {
  readonly #options: RegionRunnerOptions;
  readonly #logger: Logger;
  readonly #tasks = new Map<string, { readonly task: StreamTask; readonly controller: AbortController }>();
  readonly #finished = new Map<string, Deferred>();
  readonly #descriptors = new Map<string, ShuffleDescriptor>();
  #failed = false;
  readonly #cancelledFromOutside = new Set<string>();
  /** How the tasks ended that did not finish: failed (with their errors) or cancelled from outside. */
  readonly #failures: { readonly attemptId: string; readonly error: unknown; readonly metrics: TaskMetrics }[] = [];
  readonly #cancelled: { readonly attemptId: string; readonly metrics: TaskMetrics }[] = [];

  constructor(options: RegionRunnerOptions) {
    this.#options = options;
    this.#logger = options.logger ?? noopLogger;
  }

  get attemptIds(): string[] {
    return this.#options.deployment.tasks.map((t) => t.attemptId);
  }

  /** Runs the region; resolves once every task has reported its end. Never rejects. */
  async run(): Promise<void> {
    const { deployment, onEvent } = this.#options;
    for (const task of deployment.tasks) this.#finished.set(task.attemptId, deferred());
    try {
      await this.#registerPipelinedPartitions();
    } catch (error) {
      const [first, ...rest] = deployment.tasks;
      if (first !== undefined) onEvent({ type: 'failed', attemptId: first.attemptId, error: serializeTaskError(error) });
      for (const task of rest) onEvent({ type: 'cancelled', attemptId: task.attemptId });
      return;
    }
    await Promise.all(deployment.tasks.map((task) => this.#runTask(task)));
    const failures = this.#failures;
    // each stopped attempt's last counters go with its report (an approximate job's recoveries count its losses)
    if (failures.length === 0) {
      for (const { attemptId, metrics } of this.#cancelled) onEvent({ type: 'cancelled', attemptId, metrics });
      return;
    }
    const root = failures.find((f) => !isEcho(f.error)) ?? (failures[0] as (typeof failures)[number]);
    onEvent({ type: 'failed', attemptId: root.attemptId, error: serializeTaskError(root.error), metrics: root.metrics });
    for (const f of failures) if (f !== root) onEvent({ type: 'cancelled', attemptId: f.attemptId, metrics: f.metrics });
    for (const { attemptId, metrics } of this.#cancelled) onEvent({ type: 'cancelled', attemptId, metrics });
  }

  /** Cancels the named attempts of this region (all when `attemptIds` is undefined); each reports `cancelled`. */
  cancel(attemptIds: readonly string[] | undefined, reason: string): void {
    for (const task of this.#options.deployment.tasks) {
      if (attemptIds === undefined || attemptIds.includes(task.attemptId)) this.#cancelledFromOutside.add(task.attemptId);
    }
    this.#abort(attemptIds, reason);
  }

  progress(): TaskProgress[] {
    return [...this.#tasks.entries()].map(([attemptId, entry]) => ({ attemptId, metrics: entry.task.metrics() }));
  }

  async #registerPipelinedPartitions(): Promise<void> {
    const { deployment, shuffle } = this.#options;
    for (const task of deployment.tasks) {
      for (const output of task.outputs) {
        // registered by the job master already when it spread the region over several executors (or, over a
        // network shuffle, an approximate partition: its consumers may run on other executors)
        if (output.approximate === true && output.descriptor !== undefined) this.#approximate().publish(output.descriptor);
        if (!output.pipelined || output.descriptor !== undefined) continue;
        const descriptor = await shuffle.pipelinedMaster.registerPartitionWithProducer({ jobId: deployment.jobId as JobId, partition: output.partition, producer: output.producer });
        this.#descriptors.set(output.partition.partitionId, descriptor);
        if (output.approximate === true) this.#approximate().publish(descriptor);
      }
    }
  }

  /**
   * Runs one task to its end and reports `running`, then `finished`; a task that fails or is cancelled is
   * recorded for the region's report instead, and the first failure cancels the rest of the region.
   */
  async #runTask(task: TaskDeployment): Promise<void> {
    const { deployment, onEvent } = this.#options;
    const controller = new AbortController();
    const streamTask = new StreamTask({
      plan: this.#options.plan,
      deployment: task,
      jobId: deployment.jobId,
      signal: controller.signal,
      cwd: this.#options.cwd,
      fileSystems: this.#options.fileSystems,
      ...(this.#options.streamConnectors === undefined ? {} : { streamConnectors: this.#options.streamConnectors }),
      serializer: this.#options.serializer,
      logger: this.#logger.child({ attemptId: task.attemptId }),
      ...(this.#options.killProcess === undefined ? {} : { killProcess: this.#options.killProcess }),
      // a restarted attempt says when it reads again (where its failover ends); first attempts stay quiet
      ...(task.attempt === 0 ? {} : { onFirstRecord: (atMs: number) => onEvent({ type: 'reading', attemptId: task.attemptId, atMs }) }),
      // the job master fails over at once a task whose lost input's producer will not come back
      onInputAvailability: (partitionId, available) => onEvent({ type: available ? 'input-resumed' : 'input-unavailable', attemptId: task.attemptId, partitionId }),
      io: this.#taskIo(task, controller.signal),
      ...(this.#options.checkpointing === undefined ? {} : { checkpointing: () => (this.#options.checkpointing as TaskCheckpointingProvider)(task) }),
    });
    this.#tasks.set(task.attemptId, { task: streamTask, controller });
    if (this.#cancelledFromOutside.has(task.attemptId) || this.#failed) controller.abort(taskCancelled('cancelled before it started'));
    onEvent({ type: 'running', attemptId: task.attemptId });
    try {
      const result = await streamTask.run();
      this.#finished.get(task.attemptId)?.resolve();
      onEvent({ type: 'finished', attemptId: task.attemptId, result });
    } catch (error) {
      this.#finished.get(task.attemptId)?.reject(error);
      const metrics = streamTask.metrics();
      if (this.#cancelledFromOutside.has(task.attemptId)) {
        this.#cancelled.push({ attemptId: task.attemptId, metrics });
      } else {
        this.#failures.push({ attemptId: task.attemptId, error, metrics });
        if (!this.#failed) {
          this.#failed = true;
          this.#abort(undefined, `task ${task.attemptId} of the same region failed`);
        }
      }
    } finally {
      this.#tasks.delete(task.attemptId);
    }
  }

  /**
   * How a task gets its writers and gates: descriptors of pipelined partitions from this region's
   * registrations, and a gate over a BLOCKING partition produced in this region only once its producer
   * finished.
   */
  #taskIo(task: TaskDeployment, signal: AbortSignal): TaskIo {
    const { deployment, shuffle } = this.#options;
    return {
      createWriter: (output, memoryBytes) => {
        const environment = output.pipelined ? shuffle.pipelinedEnvironment : shuffle.blockingEnvironment;
        return environment.createResultPartitionWriter({ descriptor: this.#descriptorOf(output.partition.partitionId, output.descriptor), memoryBytes });
      },
      createGate: async (input, memoryBytes, resumeFrom) => {
        if (!input.pipelined) {
          for (const partition of input.partitions) {
            if (partition.sameRegion) await this.#finished.get(partition.producerAttemptId)?.promise;
          }
        }
        const environment = input.pipelined ? shuffle.pipelinedEnvironment : shuffle.blockingEnvironment;
        const timeoutMs = this.#options.approximateReconnectTimeoutMs ?? DEFAULT_APPROXIMATE_RECONNECT_TIMEOUT_MS;
        // an approximate input's producers are other regions: of this executor (wait until each registered
        // once), or named by the job master (its deployment, or a newer attempt it told this executor since)
        const inputs = input.approximate === true
          ? await Promise.all(input.partitions.map((p) => this.#approximateInput(p, task.executionVertexId, timeoutMs, signal)))
          : input.partitions.map((p) => this.#descriptorOf(p.partitionId, p.descriptor));
        return environment.createInputGate({
          jobId: deployment.jobId as JobId,
          inputs,
          subpartitions: input.subpartitions,
          consumerId: task.attemptId,
          memoryBytes,
          ...(resumeFrom === undefined ? {} : { resumeFrom }),
        });
      },
    };
  }

  #abort(attemptIds: readonly string[] | undefined, reason: string): void {
    const error = taskCancelled(reason);
    for (const [attemptId, entry] of this.#tasks) {
      if (attemptIds !== undefined && !attemptIds.includes(attemptId)) continue;
      if (!entry.controller.signal.aborted) entry.controller.abort(error);
    }
  }

  /** The newest known attempt of an approximate input partition: published here, else the deployment's, else once published. */
  #approximateInput(p: InputPartition, executionVertexId: string, timeoutMs: number, signal: AbortSignal): Promise<ShuffleDescriptor> {
    const approximate = this.#approximate();
    if (p.descriptor !== undefined) approximate.publish(p.descriptor);
    return approximate.descriptorOf({ partitionId: p.partitionId, executionVertexId, timeoutMs, signal });
  }

  #approximate(): ApproximatePartitions {
    const approximate = this.#options.shuffle.approximate;
    if (approximate === undefined) throw new Error('unreachable: an approximate partition on an executor without ApproximatePartitions (approximate jobs run in process)');
    return approximate;
  }

  #descriptorOf(partitionId: string, given: ShuffleDescriptor | undefined): ShuffleDescriptor {
    const descriptor = given ?? this.#descriptors.get(partitionId);
    if (descriptor === undefined) throw new Error(`unreachable: no descriptor for partition ${partitionId} in region ${this.#options.deployment.region}`);
    return descriptor;
  }
}
