// Partitions released as the job goes, on a pool of two real `weft shuffle-server` processes found in a real
// Redis registry: once every region reading a partition finished, it is gone from its server — files and
// the committed index — while the job still runs.
import assert from 'node:assert/strict';
import { type ChildProcess, spawn } from 'node:child_process';
import { readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { after, before, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { runJob } from '@weft/engine';
import { createMemoryShuffleServiceFactory } from '@weft/shuffle-memory';
import { createShuffleServerServiceFactory } from '@weft/shuffle-remote/client';
import { type RedisServer, type TempDir, createTempDir, startRedis } from '@weft/testkit';

const bin = fileURLToPath(new URL('../bin/weft.js', import.meta.url));
const repo = fileURLToPath(new URL('../../..', import.meta.url));
const SECRET = 'shuffle-servers-run-secret-0123456789';

async function startServer(redisUrl: string, dir: string): Promise<ChildProcess> {
  const child = spawn(process.execPath, [bin, 'shuffle-server', '--port', '0', '--dir', dir, '--redis', redisUrl, '--heartbeat-ms', '200'], {
    env: { ...process.env, WEFT_SHUFFLE_SECRET: SECRET },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stderr = '';
  child.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
  await new Promise<void>((resolve, reject) => {
    createInterface({ input: child.stdout! }).on('line', (line) => {
      if (/^listening on https?:\/\//.test(line)) resolve();
    });
    child.once('exit', (code) => reject(new Error(`weft shuffle-server exited (${code}) before listening:\n${stderr}`)));
  });
  return child;
}

describe('partitions released during the job on shuffle servers', () => {
  let redis: RedisServer;
  let dir: TempDir;
  const servers: ChildProcess[] = [];
  before(async () => {
    [redis, dir] = await Promise.all([startRedis({ persistent: false }), createTempDir('weft-release-servers-')]);
    servers.push(...(await Promise.all([startServer(redis.url, join(dir.path, 'a')), startServer(redis.url, join(dir.path, 'b'))])));
  });
  after(async () => {
    await Promise.allSettled(
      servers.map((child) => new Promise<void>((resolve) => (child.exitCode !== null ? resolve() : (child.once('exit', () => resolve()), child.kill('SIGTERM'))))),
    );
    await Promise.allSettled([redis?.close(), dir?.remove()]);
  });

  it('releases a partition on its server once its consumers finished, while the job still runs', async () => {
    const blocking = createShuffleServerServiceFactory({ redis: redis.url, secret: SECRET });
    const partitionFiles = async (partitionId: string): Promise<number> => {
      const segment = encodeURIComponent(partitionId).replace(/[!'()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`).replace(/\./g, '%2E');
      let n = 0;
      for (const server of ['a', 'b']) {
        const files = await readdir(join(dir.path, server), { recursive: true, withFileTypes: true }).catch(() => []);
        n += files.filter((e) => e.isFile() && join(e.parentPath ?? e.path, e.name).includes(`/${segment}/`)).length;
      }
      return n;
    };
    const seen: { listed: string[]; generatedFiles: number }[] = [];
    const result = await runJob({
      job: join(repo, 'examples', 'word-count.ts'),
      args: ['--lines', '5000'],
      parallelism: 2,
      executor: 'inprocess',
      slotsPerExecutor: 1,
      exchangeMode: 'ALL_EDGES_BLOCKING',
      shuffle: { pipelined: createMemoryShuffleServiceFactory(), blocking },
      faults: (context) => ({
        beforeDeploy: async (region) => {
          // the last region (top-words) runs once every count task finished: the generated lines are consumed
          if (region.deployment !== context.regions.length) return;
          await using master = blocking.createShuffleMaster();
          await master.start();
          // releases are not awaited by the scheduler: give the ones in flight a bounded while (this region waits meanwhile)
          const look = async (): Promise<{ listed: string[]; generatedFiles: number }> => ({
            listed: (await master.listPartitions(context.jobId as never)).map((p) => p.descriptor.partition.partitionId).sort(),
            generatedFiles: (await partitionFiles('generate-lines->count#0')) + (await partitionFiles('generate-lines->count#1')),
          });
          let now = await look();
          for (const until = Date.now() + 10_000; (now.generatedFiles > 0 || now.listed.some((id) => id.startsWith('generate-lines'))) && Date.now() < until; now = await look()) {
            await new Promise((resolve) => setTimeout(resolve, 50));
          }
          seen.push(now);
        },
      }),
    });
    assert.equal(result.status, 'succeeded', String(result.error?.stack));
    assert.deepEqual(seen, [{ listed: ['count->top-words#0', 'count->top-words#1'], generatedFiles: 0 }], 'only what top-words still reads is there');
    assert.equal(result.partitionsReleasedDuringJob, 4);
  });
});
