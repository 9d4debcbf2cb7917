// Cluster mode on a Sentinel-managed Redis (issue 12, Deliver 5): the registry, the job code, the partition
// metadata and the event log all behind `redis+sentinel://` (a primary, a replica, three Sentinels). The
// primary is SIGKILLed mid-job; a Sentinel promotes the replica; the executors register again with the new
// primary; the job succeeds (or the same command resumes it) with exact output and a log that lost nothing
// it had acknowledged. And a job-code bundle write counts only once a replica holds it (WAIT).
// Real redis-server / redis-sentinel, s3rver and three `weft task-executor` processes on 127.0.0.2–4.
import assert from 'node:assert/strict';
import { mkdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { RedisExecutorRegistry } from '@weft/cluster';
import { RedisJobEventLog } from '@weft/job-store';
import { isShuffleError } from '@weft/shuffle-api';
import { TestCluster } from './support/cluster-fixture.js';
import { slowCountReference } from './support/slow-count-job.js';
import { parseCounts } from './support/word-reference.js';

const RECORDS = 3000;
const RESTART = ['--restart-strategy', 'fixed-delay', '--restart-attempts', '10', '--restart-delay', '200'];

async function waitFor<T>(what: string, probe: () => Promise<T | undefined>, timeoutMs = 60_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe().catch(() => undefined);
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

describe('weft run --cluster on a Sentinel-managed Redis', () => {
  let cluster: TestCluster;
  before(async () => {
    cluster = await TestCluster.start({ sentinel: true });
    await Promise.all(['127.0.0.2', '127.0.0.3', '127.0.0.4'].map((host) => cluster.startExecutor(host)));
  });
  after(async () => {
    await cluster?.[Symbol.asyncDispose]();
  });

  it('finishes a job whose Redis primary is SIGKILLed mid-job: exact output, every logged event kept, the executors registered again', async (t) => {
    const sentinel = cluster.sentinel!;
    const markers = join(cluster.dir, 'markers');
    await mkdir(markers);
    const jobId = 'cl-sentinel';
    const store = 's3://weft-cluster/sentinel';
    const job = join('test', 'support', 'slow-count-job.ts');
    const args = ['--job-id', jobId, '--parallelism', '3', ...RESTART];
    const jobArgs = ['--records', String(RECORDS), '--wait-ms', '1', '--markers', markers, '--output', 'sentinel.tsv'];
    const log = await RedisJobEventLog.connect({ url: cluster.redisUrl(0) }, { retryTimeoutMs: 60_000 });
    const registry = new RedisExecutorRegistry({ url: cluster.clusterUrl });
    await registry.start();
    try {
      let done = false;
      const running = cluster.run(job, args, jobArgs, undefined, false, store).finally(() => (done = true));
      await waitFor('a task finished in the log', async () => ((await log.readRun(jobId)).some((e) => e.type === 'task-finished') ? true : undefined));
      assert.ok(!done, 'the job ended before the primary could be killed');

      const old = await sentinel.primary();
      await old.kill();
      await sentinel.waitForFailover(old);
      await old.start(); // the Sentinels make it a replica of the promoted node
      await sentinel.waitForReplicas(1);
      let outcome = await running;
      const resumed = outcome.code !== 0;
      if (resumed) outcome = await cluster.run(job, args, jobArgs, undefined, false, store); // the same command resumes the run
      t.diagnostic(resumed ? 'the run failed across the failover; the same command resumed it' : 'the run rode over the failover');
      assert.equal(outcome.code, 0, outcome.stderr);
      assert.deepEqual(parseCounts(await readFile(join(cluster.dir, 'sentinel.tsv'), 'utf8')), slowCountReference(RECORDS));

      const events = await log.readRun(jobId);
      assert.deepEqual(events.map((e) => e.seq), events.map((_, i) => i + 1), 'the log lost or repeated an event');
      assert.equal(events.at(-1)?.type, 'job-finished');
      const submitted = events.find((e) => e.type === 'job-submitted')?.data as { tasksTotal: number };
      const finished = new Set(events.filter((e) => e.type === 'task-finished').map((e) => (e.data as { executionVertexId: string }).executionVertexId));
      assert.equal(finished.size, submitted.tasksTotal, 'every task is logged finished');

      // every executor re-registered in the promoted primary (their heartbeats follow the Sentinels)
      const ids = new Set(cluster.executors.map((e) => e.id));
      await waitFor('the executors registered with the new primary', async () => ((await registry.listLive()).filter((r) => ids.has(r.id)).length === ids.size ? true : undefined));
    } finally {
      await Promise.allSettled([log.close(), registry.close()]);
    }
  });

  it('counts a job-code bundle as stored only once a replica holds it (WAIT): SHF_ERR_NOT_REPLICATED while no replica answers', async () => {
    const sentinel = cluster.sentinel!;
    const registry = new RedisExecutorRegistry({ url: `${cluster.clusterUrl}?replicaTimeoutMs=100&replicaTries=2` });
    await registry.start();
    try {
      await sentinel.waitForReplicas(1);
      await registry.putBundle('a'.repeat(64), 'export {}', 60_000);
      const primary = await sentinel.primary();
      const replica = sentinel.nodes.find((n) => n !== primary && n.running)!;
      await replica.kill();
      try {
        await assert.rejects(registry.putBundle('b'.repeat(64), 'export {}', 60_000), (error: unknown) => isShuffleError(error, 'SHF_ERR_NOT_REPLICATED') && /putBundle/.test((error as Error).message));
      } finally {
        await replica.start();
      }
      // counts again once the replica has synced (INFO may still list its old link as online for a moment)
      await waitFor('a bundle write a replica acknowledges', () => registry.putBundle('c'.repeat(64), 'export {}', 60_000).then(() => true), 30_000);
      assert.equal(await registry.getBundle('c'.repeat(64)), 'export {}');
    } finally {
      await registry.close();
    }
  });
});
