// @weft/engine: planning (topology, execution expansion, pipelined regions, failover, key groups, restart
// strategies), then the runtime (job API, job planning, serialization, task executors, job master).

export * from './errors/error-codes.js';
export * from './errors/engine-error.js';

export type * from './topology/job-topology.js';
export { defaultEdgeId, MAX_PARALLELISM } from './topology/job-topology.js';
export * from './topology/validate-topology.js';

export * from './execution/execution-topology.js';

export * from './regions/pipelined-regions.js';
export * from './regions/strongly-connected-components.js';
export * from './regions/disjoint-set.js';

export * from './failover/failover-strategy.js';
export * from './failover/create-failover-strategy.js';
export * from './failover/restart-pipelined-region-failover-strategy.js';
export * from './failover/restart-all-failover-strategy.js';
export * from './failover/restart-individual-failover-strategy.js';

export * from './keygroups/java-hash-code.js';
export * from './keygroups/murmur-hash.js';
export * from './keygroups/key-group-range-assignment.js';

export type * from './restart/restart-backoff-time-strategy.js';
export { DEFAULT_RESTART_STRATEGY_OPTIONS } from './restart/restart-backoff-time-strategy.js';
export * from './restart/create-restart-backoff-time-strategy.js';
export * from './restart/fixed-delay-restart-backoff-time-strategy.js';
export * from './restart/failure-rate-restart-backoff-time-strategy.js';
export * from './restart/exponential-delay-restart-backoff-time-strategy.js';
export * from './restart/no-restart-backoff-time-strategy.js';

// ---- adaptive batch: parallelism and input ranges decided from the bytes producers wrote (contract 6) ----
export type * from './adaptive/parallelism-and-input-infos.js';
export { DEFAULT_ADAPTIVE_BATCH_OPTIONS, MAX_SUBPARTITIONS_PER_TASK } from './adaptive/parallelism-and-input-infos.js';
export { decideParallelismAndInputInfos } from './adaptive/decide-parallelism-and-input-infos.js';
export { type AdaptiveBatchOptions, DEFAULT_SKEWED_JOIN_OPTIONS, type ResolvedAdaptiveBatchOptions, resolveAdaptiveBatchOptions } from './adaptive/adaptive-batch-options.js';
export { medianBytes, type SkewedSubpartitionSplit, type SkewSplitRequest, type SkewSplitResult, splitSkewedSubpartitions } from './adaptive/split-skewed-subpartitions.js';
// ---- checkpoint barriers: aligned exactly-once and at-least-once handlers (contract 6) ----
export type * from './checkpoint/checkpoint-barrier-handler.js';
export { createCheckpointBarrierHandler } from './checkpoint/create-checkpoint-barrier-handler.js';
export { MAX_CHECKPOINTS_TO_TRACK } from './checkpoint/checkpoint-barrier-tracker.js';
export { CheckpointCoordinator } from './checkpoint/checkpoint-coordinator.js';
export type { CheckpointCoordinatorOptions, CheckpointFailureReason, CheckpointTimers } from './checkpoint/checkpoint-coordinator-options.js';
export { type CheckpointStore, type CompletedCheckpoint, InMemoryCheckpointStore, type TaskStateHandle } from './checkpoint/checkpoint-store.js';
// ---- state: keyed state by key group and operator list state, snapshots that restore at another parallelism ----
export { type CheckpointStorage, InMemoryCheckpointStorage } from './checkpoint/checkpoint-storage.js';
export type { CheckpointingMode, CheckpointingOptions } from './checkpoint/checkpointing-options.js';
export { CHECKPOINT_RETENTIONS, type CheckpointedJobEnd, type CheckpointRetention, DEFAULT_CHECKPOINT_RETENTION, discardsCheckpointsAtEnd, isCheckpointRetention } from './checkpoint/checkpoint-retention.js';
export { type DiscardedCheckpoints, discardJobCheckpoints, type DiscardJobCheckpointsRequest, snapshotKeysOf } from './checkpoint/discard-job-checkpoints.js';
export { checkpointIdOfKey, checkpointJobIdsOf, checkpointPrefix, jobCheckpointsPrefix, orphanedCheckpointKeys } from './checkpoint/checkpoint-keys.js';
export type { CheckpointSummary, SnapshotHandle } from './checkpoint/job-checkpointing.js';
export type { ApproximateRecoveryRecord } from './job-master/approximate-recoveries.js';
export type { FailoverResume } from './job-master/failover-resumes.js';
export { DEFAULT_APPROXIMATE_RECONNECT_TIMEOUT_MS } from './executor/region-runner.js';
export type * from './state/keyed-state.js';
export { KeyedStateBackend, type KeyedStateBackendOptions, type KeyedStateRestore } from './state/keyed-state-backend.js';
export { OperatorStateBackend, type OperatorStateDistribution, type OperatorStateRestore } from './state/operator-state-backend.js';

