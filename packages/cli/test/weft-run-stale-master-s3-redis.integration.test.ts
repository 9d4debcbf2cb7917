// A stale job master on S3 (s3rver) + Redis (issue 11): the job event log and the partition metadata in
// Redis, partitions in S3. Run A is SIGSTOPped once its log says some task finished, run B (the same
// command) resumes under epoch 2 and is held mid-run while A is SIGCONTinued: A fails fenced, changing
// nothing, and B finishes with a clean run's bytes, having lost no partition to A.
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { createJobEventLog } from '@weft/job-store';
import { createTempDir, type RedisServer, type S3Server, startRedis, startS3Server, type TempDir } from '@weft/testkit';
import { weft } from './helpers/kill-and-resume.js';
import { descendants, readStat, waitFor } from './helpers/process-tree.js';
import { assertCleanResume, assertFencedExit, assertNoStaleEventAfterTakeover, start, until } from './helpers/stale-master.js';

const bin = fileURLToPath(new URL('../bin/weft.js', import.meta.url));
const terasort = fileURLToPath(new URL('../../../examples/terasort.ts', import.meta.url));

/** SIGSTOPs `pid` and returns once the kernel shows it stopped (Redis scripts are atomic: a stopped client holds no lock). */
async function stop(pid: number): Promise<void> {
  process.kill(pid, 'SIGSTOP');
  await waitFor(`process ${pid} stopped`, () => (readStat(pid)?.state === 'T' ? true : undefined), 10_000);
}

describe('weft run --job-id on S3 + Redis: a stale job master woken up while the newer run runs', () => {
  let s3: S3Server;
  let redis: RedisServer;
  let dir: TempDir;
  let env: NodeJS.ProcessEnv = {};
  before(async () => {
    [s3, redis, dir] = await Promise.all([startS3Server({ buckets: ['weft-stale'] }), startRedis({ persistent: false }), createTempDir('weft-stale-s3-')]);
    env = { ...process.env, AWS_ENDPOINT_URL_S3: s3.endpoint, AWS_REGION: s3.region, AWS_ACCESS_KEY_ID: s3.accessKeyId, AWS_SECRET_ACCESS_KEY: s3.secretAccessKey };
  });
  after(async () => {
    await Promise.allSettled([s3?.[Symbol.asyncDispose](), redis?.close(), dir?.remove()]);
  });

  it('fails the woken master fenced, and the newer run loses nothing: no failover, a clean run’s bytes, no epoch-1 event after epoch 2', async () => {
    const meta = `redis://${redis.host}:${redis.port}/0`;
    const common = ['--meta', meta, '--store', 's3://weft-stale/shuffle', '--parallelism', '2', '--workers', '2', '--json'];
    const records = ['--records', '200000'];
    const clean = await weft(bin, ['run', terasort, ...common, '--', ...records, '--output', join(dir.path, 'clean.txt')], dir.path, env);
    assert.equal(clean.code, 0, clean.stderr);
    const jobId = 'stale-s3';
    const args = ['run', terasort, '--job-id', jobId, ...common, '--', ...records, '--output', join(dir.path, 'out.txt')];
    await using log = await createJobEventLog(meta);
    const a = start(args, dir.path, env);
    const b = { current: undefined as ReturnType<typeof start> | undefined };
    try {
      await until('a task-finished event of run A', async () => {
        if (a.child.exitCode !== null) throw new Error('run A ended before it could be stopped');
        return (await log.readRun(jobId).catch(() => [])).some((e) => e.type === 'task-finished');
      });
      await stop(a.child.pid!);
      const descendantsOfA = descendants(a.child.pid!);
      const runB = start(args, dir.path, env);
      b.current = runB;
      await until('an event of run B', async () => {
        if (runB.child.exitCode !== null) throw new Error(`run B ended before it could be held: ${JSON.stringify(await runB.done)}`);
        return (await log.readRun(jobId).catch(() => [])).filter((e) => e.epoch === 2).length >= 2;
      });
      // B is held where it is while A wakes up and does whatever it does, so A acts in the middle of B's run
      await stop(runB.child.pid!);
      a.child.kill('SIGCONT');
      const outcomeA = await a.done;
      await new Promise((resolve) => setTimeout(resolve, 300)); // A's workers exit on their own
      runB.child.kill('SIGCONT');
      const outcomeB = await runB.done;
      assertFencedExit(outcomeA, descendantsOfA);
      assertCleanResume(outcomeB);
      assert.ok((await readFile(join(dir.path, 'out.txt'))).equals(await readFile(join(dir.path, 'clean.txt'))), 'the output equals a clean run’s, byte for byte');
      assertNoStaleEventAfterTakeover(await log.readRun(jobId));
    } finally {
      for (const child of [a.child, b.current?.child]) {
        child?.kill('SIGCONT');
        child?.kill('SIGKILL');
      }
    }
  });
});
