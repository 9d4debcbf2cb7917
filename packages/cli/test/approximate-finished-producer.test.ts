// A restarted consumer one of whose approximate producers already finished: the finished producer's
// subpartitions stay (until the job releases them) and serve the new consumer attempt from the position its
// restored checkpoint read up to — the replay from the upstream backup, then the end again — so it loses
// nothing; without a backup (approximateReplayBytes 0) it is served the end at once, and what it lacks is
// counted (recordsLost) and reported. Before, the restarted consumer was deployed without the finished
// producer: everything it had sent since the checkpoint was lost and reported nowhere (with a combiner,
// which emits at the end of its input, a whole source's contribution: 16,422 of 50,000 counted, 0 reported).
// A finished producer whose worker is SIGKILLed loses its partitions: a failover that restarts a consumer of
// one restarts the producer too, from the checkpoint, as a lost blocking partition's producer is (`weft plan
// --fail --lost` agrees). The oracle is a naive count of the generated words; `weft run` with 2 real workers
// over the network shuffle is checked the same way.
import assert from 'node:assert/strict';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { runCli } from '@weft/cli';
import { defineJob, type FaultInjectorFactory, InMemoryCheckpointStorage, type JobResult, runJob } from '@weft/engine';
import { createMemoryShuffleServiceFactory } from '@weft/shuffle-memory';
import { streamWord } from '../../../examples/lib/stream-words.js';

const WORDS = ['alpha', 'beta', 'gamma', 'delta', 'epsilon', 'zeta', 'eta', 'theta', 'iota', 'kappa', 'lambda'];
const wordOf = (seq: number): string => WORDS[(seq * 7 + (seq >> 3)) % WORDS.length] as string;
const SHUFFLE = { bufferSizeBytes: 256, buffersPerPartition: 8, buffersPerChannel: 2, floatingBuffersPerGate: 2 };
const throwOnce = (task: string, atRecord: number): FaultInjectorFactory => () => ({
  taskFault: ({ executionVertexId, attempt }) => (executionVertexId === task && attempt === 0 ? { kind: 'throw', atRecord } : undefined),
});
const streamingWordCount = fileURLToPath(new URL('../../../examples/streaming-word-count.ts', import.meta.url));

/** A naive count of `wordOf` over sequence numbers [0, n). */
function naiveCounts(n: number, wordAt: (seq: number) => string = wordOf): Map<string, number> {
  const reference = new Map<string, number>();
  for (let seq = 0; seq < n; seq++) reference.set(wordAt(seq), (reference.get(wordAt(seq)) ?? 0) + 1);
  return reference;
}

function collectedCounts(result: JobResult): Map<string, number> {
  assert.equal(result.status, 'succeeded', result.error?.message);
  const counts = new Map<string, number>();
  for (const [w, n] of (result.collected['counts'] ?? []) as [string, number][]) {
    assert.equal(counts.has(w), false, `${w} counted twice`);
    counts.set(w, n);
  }
  return counts;
}

async function weftCli(args: string[], cwd: string): Promise<{ code: number; stdout: string; stderr: string }> {
  let stdout = '';
  let stderr = '';
  const code = await runCli(args, { stdout: { write: (t: string) => (stdout += t) }, stderr: { write: (t: string) => (stderr += t) }, cwd, env: {} });
  return { code, stdout, stderr };
}

