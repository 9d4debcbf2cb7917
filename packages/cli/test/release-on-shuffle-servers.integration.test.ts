// Partitions released as the job goes, on a pool of two real `weft shuffle-server` processes found in a real
// Redis registry: once every region reading a partition finished, it is gone from its server — files and
// the committed index — while the job still runs.
import assert from 'node:assert/strict';
import { readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { runJob } from '@weft/engine';
import { createMemoryShuffleServiceFactory } from '@weft/shuffle-memory';
import { createShuffleServerServiceFactory } from '@weft/shuffle-remote/client';
import { type ShuffleServerPool, startShuffleServerPool } from '@weft/testkit';

const repo = fileURLToPath(new URL('../../..', import.meta.url));

describe('partitions released during the job on shuffle servers', () => {
  let pool: ShuffleServerPool;
  before(async () => {
    pool = await startShuffleServerPool({ count: 2 });
  });
  after(async () => {
    await pool?.close();
  });

  it('releases a partition on its server once its consumers finished, while the job still runs', async () => {
    const blocking = createShuffleServerServiceFactory({ redis: pool.redisUrl, secret: pool.secret });
    const partitionFiles = async (partitionId: string): Promise<number> => {
      const segment = encodeURIComponent(partitionId).replace(/[!'()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`).replace(/\./g, '%2E');
      let n = 0;
      for (const server of pool.servers) {
        const files = await readdir(server.dir, { recursive: true, withFileTypes: true }).catch(() => []);
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
