// Cluster mode with the network pipelined shuffle (issue 15): real redis-server and s3rver, two `weft
// task-executor` processes on 127.0.0.2 and 127.0.0.3 (one slot each), and `weft run --cluster
// --pipelined-shuffle network --exchange-mode ALL_EDGES_PIPELINED`: word count's one pipelined region is
// spread over both executors, its pipelined exchanges crossing the two addresses, and its output equals a
// reference count computed here.
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { writeCorpus } from '../lib/corpus.js';
import { TestCluster } from './support/cluster-fixture.js';
import { countWordsByScanning, parseCounts } from './support/word-reference.js';

interface Summary {
  status: string;
  regions: number;
  executor: { kind: string };
  placement: { tasksPerExecutor: Record<string, number>; spreadDeployments: number };
}

describe('weft run --cluster --pipelined-shuffle network on two task executors', () => {
  let cluster: TestCluster;
  let corpus = '';
  let reference: Map<string, number>;
  before(async () => {
    cluster = await TestCluster.start();
    await Promise.all(['127.0.0.2', '127.0.0.3'].map((host) => cluster.startExecutor(host)));
    corpus = join(cluster.dir, 'corpus.txt');
    writeCorpus(corpus, 512 * 1024);
    reference = countWordsByScanning(await readFile(corpus, 'utf8'));
  });
  after(async () => {
    await cluster?.[Symbol.asyncDispose]();
  });

  it('spreads the ALL_EDGES_PIPELINED word count over both executors and counts every word exactly', async () => {
    const run = await cluster.run('word-count.ts', ['--parallelism', '2', '--exchange-mode', 'ALL_EDGES_PIPELINED', '--pipelined-shuffle', 'network'], ['--input', corpus, '--output', 'counts.tsv']);
    assert.equal(run.code, 0, run.stderr);
    const summary = JSON.parse(run.stdout) as Summary;
    assert.equal(summary.status, 'succeeded');
    assert.equal(summary.executor.kind, 'cluster');
    assert.equal(summary.regions, 1);
    assert.equal(summary.placement.spreadDeployments, 1, JSON.stringify(summary.placement));
    assert.equal(Object.keys(summary.placement.tasksPerExecutor).length, 2, JSON.stringify(summary.placement));
    assert.deepEqual(parseCounts(await readFile(join(cluster.dir, 'counts.tsv'), 'utf8')), reference);
  });
});