/** Runs `body` in a new temporary directory, removed after. */
async function inTempDir(prefix: string, body: (dir: string) => Promise<void>): Promise<void> {
  const dir = await mkdtemp(join(tmpdir(), prefix));
  try {
    await body(dir);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

/** The `word<TAB>count` lines of a `weft run --output` file. */
async function countsInFile(path: string): Promise<Map<string, number>> {
  const counts = new Map<string, number>();
  for (const line of (await readFile(path, 'utf8')).split('\n').filter(Boolean)) {
    const [w, n] = line.split('\t');
    counts.set(w as string, Number(n));
  }
  return counts;
}

const sorted = (m: Map<string, number>): [string, number][] => [...m].sort(([a], [b]) => a.localeCompare(b));

describe('approximate recovery with a finished producer', () => {
  it('a restarted consumer loses nothing from its running producer when another producer of it has finished', async () => {
    const N = 6000;
    const SMALL = 20;
    const job = defineJob((ctx) => {
      const big = ctx.generate(wordOf, { count: N, splits: 4, ratePerSecond: 6000 });
      const small = ctx.generate(wordOf, { count: SMALL, splits: 2, ratePerSecond: 100, name: 'small' });
      big.union(small).keyBy((w) => w).count({ combine: false }).collect('counts');
    }, { name: 'finished-producer' });
    const memory = createMemoryShuffleServiceFactory(SHUFFLE);
    const result = await runJob({
      job,
      parallelism: 2,
      exchangeMode: 'ALL_EDGES_PIPELINED_APPROXIMATE',
      shuffle: { pipelined: memory, blocking: memory },
      restartStrategy: { type: 'fixed-delay', attempts: 2, delayMs: 0 },
      faults: throwOnce('count#0', 2000),
      checkpointing: { intervalMs: 20, mode: 'at-least-once', storage: new InMemoryCheckpointStorage() },
    });
    const counts = collectedCounts(result);
    const reference = naiveCounts(N);
    for (const [w, n] of naiveCounts(SMALL)) reference.set(w, (reference.get(w) ?? 0) + n);
    assert.equal(result.checkpoints?.tasksRestored, 1, 'count#0 restored from a checkpoint');
    assert.deepEqual(sorted(counts), sorted(reference), `no record lost, none counted twice; ${JSON.stringify(result.approximateRecoveries)}`);
  });

  /**
   * A word count whose map-side combiners emit only at the end of their input — after the final checkpoint,
   * once every source waited for it — and whose count#0 fails on its 3rd record, when its producers have
   * sent everything and finished: count#0 restarts alone from the final checkpoint (which holds no count
   * yet) 150 ms later, when both producers are surely finished. (`faults`: other failures instead.)
   */
  const combinedRun = (approximateReplayBytes?: number, failing = 'count#0', atRecord = 3, faults: FaultInjectorFactory = throwOnce(failing, atRecord)): Promise<JobResult> => {
    const memory = createMemoryShuffleServiceFactory({ ...SHUFFLE, ...(approximateReplayBytes === undefined ? {} : { approximateReplayBytes }) });
    return runJob({
      job: defineJob((ctx) => {
        ctx.generate(wordOf, { count: 4000, splits: 4, ratePerSecond: 20_000 }).keyBy((w) => w).count().collect('counts');
      }, { name: 'combined-word-count' }),
      parallelism: 2,
      exchangeMode: 'ALL_EDGES_PIPELINED_APPROXIMATE',
      shuffle: { pipelined: memory, blocking: memory },
      restartStrategy: { type: 'fixed-delay', attempts: 4, delayMs: 150 },
      faults,
      checkpointing: { intervalMs: 20, mode: 'at-least-once', storage: new InMemoryCheckpointStorage() },
    });
  };

  it('a consumer that fails after its producers finished is served again by their upstream backup: every word counted exactly', async () => {
    const result = await combinedRun();
    const counts = collectedCounts(result);
    assert.deepEqual(result.failovers.map((f) => f.tasksToRestart), [['count#0']], 'count#0 alone restarted');
    assert.deepEqual(result.taskAttempts, { 'generate#0': 0, 'generate#1': 0, 'count#0': 1, 'count#1': 0 }, 'the producers ran once (and finished)');
    assert.deepEqual(sorted(counts), sorted(naiveCounts(4000)), JSON.stringify(result.approximateRecoveries));
    const [recovery] = result.approximateRecoveries ?? [];
    assert.equal(recovery?.task, 'count#0');
    assert.equal(recovery?.recordsLost, 0, JSON.stringify(recovery));
  });

  it('without an upstream backup the finished producers serve the restarted consumer their end at once, and what it lacks is counted and reported', async () => {
    const result = await combinedRun(0);
    const counts = collectedCounts(result);
    const reference = naiveCounts(4000);
    // count#0's words are gone whole (each producer's combiner sent one [word, n] for each, all after the
    // final checkpoint); count#1's are exact
    const missing = [...reference.keys()].filter((w) => !counts.has(w));
    assert.ok(missing.length > 0 && missing.length < reference.size, `count#0's words are missing, count#1's counted: ${JSON.stringify(sorted(counts))}`);
    for (const [w, n] of counts) assert.equal(n, reference.get(w), `${w} (count#1's) is exact`);
    const [recovery] = result.approximateRecoveries ?? [];
    assert.equal(recovery?.task, 'count#0');
    // both producers generated every word: each sent count#0 one partial count per word of it
    assert.equal(recovery?.recordsLost, 2 * missing.length, `lost: one [word, n] record from each of the 2 producers per missing word; ${JSON.stringify(recovery)}`);
  });

  it('a source failing at its end restarts its consumers with it: the other, finished, source serves them again, and their losses are reported with the recovery', async () => {
    // the throw is past generate#0's last record: it fires at its end, after the final checkpoint
    const served = await combinedRun(undefined, 'generate#0', 1_000_000);
    assert.deepEqual(served.failovers.map((f) => f.tasksToRestart), [['generate#0', 'count#0', 'count#1']]);
    assert.deepEqual(sorted(collectedCounts(served)), sorted(naiveCounts(4000)), JSON.stringify(served.approximateRecoveries));
    assert.deepEqual(served.approximateRecoveries?.[0]?.restartedWith, [{ task: 'count#0', recordsLost: 0 }, { task: 'count#1', recordsLost: 0 }]);

    // without a backup the finished generate#1 serves the restarted counts its end at once: its contribution
    // (one [word, n] per word, each word to one count task) is lost, and counted by them
    const unserved = await combinedRun(0, 'generate#0', 1_000_000);
    const counts = collectedCounts(unserved);
    // subtask i of 2 owns the splits [2i, 2i + 2) of 4, split s the sequence numbers s, s + 4, …
    const generate0 = naiveCounts(4000, (seq) => (seq % 4 < 2 ? wordOf(seq) : ''));
    generate0.delete('');
    assert.deepEqual(sorted(counts), sorted(generate0), "generate#0's share alone (splits 0 and 1 of 4)");
    const consumers = unserved.approximateRecoveries?.[0]?.restartedWith ?? [];
    assert.deepEqual(consumers.map((c) => c.task), ['count#0', 'count#1']);
    const wordsOfGenerate1 = new Set(Array.from({ length: 4000 }, (_, seq) => seq).filter((seq) => seq % 4 >= 2).map(wordOf));
    assert.equal(consumers.reduce((n, c) => n + c.recordsLost, 0), wordsOfGenerate1.size, `one lost [word, n] per word generate#1 generated: ${JSON.stringify(consumers)}`);
  });

  it('a consumer failing again after its producer restarted from the final checkpoint is served that producer attempt\'s output again, from 0', async () => {
    // generate#0 fails at its end (restarting with both counts, from the final checkpoint); then count#0's
    // new attempt fails on its 6th record, after generate#0's new attempt sent its partials: no checkpoint
    // completes any more (every source has finished), so that attempt's backup keeps from its first record
    const faults: FaultInjectorFactory = () => ({
      taskFault: ({ executionVertexId, attempt }) =>
        executionVertexId === 'generate#0' && attempt === 0 ? { kind: 'throw', atRecord: 1_000_000 } : executionVertexId === 'count#0' && attempt === 1 ? { kind: 'throw', atRecord: 6 } : undefined,
    });
    const result = await combinedRun(undefined, '', 0, faults);
    assert.deepEqual(result.failovers.map((f) => f.tasksToRestart), [['generate#0', 'count#0', 'count#1'], ['count#0']]);
    assert.deepEqual(sorted(collectedCounts(result)), sorted(naiveCounts(4000)), JSON.stringify(result.approximateRecoveries));
    assert.equal(result.approximateRecoveries?.[1]?.recordsLost, 0, JSON.stringify(result.approximateRecoveries));
  });

  it('weft run --workers 2: a source failing at its end, after the final checkpoint, loses nothing (network shuffle, real worker processes)', { timeout: 120_000 }, async () => {
    await inTempDir('weft-approx-finished-', async (dir) => {
      const output = join(dir, 'counts.tsv');
      // words#0 has 16,422 records: the fault past them fires at its end, when the other sources have finished
      const { code, stdout, stderr } = await weftCli(['run', streamingWordCount, '--workers', '2', '--parallelism', '3', '--approximate-recovery', '--checkpoint-mode', 'at-least-once', '--checkpoint-interval', '100ms', '--inject-faults', 'throw:words#0@16600', '--', '--records', '50000', '--rate', '20000', '--output', output], dir);
      assert.equal(code, 0, stderr);
      assert.match(stdout, /approximate recovery of words#0/);
      const counts = await countsInFile(output);
      assert.deepEqual(sorted(counts), sorted(naiveCounts(50_000, streamWord)), stdout);
    });
  });

  it('weft run --workers 2: a worker SIGKILLed after its sources finished takes their partitions along: they restart with the consumers that read them, and nothing is lost', { timeout: 120_000 }, async () => {
    await inTempDir('weft-approx-finished-kill-', async (dir) => {
      const output = join(dir, 'counts.tsv');
      const summary = join(dir, 'summary.json');
      // count#0 gets its first record only after the sources' final checkpoint: they have all finished when
      // its worker (which ran one of them) is killed
      const run = await weftCli(['run', streamingWordCount, '--workers', '2', '--parallelism', '3', '--approximate-recovery', '--checkpoint-mode', 'at-least-once', '--checkpoint-interval', '100ms', '--inject-faults', 'kill-worker:count#0@3', '--json', '--', '--records', '50000', '--rate', '20000', '--output', output], dir);
      assert.equal(run.code, 0, run.stderr);
      await writeFile(summary, run.stdout);
      const result = JSON.parse(run.stdout) as { failovers: { failedTask: string; lostPartitions: string[]; tasksToRestart: string[] }[] };
      const lost = result.failovers.flatMap((f) => f.lostPartitions);
      assert.ok(lost.length > 0 && lost.every((p) => p.startsWith('words->count#')), `the killed worker's finished sources' partitions are named lost: ${JSON.stringify(result.failovers)}`);
      for (const failover of result.failovers) {
        const plan = await weftCli(['plan', summary, '--json', '--fail', failover.failedTask, ...failover.lostPartitions.flatMap((p) => ['--lost', p])], dir);
        assert.equal(plan.code, 0, plan.stderr);
        assert.deepEqual((JSON.parse(plan.stdout) as { restart: string[] }).restart, failover.tasksToRestart, 'weft plan --fail --lost predicts the failover');
      }
      const counts = await countsInFile(output);
      assert.deepEqual(sorted(counts), sorted(naiveCounts(50_000, streamWord)), run.stderr);
    });
  });

  it('weft run --workers 2: the losses the summary reports — each recovery and the tasks restarted with it — add up to the shortfall, each new attempt counted once', { timeout: 120_000 }, async () => {
    await inTempDir('weft-approx-sum-', async (dir) => {
      const output = join(dir, 'counts.tsv');
      // no checkpoints and no combiner: a worker dies mid-stream with several tasks (count#0's: with a source; words#0's:
      // with another source, whose two failovers restart the same counts); everything the restarted counts had
      // counted is lost
      const job = fileURLToPath(new URL('../../../examples/test/support/approximate-count-job.ts', import.meta.url));
      for (const fault of ['kill-worker:count#0@2000', 'kill-worker:words#0@5000']) {
        const run = await weftCli(['run', job, '--workers', '2', '--parallelism', '3', '--approximate-recovery', '--inject-faults', fault, '--json', '--', '--records', '30000', '--rate', '10000', '--output', output], dir);
        assert.equal(run.code, 0, run.stderr);
        const result = JSON.parse(run.stdout) as { approximateRecoveries: { task: string; failedAttempt: number; recordsLost?: number; restartedWith?: { task: string; recordsLost: number }[] }[] };
        const counted = [...(await countsInFile(output)).values()].reduce((a, b) => a + b, 0);
        const reported = result.approximateRecoveries.reduce((sum, r) => sum + (r.recordsLost ?? 0) + (r.restartedWith ?? []).reduce((n, c) => n + c.recordsLost, 0), 0);
        assert.ok(counted < 30_000, 'records were lost');
        assert.equal(reported, 30_000 - counted, `${fault}: ${JSON.stringify(result.approximateRecoveries)}`);
        const own = new Set(result.approximateRecoveries.map((r) => r.task));
        for (const r of result.approximateRecoveries) for (const c of r.restartedWith ?? []) assert.ok(!own.has(c.task), `${c.task} is reported in its own recovery, not again with ${r.task}'s`);
      }
    });
  });
});