// ---- runtime: job API, planning of jobs, serialization, task executors, job master ----
export * from './api/define-job.js';
export * from './api/exchange-mode.js';
export type * from './api/functions.js';
export * from './api/job-args.js';
export * from './api/job-context.js';
export * from './api/data-set.js';
export type * from './api/two-phase-commit-sink.js';
export { fileCommitSink, type FileCommitSinkOptions, IN_PROGRESS_DIR, inProgressPrefix } from './sinks/file-commit-sink.js';
export { abortMarkedTransaction, normalizeExternalDir } from './sinks/external-file-commit-sink.js';
export * from './api/keyed-data-set.js';
export * from './api/windowed-data-set.js';
export * from './api/watermark-strategy.js';
export * from './windows/time-window.js';
export * from './windows/window-assigner.js';
export * from './windows/bounded-out-of-orderness-watermarks.js';
export * from './windows/status-watermark-valve.js';
export * from './windows/watermark-event.js';
export { splitWords } from './api/split-words.js';
export type { JoinType, Partitioning, OperatorKind } from './api/logical-graph.js';

export type * from './graph/job-plan.js';
export * from './graph/build-job-plan.js';
export * from './graph/load-job.js';
export { checkPlanRunnable } from './job-master/check-plan-runnable.js';

export type * from './serialization/record-serializer.js';
export * from './serialization/default-record-serializer.js';
export * from './serialization/json-record-serializer.js';
export * from './serialization/serializers.js';

export { keyHashCode } from './runtime/key-hash.js';
export { compareKeys } from './runtime/key-compare.js';
export type * from './runtime/task-deployment.js';
export type * from './runtime/task-events.js';

export type * from './executor/task-executor.js';
export * from './executor/task-executor-provider.js';
export type * from './executor/worker-protocol.js';
export { isFromWorkerCheckpointMessage, isToWorkerCheckpointMessage } from './executor/worker-protocol.js';
export { WorkerProcessTaskExecutor, type WorkerProcessOptions } from './executor/worker-process-task-executor.js';
export { WorkerCheckpointRelay, type WorkerCheckpointRelayOptions } from './executor/worker-checkpoint-relay.js';
export { WorkerCheckpointing } from './executor/worker-checkpointing.js';
export type { OperatorStateSnapshot, TaskCheckpointing, TaskCheckpointingProvider, TaskRestoreState, TaskSnapshot } from './runtime/task-checkpointing.js';
export { defaultExecArgv as defaultWorkerExecArgv } from './executor/worker-process.js';
export { InProcessTaskExecutor, type InProcessTaskExecutorOptions } from './executor/in-process-task-executor.js';
export { rebuildShuffleFactory } from './executor/rebuild-shuffle-factory.js';
export { rebuildFileSystem } from './executor/rebuild-file-system.js';
export { serializeTaskError, deserializeTaskError, type SerializedTaskError } from './runtime/task-error-serialization.js';
export { DEFAULT_HEARTBEAT_INTERVAL_MS, DEFAULT_HEARTBEAT_TIMEOUT_MS } from './executor/worker-pool-options.js';
export { prestartWorkers, PrestartedWorkers, type PrestartWorkersOptions } from './executor/prestarted-workers.js';

export type * from './job-master/job-progress.js';
export type * from './job-master/failover-record.js';
export type { DeploymentLatencySummary } from './job-master/deployment-latencies.js';
export type * from './faults/fault-injector.js';
export { DEFAULT_CANCEL_TIMEOUT_MS } from './job-master/job-master.js';
export * from './job-master/job-events.js';
export * from './job-master/run-job.js';
export type { RunJobOptions } from './job-master/run-job-options.js';
export type { JobResult } from './job-master/job-result.js';
export { jobModuleHash } from './job-master/job-module-hash.js';

// ---- the job event log the engine is handed (implementations: @weft/job-store) ----
export type * from './event-log/job-event-log.js';
export { JOB_EVENT_FORMAT_VERSION, LEASE_RENEW_INTERVAL_MS, PROGRESS_PUBLISH_INTERVAL_MS } from './event-log/job-event-log.js';
export * from './event-log/summarize-job-run.js';

// ---- where <scheme>:// job inputs and outputs live (implementations are handed in by the caller, e.g. the CLI's S3 one) ----
export type * from './io/external-file-system.js';
export type { StreamConnector, StreamConnectorProvider, StreamConnectorReference, StreamEntry, StreamReader, StreamReaderRequest } from './io/stream-connector.js';
export { sourceUnavailable, redactSourceUrl } from './operators/stream-source.js';
export { DIRECTORY_FILES_STATE, directoryFileOwner, isVisibleInputName } from './operators/directory-source.js';
export { DEFAULT_TASK_MEMORY_FRACTION, MemoryConsumer, MemoryManager, MIN_TASK_MEMORY_BYTES, checkTaskMemoryBytes, defaultTaskMemoryBytes } from './memory/memory-manager.js';
export { createTaskMemory, type TaskMemory, type TaskMemoryOptions } from './memory/task-memory.js';
export { jobSpillPrefix } from './memory/spill-directory.js';
