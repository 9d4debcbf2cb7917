export { createShuffleServerServiceFactory, type ShuffleServerServiceFactory } from './shuffle-server-service-factory.js';
export {
  DEFAULT_SHUFFLE_SERVER_CLIENT_OPTIONS,
  resolveShuffleServerClientOptions,
  type ResolvedShuffleServerClientOptions,
  type ShuffleServerClientOptions,
} from './client-options.js';
export { SHUFFLE_SERVER_SERVICE_ID, type ServerLocation, type ServerPartitionDetails } from './server-descriptor.js';
export { type ReplicationReport, ServerShuffleMaster } from './server-shuffle-master.js';
export { ServerShuffleEnvironment } from './server-shuffle-environment.js';
export { ShuffleServerClient, type AttemptTarget, type FetchRequest, type FetchResponse, type PushRequest, type RetryTimers } from './shuffle-server-client.js';
export { createJobToken } from '../protocol/job-token.js';
export type { CommittedPartition } from '../protocol/committed-partition.js';
export { ShuffleServerFaults, type ShuffleServerFaultsOptions } from './shuffle-server-faults.js';
export { SERVER_FAULT_POINTS, type ArmServerFaultRequest, type ServerFaultAction, type ServerFaultPoint } from '../coordinator/server-fault-points.js';
export type { ServerRecord } from '../coordinator/server-record.js';
export { type LiveServer, RedisServerRegistry, SUSPECT_TTL_MS } from '../coordinator/redis-server-registry.js';
export { DEFAULT_REGISTRY_KEY_PREFIX } from '../coordinator/redis-connection.js';
