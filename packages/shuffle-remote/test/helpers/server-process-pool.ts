import type { ShuffleDescriptor } from '@weft/shuffle-api';
import { drain, emitAll, makeRecord, parseRecord, recordsOf } from '@weft/shuffle-api/testing';
import { type ShuffleServerClientOptions, type ShuffleServerServiceFactory, createShuffleServerServiceFactory } from '@weft/shuffle-remote/client';
import { type TempDir, createTempDir } from '@weft/testkit';
import { TEST_SECRET } from './server-cluster.js';
import { type ServerProcess, startServerProcess } from './server-process.js';

/**
 * A client factory for the servers registered in `redisUrl` under `keyPrefix`: no placement cache, two quick
 * retries (so a dead server fails a test in milliseconds). `options` override these.
 */
export function processPoolFactory(redisUrl: string, keyPrefix: string, options: ShuffleServerClientOptions = {}): ShuffleServerServiceFactory {
  return createShuffleServerServiceFactory({ redis: redisUrl, redisKeyPrefix: keyPrefix, secret: TEST_SECRET, placementRefreshMs: 0, retryAttempts: 2, retryInitialDelayMs: 5, retryMaxDelayMs: 20, ...options });
}

export interface ServerProcessPoolOptions {
  readonly redisUrl: string;
  /** The registry key prefix; the test picks one of its own. */
  readonly keyPrefix: string;
  /** How many server processes, started one after the other, each on a temp dir of its own. */
  readonly count: number;
  /** @defaultValue 60000 (a killed server's record stays live through a test) */
  readonly heartbeatTtlMs?: number;
  /** @defaultValue 'weft-ss-pool-' */
  readonly dirPrefix?: string;
}

/**
 * Real shuffle-server processes (SIGKILL, SIGSTOP reach the server itself) under one key prefix, heartbeat
 * every 100 ms. Disposing it continues stopped ones, kills every process it started and removes the dirs.
 */
export interface ServerProcessPool extends AsyncDisposable {
  readonly keyPrefix: string;
  readonly dirs: readonly TempDir[];
  /** Every process started, in order (restarts append). */
  readonly servers: readonly ServerProcess[];
  /** Starts a server (again) on `dir`: same directory, same server id. @defaultValue port 0 (a free one) */
  start(dir: TempDir, port?: number): Promise<ServerProcess>;
  /** processPoolFactory for this pool. */
  factory(options?: ShuffleServerClientOptions): ShuffleServerServiceFactory;
}

export async function startServerProcessPool(options: ServerProcessPoolOptions): Promise<ServerProcessPool> {
  const { redisUrl, keyPrefix } = options;
  const heartbeatTtlMs = options.heartbeatTtlMs ?? 60_000;
  const dirs: TempDir[] = [];
  const servers: ServerProcess[] = [];
  const start = async (dir: TempDir, port = 0): Promise<ServerProcess> => {
    const server = await startServerProcess({ dir: dir.path, port, secret: TEST_SECRET, redis: redisUrl, redisKeyPrefix: keyPrefix, heartbeatIntervalMs: 100, heartbeatTtlMs });
    servers.push(server);
    return server;
  };
  const dispose = async (): Promise<void> => {
    for (const server of servers) {
      if (server.child.exitCode === null && server.child.signalCode === null) server.child.kill('SIGCONT');
      await server.kill();
    }
    await Promise.all(dirs.map((d) => d.remove()));
  };
  try {
    for (let i = 0; i < options.count; i++) dirs.push(await createTempDir(options.dirPrefix ?? 'weft-ss-pool-'));
    for (const dir of dirs) await start(dir);
  } catch (error) {
    await dispose();
    throw error;
  }
  return { keyPrefix, dirs, servers, start, factory: (client = {}) => processPoolFactory(redisUrl, keyPrefix, client), [Symbol.asyncDispose]: dispose };
}

/** Writes `records` records (100 bytes each, alternating subpartitions 0 and 1) to the partition and commits it. */
export async function writePartition(factory: ShuffleServerServiceFactory, descriptor: ShuffleDescriptor, records: number): Promise<void> {
  const environment = factory.createShuffleEnvironment({ taskExecutorId: 'producer' as never });
  try {
    const writer = await environment.createResultPartitionWriter({ descriptor });
    await emitAll(writer, Array.from({ length: records }, (_, seq) => ({ subpartition: seq % 2, record: makeRecord(descriptor.partition.partitionIndex, seq % 2, seq, 100) })));
    await writer.finish();
    await writer.close();
  } finally {
    await environment.close();
  }
}

/** Reads subpartitions 0 and 1 of the partition; the sequence numbers of its records, sorted. */
export async function readPartition(factory: ShuffleServerServiceFactory, descriptor: ShuffleDescriptor): Promise<number[]> {
  const environment = factory.createShuffleEnvironment({ taskExecutorId: 'consumer' as never });
  try {
    const gate = await environment.createInputGate({ jobId: descriptor.jobId, inputs: [descriptor], subpartitions: { start: 0, end: 1 } });
    try {
      return (await drain(gate)).flatMap((items) => recordsOf(items).map((r) => parseRecord(r).seq)).sort((a, b) => a - b);
    } finally {
      await gate.close();
    }
  } finally {
    await environment.close();
  }
}
