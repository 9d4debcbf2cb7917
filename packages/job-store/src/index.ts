// @weft/job-store: implementations of @weft/engine's JobEventLog — the fenced, durable, append-only log per
// job that a new job master resumes from. SQLite (the embedded default) and Redis (a Stream per job).

export * from './create-job-event-log.js';
export * from './sqlite-job-event-log.js';
export * from './redis-job-event-log.js';
export * from './job-event-log-options.js';
export { SqliteCheckpointStore } from './sqlite-checkpoint-store.js';
export { RedisCheckpointStore } from './redis-checkpoint-store.js';
export { createRedisStreamConnector, DEFAULT_REDIS_STREAM_CONNECTOR_OPTIONS, RedisStreamConnector, type RedisStreamConnectorOptions } from './redis-stream-connector.js';
export { DEFAULT_REDIS_STREAM_SINK_OPTIONS, redisStreamSink, type RedisStreamSinkOptions, redisStreamStagingKeys, redisStreamTransactionPrefix } from './redis-stream-sink.js';
