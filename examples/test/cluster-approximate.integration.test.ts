// Approximate local recovery (issue 16) on a cluster: `weft run --cluster … --approximate-recovery` of a
// streaming word count (support/approximate-count-job.ts) on four real `weft task-executor` processes (one slot each, on 127.0.0.2–.5; real
// redis-server and s3rver), its pipelined exchanges crossing executors over the network shuffle. A worker
// process of an executor is SIGKILLed in the middle of a task (`--inject-faults kill-worker:TASK@N`):
// - count#0 killed: only count#0 restarts (on its executor's replacement worker); the sources and count#1
//   keep running. Without checkpoints its new attempt starts empty, so count#0's words come out short and
//   count#1's exact — checked against a naive count of the same generated words;
// - words#0 killed: words#0 and its consumers restart (DESIGN.md's approximate failover), words#1 keeps
//   running; the restarted consumers are told where words#0's new attempt serves (the job master's
//   update-partition-info, relayed by the executors to their workers);
// - a finished source's worker killed (support/kill-finished-source-job.ts): its partitions died with the
//   process; the executor tells the job master (`outputs-lost`), so the count that fails next restarts that
//   source with it, from the final checkpoint — every word counted exactly.
import assert from 'node:assert/strict';
import { mkdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { assignKeyToParallelOperator } from '@weft/engine';
import { streamWord } from '../lib/stream-words.js';
import { TestCluster } from './support/cluster-fixture.js';

/** The job: the streaming examples' words, counted without a map-side combiner (records flow all along). */
const JOB = join('test', 'support', 'approximate-count-job.ts');
const RECORDS = 30_000;
const RATE = 6_000;
/** `delayMs` 0: the restart comes before the killed worker's replacement is ready, so the task waits for an executor that serves. */
const flags = (delayMs: number): string[] => ['--approximate-recovery', '--parallelism', '2', '--restart-strategy', 'fixed-delay', '--restart-attempts', '3', '--restart-delay', String(delayMs)];

interface Summary {
  status: string;
  failovers: { tasksToRestart: string[] }[];
  approximateRecoveries: { task: string; recordsProcessedByFailedAttempt: number }[];
  cluster: { executors: { id: string }[] };
}

/** The naive count of the job's words: a Map over streamWord(0 … n−1). */
function reference(n: number): Map<string, number> {
  const counts = new Map<string, number>();
  for (let seq = 0; seq < n; seq++) {
    const word = streamWord(seq);
    counts.set(word, (counts.get(word) ?? 0) + 1);
  }
  return counts;
}

function parseCounts(text: string): Map<string, number> {
  const counts = new Map<string, number>();
  for (const line of text.split('\n')) {
    if (line === '') continue;
    const [word, n] = line.split('\t');
    assert.match(line, /^[a-z]+\t\d+$/, `a well-formed line: ${JSON.stringify(line)}`);
    assert.equal(counts.has(word as string), false, `${word} once`);
    counts.set(word as string, Number(n));
  }
  return counts;
}

describe('weft run --cluster --approximate-recovery', () => {
  let cluster: TestCluster;
  const expected = reference(RECORDS);
  before(async () => {
    cluster = await TestCluster.start();
    await Promise.all(['127.0.0.2', '127.0.0.3', '127.0.0.4', '127.0.0.5'].map((host) => cluster.startExecutor(host)));
  });
  after(async () => {
    await cluster?.[Symbol.asyncDispose]();
  });

  it("restarts only count#0 when its worker is SIGKILLed: count#1's words come out exact, count#0's short by what its lost state held", async () => {
    const run = await cluster.run(JOB, [...flags(0), '--inject-faults', 'kill-worker:count#0@1500'], ['--records', String(RECORDS), '--rate', String(RATE), '--output', 'approx-count.tsv']);
    assert.equal(run.code, 0, run.stderr);
    const summary = JSON.parse(run.stdout) as Summary;
    assert.equal(summary.status, 'succeeded');
    assert.equal(summary.cluster.executors.length, 4, 'the four executors took the job');
    assert.deepEqual(summary.failovers.map((f) => f.tasksToRestart), [['count#0']], 'only the killed task restarts');
    assert.deepEqual(summary.approximateRecoveries.map((r) => r.task), ['count#0']);
    const counts = parseCounts(await readFile(join(cluster.dir, 'approx-count.tsv'), 'utf8'));
    let short = 0;
    for (const [word, n] of expected) {
      // the count's key groups: Flink's assignment over the default max parallelism (128)
      const subtask = assignKeyToParallelOperator(word, 128, 2);
      const got = counts.get(word) ?? 0;
      if (subtask === 1) assert.equal(got, n, `count#1 ran throughout: ${word} exact`);
      else {
        assert.ok(got < n, `count#0 restarted empty: ${word} short (${got} of ${n})`);
        // its new attempt ran while the sources still did (not only once they finished): it counted the rest
        assert.ok(got > 0, `count#0's new attempt counted ${word} after its recovery: ${JSON.stringify(summary.approximateRecoveries)}`);
        short += n - got;
      }
    }
    // at least what the failed attempt had counted, at most everything count#0 was sent before it came back
    assert.ok(short >= 1500, `lost ${short}: at least the 1500 the killed attempt had counted`);
    assert.equal([...counts.keys()].every((w) => expected.has(w)), true, 'no word the job never generated');
  });

  it("restarts words#0 and its consumers when words#0's worker is SIGKILLed, words#1 keeps running, and every line is well formed", async () => {
    const run = await cluster.run(JOB, [...flags(200), '--inject-faults', 'kill-worker:words#0@1500'], ['--records', String(RECORDS), '--rate', String(RATE), '--output', 'approx-words.tsv']);
    assert.equal(run.code, 0, run.stderr);
    const summary = JSON.parse(run.stdout) as Summary;
    assert.equal(summary.status, 'succeeded');
    assert.deepEqual(summary.failovers.map((f) => [...f.tasksToRestart].sort()), [['count#0', 'count#1', 'words#0']], `the failed source and its consumers, not words#1: ${JSON.stringify(summary.failovers)}`);
    const counts = parseCounts(await readFile(join(cluster.dir, 'approx-words.tsv'), 'utf8'));
    // the restarted counts start empty and the restarted source starts over: every count is at most the
    // reference, and the words words#1 and words#0's new attempt sent after the restart were counted
    const total = [...counts.values()].reduce((a, b) => a + b, 0);
    for (const [word, n] of counts) assert.ok(n <= (expected.get(word) ?? 0), `${word}: ${n} at most ${expected.get(word)}`);
    assert.ok(total > 0 && total < RECORDS, `counted ${total} of ${RECORDS}: some lost, the rest flowed after the recovery`);
  });
  it("restarts a finished source whose worker was SIGKILLed with the count that reads its lost partition: every word exact", async () => {
    const marks = join(cluster.dir, 'marks');
    await mkdir(marks);
    const job = join('test', 'support', 'kill-finished-source-job.ts');
    const run = await cluster.run(job, ['--approximate-recovery', '--parallelism', '2', '--checkpoint-mode', 'at-least-once', '--checkpoint-interval', '100ms', '--restart-strategy', 'fixed-delay', '--restart-attempts', '3', '--restart-delay', '200'], ['--records', String(RECORDS), '--marks', marks, '--output', 'finished-source.tsv']);
    assert.equal(run.code, 0, run.stderr);
    const summary = JSON.parse(run.stdout) as { failovers: { failedTask: string; lostPartitions: string[]; tasksToRestart: string[] }[] };
    assert.equal(summary.failovers.length, 1, JSON.stringify(summary.failovers));
    const [failover] = summary.failovers as [{ failedTask: string; lostPartitions: string[]; tasksToRestart: string[] }];
    assert.match(failover.failedTask, /^count#/);
    assert.equal(failover.lostPartitions.length, 1, `the killed source's partition is named lost: ${JSON.stringify(failover)}`);
    const source = `words#${(failover.lostPartitions[0] as string).split('#')[1]}`;
    assert.deepEqual([...failover.tasksToRestart].sort(), ['count#0', 'count#1', source].sort(), "the lost partition's producer restarts with its consumers");
    const counts = parseCounts(await readFile(join(cluster.dir, 'finished-source.tsv'), 'utf8'));
    assert.deepEqual([...counts].sort(), [...expected].sort(), 'no word lost, none counted twice');
  });
});
