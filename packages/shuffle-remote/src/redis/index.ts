// `@weft/shuffle-remote/redis`: the Redis connection helpers the shuffle's coordinator uses, for other
// packages that keep state in the same Redis (e.g. @weft/cluster's executor registry), so every Redis use
// connects, times out, redacts and reconnects the same way.
export { connectRedis, type ConnectRedisOptions, quitRedis, redactRedisUrl } from './connect-redis.js';
export { RedisConnection, type RedisConnectionOptions } from '../coordinator/redis-connection.js';
export { checkSecret, MIN_SECRET_BYTES } from '../protocol/job-token.js';
