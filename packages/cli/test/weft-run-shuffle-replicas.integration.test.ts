// `weft run --shuffle-replicas 2`: a job's blocking partitions on two real `weft shuffle-server` processes
// of different "hosts" (127.0.0.2, 127.0.0.3); one server SIGKILLed while the job runs costs no task.
import assert from 'node:assert/strict';
import { readFile, readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { type ShuffleServerPool, type TempDir, createTempDir, startShuffleServerPool } from '@weft/testkit';
import { type Running, start } from './helpers/stale-master.js';

const repo = fileURLToPath(new URL('../../..', import.meta.url));
const SECRET = 'shuffle-replicas-run-secret-0123456789';
const env = { ...process.env, WEFT_SHUFFLE_SECRET: SECRET };

/** `weft <args>` from the repository, its job master the spawned process (helpers/stale-master.ts's `start`). */
const weft = (args: readonly string[]): Running => start(args, repo, env);

async function dataObjects(dir: string): Promise<number> {
  const entries = await readdir(dir, { recursive: true, withFileTypes: true }).catch(() => []);
  return entries.filter((e) => e.isFile() && e.name.endsWith('.wsm')).length;
}

describe('weft run --shuffle-replicas 2', () => {
  let pool: ShuffleServerPool;
  let dir: TempDir;
  before(async () => {
    // the pool's servers run without the bin shim, so a SIGKILL reaches the server itself; hosts 127.0.0.2 and 127.0.0.3
    [pool, dir] = await Promise.all([startShuffleServerPool({ count: 2, secret: SECRET }), createTempDir('weft-run-replicas-')]);
  });
  after(async () => {
    await Promise.allSettled([pool?.close(), dir?.remove()]);
  });

  it('sorts exactly, re-running no task, when one of the two servers is SIGKILLed while the job runs', async () => {
    const job = (output: string) => ['run', 'examples/terasort.ts', '--parallelism', '3', '--workers', '2', '--shuffle-servers', pool.redisUrl, '--shuffle-replicas', '2', '--json', '--', '--records', '200000', '--output', output];
    const clean = await weft(job(join(dir.path, 'clean.txt'))).done;
    assert.equal(clean.code, 0, clean.stderr);
    assert.deepEqual((JSON.parse(clean.stdout) as { shuffleReplicas: unknown }).shuffleReplicas, { requested: 2, used: 2, liveServers: 2, sameHost: false });

    const faulty = weft(job(join(dir.path, 'faulty.txt')));
    // once the job has pushed a partition to server a, kill it (the job may be anywhere past that point)
    while ((await dataObjects(pool.servers[0]!.dir)) === 0 && faulty.child.exitCode === null) await new Promise((resolve) => setTimeout(resolve, 20));
    const running = faulty.child.exitCode === null;
    await pool.servers[0]!.kill();
    const run = await faulty.done;
    assert.ok(running, 'the server died while the job ran');
    assert.equal(run.code, 0, run.stderr);
    const summary = JSON.parse(run.stdout) as { restarts: number; failures: number; attempts: number; tasks: number };
    assert.equal(summary.failures, 0, `no task failed: ${run.stderr}`);
    assert.equal(summary.restarts, 0);
    assert.equal(summary.attempts, summary.tasks, 'one attempt per task');
    assert.ok((await readFile(join(dir.path, 'faulty.txt'))).equals(await readFile(join(dir.path, 'clean.txt'))), 'the output is byte for byte the clean run\'s');
  });
});
