import type { JobId, Logger, ShuffleServiceReference } from '@weft/shuffle-api';
import type { ExchangeMode } from '../api/exchange-mode.js';
import type { JobPlan } from '../graph/job-plan.js';
import type { ExternalFileSystemReference } from '../io/external-file-system.js';
import type { StreamConnectorReference } from '../io/stream-connector.js';
import type { SerializerName } from '../serialization/serializers.js';
import type { TaskCheckpointingProvider } from '../runtime/task-checkpointing.js';
import type { TaskExecutor, TaskExecutorListener } from './task-executor.js';

/** What a job hands a TaskExecutorProvider: the job as its master planned it, and whom executors report to. */
export interface TaskExecutorProviderRequest {
  readonly jobId: JobId;
  /** The job module's file URL (a provider ships the code from it). */
  readonly jobModuleUrl: string;
  readonly args: readonly string[];
  /**
   * The job master's plan; executors rebuild it from the module and must get the same fingerprint — an
   * adaptive plan with its `adaptive` (options and presets) handed to loadJob, as WorkerInitMessage carries it.
   */
  readonly plan: JobPlan;
  readonly parallelism: number;
  readonly exchangeMode: ExchangeMode;
  /** Both shuffles, by reference: executors rebuild the factories from them. */
  readonly pipelined: ShuffleServiceReference;
  readonly blocking: ShuffleServiceReference;
  /** The job's external file systems (`s3://` inputs and outputs), by reference: executors rebuild them. */
  readonly fileSystems: readonly ExternalFileSystemReference[];
  /**
   * The job's stream connectors (`ctx.readRedisStream`), by reference: executors rebuild them (a provider
   * forwards them in WorkerInitMessage.streamConnectors). @defaultValue []
   */
  readonly streamConnectors?: readonly StreamConnectorReference[];
  readonly cwd: string;
  readonly serializer: SerializerName;
  /** Reports of every executor, those that join later included (`onExecutorJoined`). */
  readonly listener: TaskExecutorListener;
  readonly logger: Logger;
  /**
   * A checkpointed job (given only to a provider that `relaysCheckpoints`): each task attempt its executors
   * run is linked to it — over the worker protocol's checkpoint messages (WorkerCheckpointRelay on this
   * side). @defaultValue none: the job takes no checkpoints
   */
  readonly checkpointing?: TaskCheckpointingProvider;
}

/**
 * Where a job's task executors come from when they are neither the job master's own process nor its worker
 * pool — e.g. `@weft/cluster`'s executors registered in Redis on other hosts. The engine never picks one;
 * the caller hands it to `runJob({ executor })`, as it hands a shuffle.
 *
 * Lifecycle: `start` resolves with the executors the job begins on (rejects when there are none: the job
 * does not start); afterwards the provider may report more through `listener.onExecutorJoined` and
 * losses through `listener.onExecutorLost`, and announce an executor that takes no new work through
 * `listener.onExecutorRetiring`. `close()` (idempotent) stops reporting and closes every executor it
 * started. Deliberately not here: placement (the job master places regions by free slots) and replacement
 * of lost executors (a provider's new executors simply join).
 */
export interface TaskExecutorProvider {
  /** Reported as `JobResult.executor.kind`, e.g. `cluster`. */
  readonly kind: string;
  /** Its executors relay the worker protocol's checkpoint messages (`request.checkpointing`): a checkpointed job may run on them. @defaultValue false */
  readonly relaysCheckpoints?: boolean;
  /**
   * When every executor of the job is lost, how long the job waits for one to join (`onExecutorJoined`)
   * before it fails, its regions waiting for slots meanwhile — executors that register again once restarted.
   * @defaultValue none: the job fails once no executor is left
   */
  readonly rejoinTimeoutMs?: number;
  start(request: TaskExecutorProviderRequest): Promise<readonly TaskExecutor[]>;
  close(): Promise<void>;
}

/** True when `value` looks like a TaskExecutorProvider (an object with `start` and `close`). */
export function isTaskExecutorProvider(value: unknown): value is TaskExecutorProvider {
  return typeof value === 'object' && value !== null && typeof (value as TaskExecutorProvider).start === 'function' && typeof (value as TaskExecutorProvider).close === 'function';
}
