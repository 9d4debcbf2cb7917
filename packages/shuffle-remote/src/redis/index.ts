// `@weft/shuffle-remote/redis`: the one Redis URL parser (redis://, rediss://, redis+sentinel://) and the
// connection helpers the shuffle's coordinator uses, for other packages that keep state in the same Redis
// (@weft/job-store's event log, @weft/cluster's executor registry), so every Redis use parses, connects,
// times out, redacts, waits for replicas and reconnects the same way.
export { type RedisEndpoint, type ReplicaAckPolicy, type SentinelAddress, DEFAULT_REPLICA_TIMEOUT_MS, DEFAULT_REPLICA_TRIES, isRedisUrl, parseRedisUrl, redactRedisUrl } from './redis-url.js';
export { type ConnectRedisOptions, connectRedis, connectionGeneration, createRedisClient, openRedisClient, quitRedis, redisClientOptions } from './connect-redis.js';
export { ConnectionChangedError, type ReplicatedWriteRequest, replicatedWrite } from './replicated-write.js';
export { RedisConnection, type RedisConnectionOptions } from '../coordinator/redis-connection.js';
export { checkSecret, MIN_SECRET_BYTES } from '../protocol/job-token.js';
