// @weft/cluster: cluster mode (docs/cluster.md). Task executors on many hosts register in Redis
// (TaskExecutorService, `weft task-executor`); a job master takes them as an engine TaskExecutorProvider
// (ClusterExecutorProvider, `weft run --cluster`), talking to each over a control connection whose address
// the registry holds. The engine never imports this package.
export { ClusterExecutorProvider, type ClusterExecutorProviderOptions, type RefusedExecutor } from './cluster-executor-provider.js';
export { TaskExecutorService } from './task-executor-service.js';
export { DEFAULT_TASK_EXECUTOR_SERVICE_OPTIONS, type TaskExecutorServiceOptions } from './task-executor-service-options.js';
export { RedisExecutorRegistry, DEFAULT_CLUSTER_KEY_PREFIX } from './redis-executor-registry.js';
export type { ExecutorRecord } from './executor-record.js';
export { CONTROL_UPGRADE, type ExecutorInitMessage, type FromExecutorMessage, type ToExecutorMessage } from './control-protocol.js';
export { ControlSocket, MAX_FRAME_BYTES } from './control-socket.js';
export { openControlConnection, type MasterConnection } from './open-control-connection.js';
export { signDeployment, verifyDeployment } from './deployment-signature.js';
export { bundleJobModule, type JobBundle } from './job-bundle.js';
export { WEFT_VERSION } from './weft-version.js';
