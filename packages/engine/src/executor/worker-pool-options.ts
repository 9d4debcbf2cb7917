import type { Logger, ShuffleServiceFactory } from '@weft/shuffle-api';
import type { LoadedJob } from '../graph/load-job.js';
import type { ExternalFileSystem } from '../io/external-file-system.js';
import type { StreamConnectorReference } from '../io/stream-connector.js';
import type { SerializerName } from '../serialization/serializers.js';
import type { TaskCheckpointingProvider } from '../runtime/task-checkpointing.js';
import type { PrestartedWorkers } from './prestarted-workers.js';
import type { TaskExecutorListener } from './task-executor.js';

/** @see WorkerPoolOptions.heartbeatIntervalMs */
export const DEFAULT_HEARTBEAT_INTERVAL_MS = 1000;
/** @see WorkerPoolOptions.heartbeatTimeoutMs */
export const DEFAULT_HEARTBEAT_TIMEOUT_MS = 30_000;

/** How a WorkerPool starts its workers, and what they load: the job as the job master planned it. */
export interface WorkerPoolOptions {
  readonly workers: number;
  readonly slotsPerWorker: number;
  readonly jobId: string;
  /** The job, as the job master loaded and planned it (workers plan it alike from its module). */
  readonly loaded: LoadedJob & { readonly moduleUrl: string };
  /** The job's arguments. */
  readonly args: readonly string[];
  readonly pipelined: ShuffleServiceFactory;
  readonly blocking: ShuffleServiceFactory;
  readonly listener: TaskExecutorListener;
  readonly cwd: string;
  /** Rebuilt in each worker from its reference. @defaultValue [] */
  readonly fileSystems?: readonly ExternalFileSystem[];
  /** The job's stream connectors, by reference: each worker rebuilds them. @defaultValue [] */
  readonly streamConnectors?: readonly StreamConnectorReference[];
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
  /** How long a worker's task waits for an approximate input's first registration (InProcessTaskExecutorOptions). @defaultValue DEFAULT_APPROXIMATE_RECONNECT_TIMEOUT_MS */
  readonly approximateReconnectTimeoutMs?: number;
  /** How long a worker may take to load the job and report ready. @defaultValue 60000 */
  readonly startTimeoutMs?: number;
  /** Processes forked ahead of time: used first (extra ones are stopped, missing ones forked). */
  readonly prestarted?: PrestartedWorkers;
  /**
   * Links each task a worker runs to the job's checkpoints (the job master's JobCheckpointing.forTask,
   * relayed over IPC: WorkerCheckpointRelay ↔ WorkerCheckpointing). @defaultValue none: no checkpoints
   */
  readonly checkpointing?: TaskCheckpointingProvider;
}
