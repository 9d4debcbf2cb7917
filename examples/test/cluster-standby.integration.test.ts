// A standby job master in cluster mode (issue 12, Deliver 4): `weft run --cluster … --job-id ID --standby`
// waits while the active master renews the job's lease in Redis; the active one is SIGKILLed mid-job (by
// its own kill-job-master fault), and the standby takes the job over by the event log's resume: the
// tasks the log finished are reused, the executors that ran the dead master's tasks take the new master's
// deployments (their orphaned job attached to it), and the output is exact against an independent reference.
// Real redis-server, s3rver and two `weft task-executor` processes on 127.0.0.2 and 127.0.0.3.
import assert from 'node:assert/strict';
import { mkdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { RedisJobEventLog } from '@weft/job-store';
import { TestCluster } from './support/cluster-fixture.js';
import { slowCountReference } from './support/slow-count-job.js';
import { parseCounts } from './support/word-reference.js';

const RECORDS = 3000;

describe('weft run --cluster --standby', () => {
  let cluster: TestCluster;
  before(async () => {
    cluster = await TestCluster.start();
    await Promise.all(['127.0.0.2', '127.0.0.3'].map((host) => cluster.startExecutor(host, ['--slots', '2', '--verbose'])));
  });
  after(async () => {
    await cluster?.[Symbol.asyncDispose]();
  });

  it('takes the job over when the active master dies: finished tasks reused, exact output', async () => {
    const markers = join(cluster.dir, 'markers-standby');
    await mkdir(markers);
    const store = 's3://weft-cluster/standby';
    const job = join('test', 'support', 'slow-count-job.ts');
    const common = ['--job-id', 'cl-standby', '--parallelism', '3'];
    const jobArgs = ['--records', String(RECORDS), '--wait-ms', '1', '--markers', markers, '--output', 'standby.tsv'];
    const standby = cluster.run(job, [...common, '--standby', '--standby-takeover-ms', '2000'], jobArgs, undefined, false, store);
    // the active master SIGKILLs itself once the log holds its second task-finished
    const active = await cluster.run(job, [...common, '--inject-faults', 'kill-job-master:task-finished@2'], jobArgs, undefined, false, store);
    assert.notEqual(active.code, 0, `the active master died: ${active.stderr}`);

    const taken = await standby;
    assert.equal(taken.code, 0, taken.stderr);
    assert.match(taken.stderr, /has not renewed the job's lease for \d+ ms; taking the job over/);
    const summary = JSON.parse(taken.stdout) as { status: string; resumed: boolean; tasksReused: number; epoch: number };
    assert.deepEqual([summary.status, summary.resumed, summary.epoch], ['succeeded', true, 2]);

    const log = await RedisJobEventLog.connect({ url: `redis://127.0.0.1:${cluster.redis.port}/0` });
    try {
      const events = await log.readRun('cl-standby');
      const finishedByFirst = new Set(events.filter((e) => e.epoch === 1 && e.type === 'task-finished').map((e) => (e.data as { executionVertexId: string }).executionVertexId));
      assert.equal(finishedByFirst.size, 2, 'the dead master logged two finished tasks');
      assert.equal(summary.tasksReused, finishedByFirst.size, 'the standby ran none of them again');
      const deployedBySecond = new Set(events.filter((e) => e.epoch === 2 && e.type === 'task-deployed').map((e) => (e.data as { executionVertexId: string }).executionVertexId));
      for (const task of finishedByFirst) assert.ok(!deployedBySecond.has(task), `${task} was not deployed again`);
    } finally {
      await log.close();
    }
    assert.deepEqual(parseCounts(await readFile(join(cluster.dir, 'standby.tsv'), 'utf8')), slowCountReference(RECORDS));
    assert.ok(
      cluster.executors.some((e) => /orphaned -> attached/.test(e.stderr())),
      `an executor kept the dead master's job and attached it to the standby: ${cluster.executors.map((e) => e.stderr()).join('\n')}`,
    );
  });
});
