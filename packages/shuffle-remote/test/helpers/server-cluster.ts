import type { ConformanceHarness } from '@weft/shuffle-api/testing';
import { type ShuffleServerClientOptions, type ShuffleServerServiceFactory, createShuffleServerServiceFactory } from '@weft/shuffle-remote/client';
import { type ShuffleServer, type ShuffleServerOptions, startShuffleServer } from '@weft/shuffle-remote/server';
import { type TempDir, createTempDir } from '@weft/testkit';
import { factoryHarness } from './factory-harness.js';

export const TEST_SECRET = 'test-secret-0123456789abcdef';

let clusters = 0;

export interface ServerCluster extends AsyncDisposable {
  readonly servers: ShuffleServer[];
  readonly dirs: TempDir[];
  /** The registry key prefix of this cluster (unique per cluster). */
  readonly keyPrefix: string;
  readonly redisUrl: string;
  /** A client factory for this cluster (registry mode). */
  factory(options?: ShuffleServerClientOptions): ShuffleServerServiceFactory;
  /** Starts one more server (its own temp dir) in the cluster. */
  addServer(options?: Partial<ShuffleServerOptions>): Promise<ShuffleServer>;
  close(): Promise<void>;
}

/** `count` shuffle servers in-process, registered in `redisUrl` under a fresh key prefix. */
export async function startServerCluster(input: {
  readonly redisUrl: string;
  readonly count: number;
  readonly server?: Partial<ShuffleServerOptions>;
}): Promise<ServerCluster> {
  const keyPrefix = `weft-test-ss-${process.pid}-${++clusters}:`;
  const servers: ShuffleServer[] = [];
  const dirs: TempDir[] = [];
  const addServer = async (options: Partial<ShuffleServerOptions> = {}): Promise<ShuffleServer> => {
    const dir = await createTempDir('weft-shuffle-server-');
    dirs.push(dir);
    const server = await startShuffleServer({
      dir: dir.path,
      secret: TEST_SECRET,
      redis: input.redisUrl,
      redisKeyPrefix: keyPrefix,
      heartbeatIntervalMs: 200,
      heartbeatTtlMs: 1_000,
      ...input.server,
      ...options,
    });
    servers.push(server);
    return server;
  };
  let closed: Promise<void> | undefined;
  const close = (): Promise<void> =>
    (closed ??= (async () => {
      await Promise.allSettled(servers.map((s) => s.close()));
      await Promise.allSettled(dirs.map((d) => d.remove()));
    })());
  try {
    for (let i = 0; i < input.count; i++) await addServer();
  } catch (error) {
    await close();
    throw error;
  }
  return {
    servers,
    dirs,
    keyPrefix,
    redisUrl: input.redisUrl,
    factory: (options = {}) =>
      createShuffleServerServiceFactory({ redis: input.redisUrl, redisKeyPrefix: keyPrefix, secret: TEST_SECRET, placementRefreshMs: 0, ...options }),
    addServer,
    close,
    [Symbol.asyncDispose]: close,
  };
}

/** A conformance harness over a cluster: master, producer and consumer environments from one factory. */
export function clusterHarness(cluster: ServerCluster, options: ShuffleServerClientOptions = {}, onClose?: () => Promise<void>): Promise<ConformanceHarness> {
  return factoryHarness(cluster.factory(options), onClose);
}
