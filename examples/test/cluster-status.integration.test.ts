// `weft cluster status` against a real cluster (docs/cluster.md): a redis-server, one `weft task-executor`
// on 127.0.0.2, one `weft shuffle-server` on 127.0.0.5 registered in the same Redis, and runs whose
// event log is in that Redis (`--shuffle-servers` on the cluster URL): one job master SIGKILLed mid-job
// (its run stays unfinished), then a run that succeeds.
import assert from 'node:assert/strict';
import { type ChildProcess, execFile } from 'node:child_process';
import { mkdir, readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { writeCorpus } from '../lib/corpus.js';
import { root, TestCluster } from './support/cluster-fixture.js';

interface Status {
  cluster: string;
  executors: { id: string; slots: number; freeSlots: number }[];
  shuffleServers: { id: string; url: string; state: string; diskFreeBytes: number; diskUsedBytes: number; maxConcurrentStreams: number }[];
  jobs: { jobId: string; job: string | null; status: string; tasksFinished: number; tasksTotal: number | null; epoch: number; owner: string | null }[];
  slots: number;
  freeSlots: number;
}

function weft(args: readonly string[]): Promise<string> {
  return new Promise((resolve, reject) =>
    execFile(process.execPath, [join(root, 'packages', 'cli', 'bin', 'weft.js'), ...args], (error, out, err) => (error === null ? resolve(out) : reject(new Error(`${error.message}\n${err}`)))),
  );
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

describe('weft cluster status', () => {
  let cluster: TestCluster;
  let whileRunning: Status;
  let killedJobId = '';
  let finishedJobId = '';
  before(async () => {
    cluster = await TestCluster.start();
    await Promise.all([cluster.startExecutor('127.0.0.2', ['--orphan-timeout-ms', '300']), cluster.startShuffleServer('127.0.0.5')]);
    // a job master SIGKILLed while its task runs: its run stays unfinished
    const markers = join(cluster.dir, 'markers');
    await mkdir(markers);
    let master: ChildProcess | undefined;
    const killed = cluster.runOnShuffleServers(
      join('test', 'support', 'slow-count-job.ts'),
      ['--parallelism', '1', '--job-id', 'status-killed'],
      ['--records', '8000', '--wait-ms', '1', '--markers', markers, '--output', 'slow.tsv'],
      (child) => (master = child),
      true,
    );
    await waitFor('a task to run', async () => ((await readdir(markers)).length > 0 ? true : undefined));
    whileRunning = JSON.parse(await weft(['cluster', 'status', '--cluster', cluster.clusterUrl, '--json'])) as Status;
    master?.kill('SIGKILL');
    await killed;
    killedJobId = 'status-killed';
    // then a run that succeeds (once the executor freed the orphaned job's slot)
    const corpus = join(cluster.dir, 'corpus.txt');
    writeCorpus(corpus, 64 * 1024);
    const run = await cluster.runOnShuffleServers('word-count.ts', ['--parallelism', '1', '--job-id', 'status-finished', '--cluster-startup-timeout', '20000'], ['--input', corpus, '--output', 'counts.tsv']);
    assert.equal(run.code, 0, `${run.stderr}\nexecutor: ${cluster.executors[0]?.stderr()}`);
    finishedJobId = 'status-finished';
  });
  after(async () => {
    await cluster?.[Symbol.asyncDispose]();
  });

  it('while a job runs, --json shows the executor with its slot taken, the shuffle server, and the job unfinished', () => {
    assert.deepEqual(whileRunning.executors.map((e) => e.id), [cluster.executors[0]?.id]);
    assert.equal(whileRunning.slots, 1);
    assert.equal(whileRunning.freeSlots, 0, 'the running job holds the only slot');
    assert.deepEqual(whileRunning.shuffleServers.map((s) => [s.id, s.url, s.state]), [[cluster.shuffleServers[0]?.serverId, cluster.shuffleServers[0]?.url, 'live']]);
    assert.ok((whileRunning.shuffleServers[0]?.diskFreeBytes ?? 0) > 0, 'disk free is reported');
    assert.deepEqual(
      whileRunning.jobs.map((j) => [j.jobId, j.job, j.status, j.epoch]),
      [['status-killed', 'slow-count', 'unfinished', 1]],
    );
    assert.ok((whileRunning.jobs[0]?.tasksTotal ?? 0) > 0 && whileRunning.jobs[0]?.owner !== null, 'tasks total and the lease owner are known');
  });

  it('lists unfinished jobs first, then finished ones with every task finished; the slot is free again', async () => {
    const status = JSON.parse(await weft(['cluster', 'status', '--cluster', cluster.clusterUrl, '--json'])) as Status;
    assert.deepEqual(status.jobs.map((j) => [j.jobId, j.status]), [[killedJobId, 'unfinished'], [finishedJobId, 'succeeded']], 'the unfinished run first though the other is newer');
    const finished = status.jobs[1]!;
    assert.ok(finished.tasksTotal !== null && finished.tasksTotal > 0);
    assert.equal(finished.tasksFinished, finished.tasksTotal);
    assert.equal(status.freeSlots, 1);
    assert.equal(status.shuffleServers.length, 1);
  });

  it('prints three tables for a person: executors, shuffle servers, jobs', async () => {
    const text = await weft(['cluster', 'status', '--cluster', cluster.clusterUrl]);
    const executor = text.indexOf(cluster.executors[0]!.id);
    const server = text.indexOf(cluster.shuffleServers[0]!.serverId);
    const killedRow = text.indexOf(killedJobId);
    const finishedRow = text.indexOf(finishedJobId);
    assert.ok(executor > 0 && server > executor && killedRow > server && finishedRow > killedRow, text);
    assert.match(text, /1 task executor, 1 of 1 slots free/);
    assert.match(text, /shuffle servers in redis:\/\/127\.0\.0\.1:\d+\/1: 1/);
    assert.match(text, /jobs in .*: 2 \(1 unfinished\)/);
  });

  it('reads the shuffle servers and the event log from other Redis URLs when told (--shuffle-servers, --meta)', async () => {
    const elsewhere = `redis://127.0.0.1:${cluster.redis.port}/0`;
    const status = JSON.parse(await weft(['cluster', 'status', '--cluster', cluster.clusterUrl, '--shuffle-servers', elsewhere, '--meta', elsewhere, '--json'])) as Status;
    assert.equal(status.executors.length, 1);
    assert.deepEqual(status.shuffleServers, [], 'none registered in database 0');
    assert.deepEqual(status.jobs, [], 'no event log in database 0');
  });
});
