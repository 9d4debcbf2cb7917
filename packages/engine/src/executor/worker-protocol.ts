import type { PlanAdaptivity } from '../graph/adaptive-presets.js';
import type { ShuffleDescriptor, ShuffleLocation, ShuffleServiceReference } from '@weft/shuffle-api';
import type { ExchangeMode } from '../api/exchange-mode.js';
import type { ExternalFileSystemReference } from '../io/external-file-system.js';
import type { StreamConnectorReference } from '../io/stream-connector.js';
import type { SerializerName } from '../serialization/serializers.js';
import type { SerializedTaskError } from '../runtime/task-error-serialization.js';
import type { RegionDeployment, TaskDeployment } from '../runtime/task-deployment.js';
import type { CheckpointBarrierMode } from '../checkpoint/checkpoint-barrier-handler.js';
import type { TaskRestoreState, TaskSnapshot } from '../runtime/task-checkpointing.js';
import type { TaskEvent, TaskProgress } from '../runtime/task-events.js';

/** The first message a worker gets: what job to load and which shuffle factories to rebuild. */
export interface WorkerInitMessage {
  readonly type: 'init';
  readonly executorId: string;
  readonly slots: number;
  readonly jobId: string;
  readonly jobModuleUrl: string;
  readonly args: readonly string[];
  readonly parallelism: number;
  readonly exchangeMode: ExchangeMode;
  /** An adaptive plan's options and presets (JobPlan.adaptive): the worker plans it the same way. */
  readonly adaptive?: PlanAdaptivity;
  /** The plan the job master built; the worker refuses to run a different one. */
  readonly fingerprint: string;
  readonly pipelined: ShuffleServiceReference;
  readonly blocking: ShuffleServiceReference;
  readonly cwd: string;
  /** The job's external file systems, rebuilt by the worker. */
  readonly fileSystems: readonly ExternalFileSystemReference[];
  /** Where the job's stream sources read (RunJobOptions.streamConnectors), rebuilt by the worker. @defaultValue [] */
  readonly streamConnectors?: readonly StreamConnectorReference[];
  readonly serializer: SerializerName;
  readonly heartbeatIntervalMs: number;
  readonly progressIntervalMs: number;
  /** How long a task waits for an approximate input's first registration (RegionRunnerOptions). @defaultValue its default */
  readonly approximateReconnectTimeoutMs?: number;
  /**
   * Where other hosts reach this worker's host, set by a cluster task executor for its workers (never by
   * a job master): the pipelined environment listens and advertises there. @defaultValue the shuffle's options
   */
  readonly peerAddress?: { readonly listenHost: string; readonly advertisedHost: string };
  /**
   * The job takes checkpoints: each task the worker starts asks the job master for its TaskCheckpointing
   * (`checkpoint-attach`). @defaultValue false: tasks run without checkpoints
   */
  readonly checkpointed?: boolean;
}

/**
 * Job master → worker, for a task attempt of a checkpointed job (WorkerCheckpointRelay → WorkerCheckpointing):
 * the answer to its `checkpoint-attach` (its barrier mode and the state it starts from, the snapshot bytes
 * themselves), the triggers of a source subscribed to them, completed checkpoints for an attempt
 * subscribed to them, and the answer to its `checkpoint-await-final`. A worker ignores one for an attempt
 * it no longer runs.
 */
export type ToWorkerCheckpointMessage =
  | { readonly type: 'checkpoint-attached'; readonly attemptId: string; readonly mode: CheckpointBarrierMode; readonly restore: TaskRestoreState | undefined }
  | { readonly type: 'checkpoint-attach-failed'; readonly attemptId: string; readonly error: SerializedTaskError }
  | { readonly type: 'checkpoint-trigger'; readonly attemptId: string; readonly checkpointId: number; readonly timestampMs: number }
  | { readonly type: 'checkpoint-complete'; readonly attemptId: string; readonly checkpointId: number }
  | { readonly type: 'checkpoint-final'; readonly attemptId: string; readonly checkpointId: number | undefined };

/**
 * Worker → job master, for a task attempt of a checkpointed job: its request for its TaskCheckpointing
 * when it starts, its (un)subscriptions to triggers and completions, its wait for the final checkpoint,
 * and its acknowledgements (with the snapshot bytes) and declines. The job master ignores one for an
 * attempt that ended or whose worker was lost.
 */
export type FromWorkerCheckpointMessage =
  | { readonly type: 'checkpoint-attach'; readonly task: TaskDeployment }
  | { readonly type: 'checkpoint-listen'; readonly attemptId: string; readonly to: 'trigger' | 'complete'; readonly listening: boolean }
  | { readonly type: 'checkpoint-await-final'; readonly attemptId: string }
  | { readonly type: 'checkpoint-acknowledge'; readonly attemptId: string; readonly snapshot: TaskSnapshot }
  | { readonly type: 'checkpoint-decline'; readonly attemptId: string; readonly checkpointId: number; readonly message: string; readonly reason: 'TASK_FAILURE' | 'DECLINED' };

const TO_WORKER_CHECKPOINT_TYPES: ReadonlySet<string> = new Set(['checkpoint-attached', 'checkpoint-attach-failed', 'checkpoint-trigger', 'checkpoint-complete', 'checkpoint-final']);
const FROM_WORKER_CHECKPOINT_TYPES: ReadonlySet<string> = new Set(['checkpoint-attach', 'checkpoint-listen', 'checkpoint-await-final', 'checkpoint-acknowledge', 'checkpoint-decline']);

/** Whether a message to a worker is one of its checkpoint link's (handled by WorkerCheckpointing). */
export function isToWorkerCheckpointMessage(message: { readonly type: string }): message is ToWorkerCheckpointMessage {
  return TO_WORKER_CHECKPOINT_TYPES.has(message.type);
}

/** Whether a message from a worker is one of its checkpoint link's (handled by WorkerCheckpointRelay). */
export function isFromWorkerCheckpointMessage(message: { readonly type: string }): message is FromWorkerCheckpointMessage {
  return FROM_WORKER_CHECKPOINT_TYPES.has(message.type);
}

/** Job master → worker, over the IPC channel (structured clone). */
export type ToWorkerMessage =
  | WorkerInitMessage
  | { readonly type: 'deploy'; readonly deployment: RegionDeployment }
  | { readonly type: 'cancel'; readonly attemptIds: readonly string[]; readonly reason: string }
  /** New attempts of approximate partitions the job master registered (TaskExecutor.updatePartitionInfo). */
  | { readonly type: 'update-partition-info'; readonly descriptors: readonly ShuffleDescriptor[] }
  | { readonly type: 'shutdown' }
  | ToWorkerCheckpointMessage;

/** Worker → job master. */
export type FromWorkerMessage =
  /** Loaded the job; `shuffleLocation`: where its pipelined shuffle serves partitions to other executors, if it does. */
  | { readonly type: 'ready'; readonly shuffleLocation?: ShuffleLocation }
  | { readonly type: 'init-failed'; readonly error: SerializedTaskError }
  | { readonly type: 'task-event'; readonly event: TaskEvent }
  | { readonly type: 'heartbeat' }
  | { readonly type: 'progress'; readonly tasks: readonly TaskProgress[] }
  | { readonly type: 'log'; readonly level: 'info' | 'warn' | 'error'; readonly fields: Record<string, unknown>; readonly message: string }
  | FromWorkerCheckpointMessage;
