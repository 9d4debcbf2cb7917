import { readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { ShuffleServerClient, createJobToken, resolveShuffleServerClientOptions } from '@weft/shuffle-remote/client';
import { type ShuffleServer, type ShuffleServerOptions, startShuffleServer } from '@weft/shuffle-remote/server';
import { type TempDir, createTempDir } from '@weft/testkit';
import { TEST_SECRET } from './server-cluster.js';

export interface TestServer extends AsyncDisposable {
  readonly server: ShuffleServer;
  readonly dir: TempDir;
  readonly client: ShuffleServerClient;
  token(jobId: string): string;
  /** Every file under the server's objects directory (relative paths). */
  objectFiles(): Promise<string[]>;
  /** Scrapes /metrics and returns the value of one sample (`name{labels}`), or undefined. */
  metric(sample: string): Promise<number | undefined>;
  close(): Promise<void>;
}

/** A standalone server (no Redis) on a fresh temp dir, plus a client for it. */
export async function startTestServer(options: Partial<ShuffleServerOptions> = {}, clientOptions: Parameters<typeof resolveShuffleServerClientOptions>[0] = {}): Promise<TestServer> {
  const dir = options.dir === undefined ? await createTempDir('weft-shuffle-server-test-') : undefined;
  const path = options.dir ?? dir!.path;
  let server: ShuffleServer;
  try {
    server = await startShuffleServer({ dir: path, secret: TEST_SECRET, ...options });
  } catch (error) {
    await dir?.remove();
    throw error;
  }
  const client = new ShuffleServerClient(resolveShuffleServerClientOptions({ servers: [server.url], retryInitialDelayMs: 5, ...clientOptions }));
  const close = async (): Promise<void> => {
    await client.close();
    await server.close();
    await dir?.remove();
  };
  const walk = async (root: string, prefix = ''): Promise<string[]> => {
    const out: string[] = [];
    for (const entry of await readdir(root, { withFileTypes: true }).catch(() => [])) {
      if (entry.isDirectory()) out.push(...(await walk(join(root, entry.name), `${prefix}${entry.name}/`)));
      else out.push(`${prefix}${entry.name}`);
    }
    return out;
  };
  return {
    server,
    dir: dir ?? { path, remove: async () => undefined, [Symbol.asyncDispose]: async () => undefined },
    client,
    token: (jobId) => createJobToken(Buffer.from(TEST_SECRET), jobId),
    objectFiles: () => walk(join(path, 'objects')),
    metric: async (sample) => {
      const text = await (await fetch(`${server.url}/metrics`)).text();
      const line = text.split('\n').find((l) => l.startsWith(`${sample} `));
      return line === undefined ? undefined : Number(line.slice(sample.length + 1));
    },
    close,
    [Symbol.asyncDispose]: close,
  };
}
