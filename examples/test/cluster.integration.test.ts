// Cluster mode end to end (docs/cluster.md): real redis-server and s3rver, three `weft task-executor`
// processes on 127.0.0.2/.3/.4, two `weft shuffle-server`s on 127.0.0.5/.6, and `weft run --cluster`
// (with the memory pipelined shuffle, and once with the network one spreading a region over executors). Outputs are checked against references computed
// here, independently of the engine.
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { writeCorpus } from '../lib/corpus.js';
import { KEY_LENGTH, writeTerasortInput } from '../lib/terasort-data.js';
import { execFile } from 'node:child_process';
import { GetObjectCommand, PutObjectCommand } from '@aws-sdk/client-s3';
import { root, TestCluster } from './support/cluster-fixture.js';
import { countWordsByScanning, parseCounts } from './support/word-reference.js';
import { streamWord } from '../lib/stream-words.js';


interface Summary {
  status: string;
  executor: { kind: string; executors: number };
  cluster: { executors: { id: string }[]; refused: { id: string; reason: string }[] };
  executorsLost: { taskExecutorId: string }[];
}

describe('weft run --cluster on three task executors', () => {
  let cluster: TestCluster;
  let corpus = '';
  let reference: Map<string, number>;
  before(async () => {
    cluster = await TestCluster.start();
    await Promise.all([...['127.0.0.2', '127.0.0.3', '127.0.0.4'].map((host) => cluster.startExecutor(host)), cluster.startShuffleServer('127.0.0.5'), cluster.startShuffleServer('127.0.0.6')]);
    corpus = join(cluster.dir, 'corpus.txt');
    writeCorpus(corpus, 1024 * 1024);
    reference = countWordsByScanning(await readFile(corpus, 'utf8'));
  });
  after(async () => {
    await cluster?.[Symbol.asyncDispose]();
  });

  it('word-count runs on the registered executors and counts every word exactly', async () => {
    const run = await cluster.run('word-count.ts', ['--parallelism', '3'], ['--input', corpus, '--output', 'counts.tsv']);
    assert.equal(run.code, 0, run.stderr);
    const summary = JSON.parse(run.stdout) as Summary;
    assert.equal(summary.status, 'succeeded');
    assert.equal(summary.executor.kind, 'cluster');
    assert.deepEqual(summary.cluster.executors.map((e) => e.id.split('~')[0]).sort(), cluster.executors.map((e) => e.id).sort(), 'all three took the job');
    assert.deepEqual(parseCounts(await readFile(join(cluster.dir, 'counts.tsv'), 'utf8')), reference);
  });

  it('ALL_EDGES_PIPELINED word-count with --pipelined-shuffle network spreads its one region over two executors (one slot each) and counts every word exactly', async () => {
    const run = await cluster.run('word-count.ts', ['--parallelism', '2', '--exchange-mode', 'ALL_EDGES_PIPELINED', '--pipelined-shuffle', 'network'], ['--input', corpus, '--output', 'pipelined-counts.tsv']);
    assert.equal(run.code, 0, run.stderr);
    const summary = JSON.parse(run.stdout) as Summary & { regions: number; placement: { tasksPerExecutor: Record<string, number>; spreadDeployments: number } };
    assert.equal(summary.status, 'succeeded');
    assert.equal(summary.regions, 1);
    // the region's pipelined exchanges cross executors on 127.0.0.2/.3/.4 (each worker listens on its executor's --host)
    assert.equal(summary.placement.spreadDeployments, 1, JSON.stringify(summary.placement));
    assert.equal(Object.keys(summary.placement.tasksPerExecutor).length, 2, JSON.stringify(summary.placement));
    assert.deepEqual(parseCounts(await readFile(join(cluster.dir, 'pipelined-counts.tsv'), 'utf8')), reference);
  });

  it('the same run with a task throwing mid-region fails the spread region over (its tasks on the other executor cancelled) and still counts every word exactly', async () => {
    const run = await cluster.run('word-count.ts', ['--parallelism', '2', '--exchange-mode', 'ALL_EDGES_PIPELINED', '--pipelined-shuffle', 'network', '--inject-faults', 'throw:count#1@500'], ['--input', corpus, '--output', 'pipelined-failed.tsv']);
    assert.equal(run.code, 0, run.stderr);
    const summary = JSON.parse(run.stdout) as Summary & { restarts: number; placement: { spreadDeployments: number }; failovers: { failedTask: string; tasksToRestart: string[]; error: { message: string } }[] };
    assert.equal(summary.status, 'succeeded');
    assert.equal(summary.restarts, 1);
    // count#1's own report, or that of its consumer on the other executor, failed by count#1's error (the
    // producer's ERROR frame): the two reach the job master from two processes, in either order (seen on a
    // loaded machine)
    const failover = summary.failovers[0];
    assert.ok(failover?.failedTask === 'count#1' || failover?.error.message.includes('count#1@0'), JSON.stringify(failover));
    assert.equal(summary.failovers[0]?.tasksToRestart.length, 5, 'the whole region restarts');
    assert.equal(summary.placement.spreadDeployments, 2, 'spread again when it restarts');
    assert.deepEqual(parseCounts(await readFile(join(cluster.dir, 'pipelined-failed.tsv'), 'utf8')), reference);
  });

  it('word-count reads its input from S3 and writes its output to S3 on the executors (ranged reads there, published all or nothing)', async () => {
    const bucket = 'weft-cluster';
    await cluster.s3.client().send(new PutObjectCommand({ Bucket: bucket, Key: 'in/corpus.txt', Body: await readFile(corpus) }));
    const run = await cluster.run('word-count.ts', ['--parallelism', '3'], ['--input', `s3://${bucket}/in/`, '--output', `s3://${bucket}/out/counts.tsv`]);
    assert.equal(run.code, 0, run.stderr);
    const summary = JSON.parse(run.stdout) as Summary;
    assert.equal(summary.executor.kind, 'cluster');
    const object = await cluster.s3.client().send(new GetObjectCommand({ Bucket: bucket, Key: 'out/counts.tsv' }));
    assert.deepEqual(parseCounts(Buffer.from(await object.Body!.transformToByteArray()).toString('utf8')), reference);
  });

  it('word-count with --parallelism auto runs on the executors, decides its count from the bytes, and counts every word exactly', async () => {
    const run = await cluster.run('word-count.ts', ['--parallelism', 'auto', '--max-parallelism', '8', '--data-volume-per-task', '256kb'], ['--input', corpus, '--output', 'auto-counts.tsv']);
    assert.equal(run.code, 0, run.stderr);
    const summary = JSON.parse(run.stdout) as Summary & { vertices: { id: string; parallelism: number; decided?: { bytesIn: number } }[] };
    assert.equal(summary.executor.kind, 'cluster');
    const decided = summary.vertices.filter((v) => v.decided !== undefined);
    assert.ok(decided.length > 0 && decided.every((v) => v.parallelism >= 1 && v.parallelism <= 8 && (v.decided?.bytesIn ?? 0) > 0), JSON.stringify(summary.vertices));
    assert.deepEqual(parseCounts(await readFile(join(cluster.dir, 'auto-counts.tsv'), 'utf8')), reference);
  });

  it('the streaming word count with checkpoints on the executors: a task throws, its region restarts from the latest checkpoint, and the counts are exact', async () => {
    // about 4 s of stream, the throw 3 s in: checkpoints completed by then even on a loaded machine
    const records = 32_000;
    const run = await cluster.run('streaming-word-count.ts', ['--parallelism', '2', '--checkpoint-interval', '100ms', '--inject-faults', 'throw:words#1@12000'], ['--records', String(records), '--rate', '8000', '--output', 'streaming-counts.tsv']);
    assert.equal(run.code, 0, run.stderr);
    const summary = JSON.parse(run.stdout) as Summary & { failures: number; checkpoints: { completed: number; tasksRestored: number } };
    assert.equal(summary.executor.kind, 'cluster');
    assert.equal(summary.failures, 1);
    assert.ok(summary.checkpoints.completed > 0 && summary.checkpoints.tasksRestored > 0, JSON.stringify(summary.checkpoints));
    const reference = new Map<string, number>();
    for (let seq = 0; seq < records; seq++) reference.set(streamWord(seq), (reference.get(streamWord(seq)) ?? 0) + 1);
    assert.deepEqual(parseCounts(await readFile(join(cluster.dir, 'streaming-counts.tsv'), 'utf8')), reference);
  });

  it('weft cluster status lists the three executors with their slots', async () => {
    const stdout = await new Promise<string>((resolve, reject) =>
      execFile(process.execPath, [join(root, 'packages', 'cli', 'bin', 'weft.js'), 'cluster', 'status', '--cluster', cluster.clusterUrl, '--json'], (error, out) => (error === null ? resolve(out) : reject(error))),
    );
    const status = JSON.parse(stdout) as { executors: { id: string; advertisedUrl: string; slots: number }[]; slots: number };
    assert.deepEqual(status.executors.map((e) => e.id), cluster.executors.map((e) => e.id).sort());
    assert.deepEqual(status.executors.map((e) => new URL(e.advertisedUrl).hostname).sort(), ['127.0.0.2', '127.0.0.3', '127.0.0.4'], 'each on its own address');
    assert.equal(status.slots, 3);
  });

  it('terasort writes every record once, in key order', async () => {
    const records = 30_000;
    const input = join(cluster.dir, 'records.txt');
    writeTerasortInput(input, records);
    const run = await cluster.run('terasort.ts', ['--parallelism', '3'], ['--input', input, '--output', 'sorted.txt']);
    assert.equal(run.code, 0, run.stderr);
    const output = (await readFile(join(cluster.dir, 'sorted.txt'), 'utf8')).split('\n');
    assert.equal(output.pop(), '', 'ends with a newline');
    const inputLines = (await readFile(input, 'utf8')).split('\n').filter((l) => l !== '');
    const expected = [...inputLines].sort((a, b) => (a.slice(0, KEY_LENGTH) < b.slice(0, KEY_LENGTH) ? -1 : a.slice(0, KEY_LENGTH) > b.slice(0, KEY_LENGTH) ? 1 : 0));
    assert.deepEqual(output.map((l) => l.slice(0, KEY_LENGTH)), expected.map((l) => l.slice(0, KEY_LENGTH)), 'keys in order');
    assert.deepEqual([...output].sort(), [...inputLines].sort(), 'the same records');
  });

  it('terasort on the two shuffle servers (a copy of each partition on each), its input read from S3 and its output published to S3: every record once, in key order', async () => {
    const records = 20_000;
    const input = join(cluster.dir, 'records-s3.txt');
    writeTerasortInput(input, records);
    const bucket = 'weft-cluster';
    await cluster.s3.client().send(new PutObjectCommand({ Bucket: bucket, Key: 'tera-in/records.txt', Body: await readFile(input) }));
    const run = await cluster.runOnShuffleServers('terasort.ts', ['--parallelism', '3', '--shuffle-replicas', '2'], ['--input', `s3://${bucket}/tera-in/`, '--output', `s3://${bucket}/tera-out/sorted.txt`]);
    assert.equal(run.code, 0, run.stderr);
    const summary = JSON.parse(run.stdout) as Summary & { shuffleReplicas: { requested: number; used: number; liveServers: number } };
    assert.equal(summary.executor.kind, 'cluster');
    assert.deepEqual(summary.cluster.executors.map((e) => e.id.split('~')[0]).sort(), cluster.executors.map((e) => e.id).sort(), 'all three executors took the job');
    assert.deepEqual([summary.shuffleReplicas.used, summary.shuffleReplicas.liveServers], [2, 2], 'every partition on both shuffle servers (a copy on each host)');
    const object = await cluster.s3.client().send(new GetObjectCommand({ Bucket: bucket, Key: 'tera-out/sorted.txt' }));
    const output = Buffer.from(await object.Body!.transformToByteArray()).toString('utf8').split('\n');
    assert.equal(output.pop(), '', 'ends with a newline');
    const inputLines = (await readFile(input, 'utf8')).split('\n').filter((l) => l !== '');
    const keys = inputLines.map((l) => l.slice(0, KEY_LENGTH)).sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
    assert.deepEqual(output.map((l) => l.slice(0, KEY_LENGTH)), keys, 'keys in order');
    assert.deepEqual([...output].sort(), [...inputLines].sort(), 'the same records');
  });
});
