// @weft/shuffle-remote/redis: the one Redis URL parser and connection helpers, shared with @weft/job-store.
export { type RedisEndpoint, type ReplicaAckPolicy, type SentinelAddress, DEFAULT_REPLICA_TIMEOUT_MS, DEFAULT_REPLICA_TRIES, isRedisUrl, parseRedisUrl, redactRedisUrl } from './redis-url.js';
export { type ConnectRedisOptions, connectRedis, connectionGeneration, createRedisClient, quitRedis, redisClientOptions } from './connect-redis.js';
export { ConnectionChangedError, type ReplicatedWriteRequest, replicatedWrite } from './replicated-write.js';
