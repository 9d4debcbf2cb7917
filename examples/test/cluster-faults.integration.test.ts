// Cluster mode under faults (docs/cluster.md): executors SIGKILLed and SIGTERMed mid-job, one started
// mid-job, a forged deployment, an executor of another weft version, and no executor at all. Real
// redis-server, s3rver and `weft task-executor` processes on their own loopback addresses.
import assert from 'node:assert/strict';
import { mkdir, readdir, readFile, writeFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { pathToFileURL } from 'node:url';
import { bundleJobModule, type ExecutorInitMessage, openControlConnection, RedisExecutorRegistry, signDeployment, WEFT_VERSION } from '@weft/cluster';
import { createMemoryShuffleServiceFactory } from '@weft/shuffle-memory';
import { type ClusterExecutor, root, SECRET, TestCluster } from './support/cluster-fixture.js';
import { slowCountReference } from './support/slow-count-job.js';

interface Summary {
  status: string;
  failures: number;
  failovers: unknown[];
  cluster: { executors: { id: string }[]; refused: { id: string; reason: string }[] };
  executor: { kind: string; executors: number; slots: number };
  executorsLost: { taskExecutorId: string; reason: string }[];
}

const RECORDS = 4500;
const RESTART = ['--restart-strategy', 'fixed-delay', '--restart-attempts', '5', '--restart-delay', '100'];

function parseCounts(text: string): Map<string, number> {
  return new Map(text.split('\n').filter((l) => l !== '').map((l) => [l.slice(0, l.indexOf('\t')), Number(l.slice(l.indexOf('\t') + 1))] as const));
}

async function waitFor<T>(what: string, probe: () => Promise<T | undefined>, timeoutMs = 60_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

describe('weft run --cluster under faults', () => {
  let cluster: TestCluster;
  let runs = 0;
  before(async () => {
    cluster = await TestCluster.start();
    await Promise.all(['127.0.0.2', '127.0.0.3', '127.0.0.4'].map((host) => cluster.startExecutor(host)));
  });
  after(async () => {
    await cluster?.[Symbol.asyncDispose]();
  });

  /** Runs the slow job; `whileRunning` gets the executor running its first task (by its marker) and may act on it. */
  async function slowRun(whileRunning: (executor: ClusterExecutor, markers: string) => Promise<void>, args: readonly string[] = []): Promise<{ summary: Summary; output: string; markers: string }> {
    const n = ++runs;
    const markers = join(cluster.dir, `markers-${n}`);
    await mkdir(markers);
    const running = cluster.run(join('test', 'support', 'slow-count-job.ts'), ['--parallelism', '3', ...RESTART, ...args], ['--records', String(RECORDS), '--wait-ms', '1', '--markers', markers, '--output', `slow-${n}.tsv`]);
    const executor = await waitFor('a task to run', async () => {
      const pids = (await readdir(markers)).map((name) => Number(name.split('-')[0]));
      return cluster.executors.find((e) => e.child.exitCode === null && pids.includes(e.child.pid as number));
    });
    await whileRunning(executor, markers);
    const run = await running;
    assert.equal(run.code, 0, run.stderr);
    return { summary: JSON.parse(run.stdout) as Summary, output: await readFile(join(cluster.dir, `slow-${n}.tsv`), 'utf8'), markers };
  }

  it('a worker process of an executor SIGKILLed mid-job fails its task over; the executor lives on, registered, and the output is exact', async () => {
    let host: ClusterExecutor | undefined;
    let workerPid = 0;
    const { summary, output } = await slowRun(async (executor, markers) => {
      host = executor;
      const marker = (await readdir(markers)).find((name) => name.startsWith(`${executor.child.pid}-`)) as string;
      workerPid = Number(marker.split('-')[1]);
      assert.notEqual(workerPid, executor.child.pid, 'the task runs in a worker process, not in the executor');
      process.kill(workerPid, 'SIGKILL');
    });
    assert.equal(summary.status, 'succeeded');
    assert.deepEqual(parseCounts(output), slowCountReference(RECORDS));
    assert.ok(summary.failures >= 1, 'the killed worker’s task failed over');
    assert.ok(!summary.executorsLost.some((l) => l.taskExecutorId.startsWith(`${host?.id}~`)), `the executor was not lost: ${JSON.stringify(summary.executorsLost)}`);
    assert.equal(host?.child.exitCode, null, 'the executor process still runs');
    assert.match(host?.stderr() ?? '', new RegExp(`worker process was lost`), 'it says it replaced the worker');
    const registry = new RedisExecutorRegistry({ url: cluster.clusterUrl });
    await registry.start();
    const live = await registry.listLive();
    await registry.close();
    assert.ok(live.some((r) => r.id === host?.id), 'it is still registered');
  });

  it('an executor SIGKILLed mid-job is lost, its tasks fail over, and the output is exact', async () => {
    let killed: ClusterExecutor | undefined;
    const { summary, output } = await slowRun(async (executor) => {
      killed = executor;
      executor.child.kill('SIGKILL');
    });
    assert.equal(summary.status, 'succeeded');
    assert.deepEqual(parseCounts(output), slowCountReference(RECORDS));
    assert.ok(summary.executorsLost.some((l) => l.taskExecutorId.startsWith(`${killed?.id}~`)), `the killed executor is listed lost: ${JSON.stringify(summary.executorsLost)}`);
    assert.ok(summary.failures >= 1, 'its running task failed over');
  });

  it('an executor SIGTERMed mid-job lets its tasks finish, deregisters and exits 0; nothing fails', async () => {
    let stopped: ClusterExecutor | undefined;
    const { summary, output } = await slowRun(async (executor) => {
      stopped = executor;
      executor.child.kill('SIGTERM');
    });
    assert.equal(summary.status, 'succeeded');
    assert.deepEqual(parseCounts(output), slowCountReference(RECORDS));
    assert.equal(summary.failures, 0, `its running task finished: no failover (${JSON.stringify(summary.failovers)})`);
    assert.deepEqual(await stopped?.exited(), { code: 0, signal: null });
    const registry = new RedisExecutorRegistry({ url: cluster.clusterUrl });
    await registry.start();
    const live = await registry.listLive();
    await registry.close();
    assert.ok(!live.some((r) => r.id === stopped?.id), 'it deregistered');
  });

  it('an executor started mid-job gets work', async () => {
    assert.equal(cluster.executors.filter((e) => e.child.exitCode === null && e.child.signalCode === null).length, 1, 'one executor (one slot) is left');
    let joined: ClusterExecutor | undefined;
    const { summary, output, markers } = await slowRun(async () => {
      joined = await cluster.startExecutor('127.0.0.5');
    });
    assert.equal(summary.status, 'succeeded');
    assert.deepEqual(parseCounts(output), slowCountReference(RECORDS));
    assert.ok(summary.cluster.executors.some((e) => e.id.startsWith(`${joined?.id}~`)), 'it joined the job');
    assert.ok((await readdir(markers)).some((m) => m.startsWith(`${joined?.child.pid}-`)), 'and ran a task of it');
    assert.equal(summary.executor.executors, summary.cluster.executors.length, 'the summary counts the executor that joined mid-job');
  });

  it('an executor SIGTERMed whose drain times out with a task still running: the task fails over, the job succeeds, the executor exits 0', async () => {
    const drainer = await cluster.startExecutor('127.0.0.6', ['--slots', '3', '--drain-timeout-ms', '300']);
    const { summary, output } = await slowRun(async (_first, markers) => {
      // the executor with the most free slots takes the first regions: wait until it runs one, then stop it
      await waitFor('a task on the draining executor', async () => ((await readdir(markers)).some((m) => m.startsWith(`${drainer.child.pid}-`)) ? true : undefined));
      drainer.child.kill('SIGTERM');
    });
    assert.equal(summary.status, 'succeeded');
    assert.deepEqual(parseCounts(output), slowCountReference(RECORDS));
    assert.ok(summary.failures >= 1, `the task cancelled by the drain failed over (${JSON.stringify(summary.failovers)})`);
    assert.deepEqual(await drainer.exited(), { code: 0, signal: null });
    assert.doesNotMatch(drainer.stderr(), /NodeVersionSupportWarning/, 'no AWS SDK warning on Node 20');
  });

  it('refuses a forged deployment and runs nothing of it; the same one signed with the secret runs', async () => {
    const executor = cluster.executors.find((e) => e.child.exitCode === null && e.child.signalCode === null) as ClusterExecutor;
    const marker = join(cluster.dir, 'forged-ran');
    const module = join(cluster.dir, 'forged-job.ts');
    await writeFile(module, `import { writeFileSync } from 'node:fs';\nimport { defineJob } from '@weft/engine';\nwriteFileSync(${JSON.stringify(marker)}, 'ran');\nexport default defineJob((ctx) => { ctx.range(0, 1).collect('x'); });\n`);
    const bundle = await bundleJobModule(pathToFileURL(module).href);
    const registry = new RedisExecutorRegistry({ url: cluster.clusterUrl });
    await registry.start();
    await registry.putBundle(bundle.sha256, bundle.code, 60_000);
    const advertisedUrl = (await registry.listLive()).find((r) => r.id === executor.id)?.advertisedUrl as string;
    await registry.close();
    const health = await fetch(`${advertisedUrl}/healthz`);
    assert.equal(health.status, 200, 'GET /healthz on its advertised address');
    assert.equal(((await health.json()) as { id: string }).id, executor.id);
    assert.equal((await fetch(`${advertisedUrl}/livez`)).status, 200);
    const memory = createMemoryShuffleServiceFactory().reference;
    assert.ok(memory !== undefined);
    const unsigned: Omit<ExecutorInitMessage, 'signature'> = {
      type: 'init', executorId: 'forged~1', slots: 1, jobId: 'forged-job', bundleSha256: bundle.sha256, weftVersion: WEFT_VERSION, issuedAtMs: Date.now(), args: [], parallelism: 1,
      exchangeMode: 'ALL_EDGES_BLOCKING', fingerprint: 'x', pipelined: memory, blocking: memory, fileSystems: [], cwd: cluster.dir, serializer: 'default', heartbeatIntervalMs: 1000, progressIntervalMs: 250,
    };
    const answer = async (init: ExecutorInitMessage): Promise<{ type: string; code?: string }> => {
      const connection = await openControlConnection(advertisedUrl, 5000);
      return new Promise((resolve) => {
        connection.onMessage = (message) => {
          connection.destroy();
          resolve(message.type === 'init-failed' ? { type: message.type, code: String(message.error.code) } : { type: message.type });
        };
        connection.send(init);
      });
    };
    const forged = signDeployment(Buffer.from('another-secret-of-16-bytes-or-more'), unsigned);
    assert.deepEqual(await answer(forged), { type: 'init-failed', code: 'WEFT_ERR_DEPLOYMENT_REFUSED' });
    assert.deepEqual(await answer({ ...unsigned, signature: '' }), { type: 'init-failed', code: 'WEFT_ERR_DEPLOYMENT_REFUSED' });
    const tampered = { ...signDeployment(Buffer.from(SECRET), unsigned), args: ['--evil'] };
    assert.deepEqual(await answer(tampered), { type: 'init-failed', code: 'WEFT_ERR_DEPLOYMENT_REFUSED' }, 'a field changed after signing');
    assert.match(executor.stderr(), /deployment refused.*not signed with the shared secret/);
    await assert.rejects(readFile(marker), { code: 'ENOENT' }, 'nothing of the forged deployments ran');
    // the control: signed with the secret, the job's code runs (then fails on its fingerprint)
    assert.equal((await answer(signDeployment(Buffer.from(SECRET), unsigned))).type, 'init-failed');
    assert.equal(await readFile(marker, 'utf8'), 'ran');
  });

  it('refuses an executor of another weft version and runs the job on the others', async () => {
    let connected = 0;
    const impostor = createServer((socket) => {
      connected++;
      socket.destroy();
    });
    await new Promise<void>((resolve) => impostor.listen(0, '127.0.0.9', resolve));
    const port = (impostor.address() as { port: number }).port;
    const registry = new RedisExecutorRegistry({ url: cluster.clusterUrl });
    await registry.start();
    await registry.heartbeat({ id: 'te-old', advertisedUrl: `http://127.0.0.9:${port}`, host: 'old', slots: 4, freeSlots: 4, version: '0.0.1-old', pid: 1, incarnation: 'x', startedAtMs: Date.now(), draining: false }, 120_000);
    try {
      const { summary, output } = await slowRun(async () => {});
      assert.deepEqual(parseCounts(output), slowCountReference(RECORDS));
      const refused = summary.cluster.refused.find((r) => r.id === 'te-old');
      assert.match(refused?.reason ?? '', /weft 0\.0\.1-old, this job master weft 0\.1\.0/);
      assert.equal(connected, 0, 'the job master never connected to it');
    } finally {
      await registry.deregister('te-old');
      await registry.close();
      impostor.close();
    }
  });

  it('an executor whose job master died keeps the job for --orphan-timeout-ms, then frees its slots', async () => {
    const keeper = await cluster.startExecutor('127.0.0.6', ['--slots', '3', '--orphan-timeout-ms', '1500']);
    const markers = join(cluster.dir, 'markers-orphan');
    await mkdir(markers);
    let master: import('node:child_process').ChildProcess | undefined;
    const running = cluster.run(join('test', 'support', 'slow-count-job.ts'), ['--parallelism', '3'], ['--records', String(RECORDS * 4), '--wait-ms', '1', '--markers', markers, '--output', 'orphan.tsv'], (child) => (master = child), true);
    await waitFor('a task on the keeper', async () => ((await readdir(markers)).some((m) => m.startsWith(`${keeper.child.pid}-`)) ? true : undefined));
    const registry = new RedisExecutorRegistry({ url: cluster.clusterUrl });
    await registry.start();
    try {
      const record = async () => (await registry.listLive()).find((r) => r.id === keeper.id);
      assert.ok(((await record())?.freeSlots ?? 3) < 3, 'the job holds slots of it');
      master?.kill('SIGKILL');
      const run = await running;
      assert.equal(run.code, null, 'the job master was killed');
      await waitFor('the job to be orphaned', async () => (/attached -> orphaned/.test(keeper.stderr()) ? true : undefined));
      await waitFor('the orphaned job to be released', async () => (/orphaned -> released/.test(keeper.stderr()) ? true : undefined));
      await waitFor('its slots to be free again', async () => ((await record())?.freeSlots === 3 ? true : undefined)).catch((e: Error) => { throw new Error(e.message + keeper.stderr()); });
    } finally {
      await registry.close();
    }
  });

  it('--cluster with no executor registered fails within the startup timeout, exit 1, naming the Redis URL', async () => {
    const empty = `redis://127.0.0.1:${cluster.redis.port}/3`;
    const run = await new Promise<{ code: number | null; stderr: string }>((resolve) => {
      void import('node:child_process').then(({ execFile }) =>
        execFile(
          process.execPath,
          [join(root, 'packages', 'cli', 'bin', 'weft.js'), 'run', join(root, 'examples', 'word-count.ts'), '--cluster', empty, '--cluster-startup-timeout', '1500', '--store', 's3://weft-cluster/none', '--meta', `redis://127.0.0.1:${cluster.redis.port}/0`, '--', '--lines', '10'],
          { cwd: cluster.dir, env: { ...process.env, ...cluster.env } },
          (error, _stdout, stderr) => resolve({ code: error === null ? 0 : (error.code as number), stderr }),
        ),
      );
    });
    assert.equal(run.code, 1, run.stderr);
    assert.doesNotMatch(run.stderr, /internal error/);
    assert.match(run.stderr, new RegExp(`no task executor of weft ${WEFT_VERSION.replace(/\./g, '\\.')} took the job in redis://127\\.0\\.0\\.1:${cluster.redis.port}/3 within 1500 ms`));
  });
});

