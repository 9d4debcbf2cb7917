export { BenchReport, type Figure, median, round } from './bench-report.js';
export { freePort } from './free-port.js';
export { createTempDir, type TempDir } from './temp-dir.js';
export { startRedis, type RedisServer, type StartRedisOptions } from './redis-server.js';
export { startS3Server, type S3Server, type StartS3ServerOptions } from './s3-server.js';
export { startShuffleServerPool, type PoolServer, type ShuffleServerPool, type StartShuffleServerPoolOptions } from './shuffle-server-pool.js';
export { startRedisSentinelGroup, type RedisSentinelGroup, type SentinelProcess, type StartRedisSentinelGroupOptions } from './redis-sentinel-group.js';
export { seededRandom } from './seeded-random.js';
export { ensurePromtool, promtoolProblems } from './promtool.js';
