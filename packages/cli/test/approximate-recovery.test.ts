// Approximate local recovery (issue 16, Flink FLIP-135) in process over the in-memory shuffle: every edge
// PIPELINED_APPROXIMATE, so a failed task restarts alone (with its consumers) while the rest of the job keeps
// running; what it loses is counted by the shuffle and reported. Also `weft run --approximate-recovery`'s
// summary and refusals, and `weft plan --fail` against what the job master restarted.
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { runCli } from '@weft/cli';
import { defineJob, type FaultInjectorFactory, InMemoryCheckpointStorage, isEngineError, type JobProgress, type JobResult, runJob } from '@weft/engine';
import { createMemoryShuffleServiceFactory } from '@weft/shuffle-memory';

const WORDS = ['alpha', 'beta', 'gamma', 'delta', 'epsilon', 'zeta', 'eta', 'theta', 'iota', 'kappa', 'lambda'];
const wordOf = (seq: number): string => WORDS[(seq * 7 + (seq >> 3)) % WORDS.length] as string;
const fixture = fileURLToPath(new URL('./fixtures/approximate-job.ts', import.meta.url));
const twoPhaseFixture = fileURLToPath(new URL('./fixtures/two-phase-commit-workers-job.ts', import.meta.url));

const wordCount = (count: number, ratePerSecond: number) =>
  defineJob((ctx) => {
    ctx.generate(wordOf, { count, splits: 4, ratePerSecond }).keyBy((w) => w).count({ combine: false }).collect('counts');
  }, { name: 'approximate-word-count' });

/** Throws in `task`'s first attempt at its record `atRecord`. */
const throwOnce = (task: string, atRecord: number): FaultInjectorFactory => () => ({
  taskFault: ({ executionVertexId, attempt }) => (executionVertexId === task && attempt === 0 ? { kind: 'throw', atRecord } : undefined),
});

// small buffers, so records travel while the sources run; few credits, so little is in flight at a gate
const SHUFFLE = { bufferSizeBytes: 256, buffersPerPartition: 8, buffersPerChannel: 2, floatingBuffersPerGate: 2 };
/** Most records one buffer can hold: a record takes its 4-byte header and at least one byte. */
const RECORDS_PER_BUFFER = Math.floor(SHUFFLE.bufferSizeBytes / 5);

/** Every collected record a [word, count > 0] pair, each word once. */
function countsOf(result: JobResult): Map<string, number> {
  assert.equal(result.status, 'succeeded', result.error?.message);
  const counts = new Map<string, number>();
  for (const record of result.collected['counts'] ?? []) {
    assert.ok(Array.isArray(record) && record.length === 2, `a malformed record: ${JSON.stringify(record)}`);
    const [word, n] = record as [unknown, unknown];
    assert.ok(typeof word === 'string' && WORDS.includes(word), `a malformed word: ${JSON.stringify(word)}`);
    assert.ok(Number.isSafeInteger(n) && (n as number) > 0, `a malformed count: ${JSON.stringify(n)}`);
    assert.equal(counts.has(word), false, `${word} counted twice`);
    counts.set(word, n as number);
  }
  return counts;
}

function run(request: { count: number; rate: number; fault: FaultInjectorFactory; delayMs?: number; onProgress?: (p: JobProgress) => void; checkpointIntervalMs?: number; exchangeMode?: 'ALL_EDGES_PIPELINED_APPROXIMATE' | 'ALL_EDGES_PIPELINED'; approximateReplayBytes?: number }): Promise<JobResult> {
  const memory = createMemoryShuffleServiceFactory({ ...SHUFFLE, ...(request.approximateReplayBytes === undefined ? {} : { approximateReplayBytes: request.approximateReplayBytes }) });
  return runJob({
    job: wordCount(request.count, request.rate),
    parallelism: 2,
    exchangeMode: request.exchangeMode ?? 'ALL_EDGES_PIPELINED_APPROXIMATE',
    shuffle: { pipelined: memory, blocking: memory },
    restartStrategy: { type: 'fixed-delay', attempts: 2, delayMs: request.delayMs ?? 0 },
    faults: request.fault,
    ...(request.checkpointIntervalMs === undefined ? {} : { checkpointing: { intervalMs: request.checkpointIntervalMs, mode: 'at-least-once', storage: new InMemoryCheckpointStorage() } }),
    ...(request.onProgress === undefined ? {} : { onProgress: request.onProgress, progressIntervalMs: 5 }),
  });
}

describe('approximate recovery, in process', () => {
  it('restarts only the failed count task while the others keep running, and loses exactly what the summary reports: what it had processed, what was dropped for it upstream and the rest of its last batch', async () => {
    const N = 3000;
    const AT = 200;
    const samples: JobProgress[] = [];
    // the restart waits 150 ms: the window in which the rest of the job must keep flowing
    const result = await run({ count: N, rate: 6000, fault: throwOnce('count#0', AT), delayMs: 150, onProgress: (p) => samples.push(p) });
    const counts = countsOf(result);
    assert.deepEqual(result.failovers.map((f) => f.tasksToRestart), [['count#0']], 'only the failed task restarts');
    assert.deepEqual(result.taskAttempts, { 'generate#0': 0, 'generate#1': 0, 'count#0': 1, 'count#1': 0 });
    const [recovery, ...more] = result.approximateRecoveries ?? [];
    assert.equal(more.length, 0);
    assert.ok(recovery !== undefined);
    assert.equal(recovery.task, 'count#0');
    assert.equal(recovery.failedAttempt, 0);
    assert.ok(recovery.durationMs !== undefined, 'the new attempt read again');
    assert.equal(recovery.partialRecordsDiscardedDownstream, 0, 'count#0 has no consumer gate: its sink is chained');
    assert.ok(recovery.recordsDroppedUpstream > 0, 'the sources kept producing for count#0 while it was down');

    // the other tasks' output kept growing while count#0 was down
    const failedAt = (result.failovers[0] as { atMs: number }).atMs;
    const during = samples.filter((s) => s.elapsedMs > failedAt && s.elapsedMs < failedAt + 150);
    const countIn = (s: JobProgress): number => s.vertices?.find((v) => v.id === 'count')?.recordsIn ?? 0;
    const generated = (s: JobProgress): number => s.vertices?.find((v) => v.id === 'generate')?.recordsOut ?? 0;
    assert.ok(during.length >= 2, `progress samples during the recovery: ${during.length}`);
    const [first, last] = [during[0] as JobProgress, during.at(-1) as JobProgress];
    assert.ok(countIn(last) > countIn(first), `count#1 kept reading: ${countIn(first)} -> ${countIn(last)}`);
    assert.ok(generated(last) > generated(first), `the sources kept producing: ${generated(first)} -> ${generated(last)}`);

    // lost = what count#0's first attempt had processed (no checkpoint: its state is gone) + what upstream
    // lost for it (the shuffle's counters: dropped while it was down, sent to its gate unread, records it had
    // begun) + the rest of the batch it was processing when it threw — each as the summary reports it
    const lost = N - [...counts.values()].reduce((a, b) => a + b, 0);
    assert.equal(recovery.recordsProcessedByFailedAttempt, AT, 'the fault fired at its record AT');
    assert.ok(recovery.recordsUnprocessedByFailedAttempt <= RECORDS_PER_BUFFER, `the rest of one batch: ${recovery.recordsUnprocessedByFailedAttempt}`);
    assert.equal(lost, recovery.recordsProcessedByFailedAttempt + recovery.recordsDroppedUpstream + recovery.recordsUnprocessedByFailedAttempt, `lost ${lost}: ${JSON.stringify(recovery)}`);
    assert.equal(recovery.recordsLost, lost, `the new attempt's own count of what its state never saw: ${JSON.stringify(recovery)}`);
    // count#1 lost nothing: its keys are counted exactly
    const reference = new Map<string, number>();
    for (let seq = 0; seq < N; seq++) reference.set(wordOf(seq), (reference.get(wordOf(seq)) ?? 0) + 1);
    const exact = [...counts].filter(([word, n]) => reference.get(word) === n);
    assert.ok(exact.length > 0 && exact.length < reference.size, `some words (count#1's) are exact, others (count#0's) lost records: ${exact.length} of ${reference.size}`);
  });

  it("reports per failover when the failed task read again, by its new attempt's own report, for a single-task and a region restart alike", async () => {
    // the restart waits 100 ms: the new attempt cannot read before that, so a figure under it was not measured from the failover
    for (const exchangeMode of ['ALL_EDGES_PIPELINED_APPROXIMATE', 'ALL_EDGES_PIPELINED'] as const) {
      const result = await run({ count: 1500, rate: 6000, fault: throwOnce('count#0', 100), delayMs: 100, exchangeMode });
      countsOf(result);
      assert.equal(result.failoverResumes.length, 1, exchangeMode);
      const [resume] = result.failoverResumes;
      assert.equal(resume?.failedTask, 'count#0');
      assert.equal(resume?.attemptId, 'count#0@0');
      assert.ok(resume?.resumedAfterMs !== undefined && resume.resumedAfterMs >= 95, `${exchangeMode}: ${JSON.stringify(resume)}`);
      // every restarted task: count#0 alone, or the whole job (2 sources, 2 counts); they all read again, none before the failed one's restart
      const restarted = result.failovers[0]?.tasksToRestart ?? [];
      assert.equal(restarted.length, exchangeMode === 'ALL_EDGES_PIPELINED' ? 4 : 1, `${exchangeMode}: ${JSON.stringify(restarted)}`);
      assert.equal(resume.tasksRestarted, restarted.length);
      assert.ok(resume.allResumedAfterMs !== undefined && resume.allResumedAfterMs >= resume.resumedAfterMs, `${exchangeMode}: ${JSON.stringify(resume)}`);
      assert.ok(resume.lastResumedTask !== undefined && restarted.includes(resume.lastResumedTask), `${exchangeMode}: ${JSON.stringify(resume)}`);
      if (exchangeMode === 'ALL_EDGES_PIPELINED_APPROXIMATE') {
        assert.equal(resume.allResumedAfterMs, resume.resumedAfterMs, 'a single-task recovery: the failed task is every restarted task');
        const durationMs = result.approximateRecoveries?.[0]?.durationMs;
        assert.ok(durationMs !== undefined && durationMs >= 95, `the recovery ends with the same report: ${durationMs}`);
      }
    }
  });

  it("restores the restarted task from the latest completed checkpoint, its producers replaying from its restored positions (their upstream backup): it counts every word exactly", async () => {
    const N = 3000;
    const result = await run({ count: N, rate: 6000, fault: throwOnce('count#0', 600), checkpointIntervalMs: 20 });
    const counts = countsOf(result);
    assert.deepEqual(result.failovers.map((f) => f.tasksToRestart), [['count#0']]);
    assert.equal(result.checkpoints?.tasksRestored, 1, 'count#0 alone restored, from a checkpoint');
    const reference = new Map<string, number>();
    for (let seq = 0; seq < N; seq++) reference.set(wordOf(seq), (reference.get(wordOf(seq)) ?? 0) + 1);
    assert.deepEqual(new Map([...counts].sort()), new Map([...reference].sort()), 'no record lost, none counted twice');
    const recovery = result.approximateRecoveries?.[0];
    assert.equal(recovery?.recordsLost, 0, JSON.stringify(recovery));
    assert.equal(recovery?.recordsDroppedUpstream, 0, JSON.stringify(recovery));
  });

  it('restores the restarted task from the latest completed checkpoint without an upstream backup (approximateReplayBytes 0): it loses less than it read', async () => {
    const N = 3000;
    const AT = 600;
    const result = await run({ count: N, rate: 6000, fault: throwOnce('count#0', AT), checkpointIntervalMs: 20, approximateReplayBytes: 0 });
    const counts = countsOf(result);
    assert.deepEqual(result.failovers.map((f) => f.tasksToRestart), [['count#0']]);
    assert.equal(result.checkpoints?.mode, 'at-least-once', 'approximate recovery takes at-least-once checkpoints');
    assert.equal(result.checkpoints?.tasksRestored, 1, 'count#0 alone restored, from a checkpoint');
    const recovery = result.approximateRecoveries?.[0];
    assert.ok(recovery !== undefined);
    const lost = N - [...counts.values()].reduce((a, b) => a + b, 0);
    // without the checkpoint it would lose all AT records it read; the restored state keeps some of them
    assert.ok(lost > 0 && lost >= recovery.recordsDroppedUpstream && lost < AT + recovery.recordsDroppedUpstream, `lost ${lost}, dropped ${recovery.recordsDroppedUpstream}, read ${AT}`);
    // exactly: from how far the restored checkpoint had read each channel to where the channel resumed
    assert.equal(recovery.recordsLost, lost, `recordsLost against the naive count: ${JSON.stringify(recovery)}`);
  });

  it('restarts a consumer whose producers already finished without them: it is served their end again, and counts all it lacks', async () => {
    // a bounded stream read whole before count#0 fails (a fault past its last record fires at its end): the
    // sources finished and their end went to count#0's first attempt
    const memory = createMemoryShuffleServiceFactory(SHUFFLE);
    const result = await runJob({ job: wordCount(500, 100_000), parallelism: 2, exchangeMode: 'ALL_EDGES_PIPELINED_APPROXIMATE', shuffle: { pipelined: memory, blocking: memory }, restartStrategy: { type: 'fixed-delay', attempts: 2, delayMs: 0 }, faults: throwOnce('count#0', 1_000_000) });
    const counts = countsOf(result);
    assert.deepEqual(result.failovers.map((f) => f.tasksToRestart), [['count#0']], 'the finished sources are not restarted');
    assert.ok(counts.size > 0 && counts.size < WORDS.length, `count#1's words only: ${[...counts.keys()].join(', ')}`);
    assert.equal(result.approximateRecoveries?.[0]?.task, 'count#0');
    // no checkpoint: the new attempt's state starts empty, and the finished sources' subpartitions tell it they
    // resume after everything they wrote — every record count#0 had got is lost, and counted
    const lost = 500 - [...counts.values()].reduce((a, b) => a + b, 0);
    assert.ok(lost > 0);
    assert.equal(result.approximateRecoveries?.[0]?.recordsLost, lost, JSON.stringify(result.approximateRecoveries));
  });

  it('fails a task that does not reconnect to its approximate inputs within the timeout through the ordinary failover path', async () => {
    // generate#0's first deployment is held back 500 ms (before its partition is registered); the count tasks wait
    // 50 ms for it and fail; restarted 600 ms later, they find it
    const holdBack: FaultInjectorFactory = () => ({
      beforeDeploy: async ({ tasks }) => {
        if (tasks.some((t) => t.executionVertexId === 'generate#0' && t.attempt === 0)) await new Promise((resolve) => setTimeout(resolve, 500));
      },
    });
    const memory = () => createMemoryShuffleServiceFactory(SHUFFLE);
    const request = { job: wordCount(300, 100_000), parallelism: 2, exchangeMode: 'ALL_EDGES_PIPELINED_APPROXIMATE' as const, approximateReconnectTimeoutMs: 50, faults: holdBack };
    const none = await runJob({ ...request, shuffle: { pipelined: memory(), blocking: memory() }, restartStrategy: { type: 'none' } });
    assert.equal(none.status, 'failed', 'no restart allowed: the job fails');
    assert.ok(isEngineError(none.error?.cause, 'WEFT_ERR_APPROXIMATE_RECONNECT_TIMEOUT') || /WEFT_ERR_APPROXIMATE_RECONNECT_TIMEOUT|did not reconnect/.test(String(none.error?.message)), String(none.error?.message));
    const pipelined = memory();
    const retried = await runJob({ ...request, shuffle: { pipelined, blocking: pipelined }, restartStrategy: { type: 'fixed-delay', attempts: 4, delayMs: 600 } });
    assert.equal(retried.status, 'succeeded', `${retried.error?.message} ${JSON.stringify(retried.failovers.map((f) => [f.error, f.tasksToRestart]))}`);
    assert.ok(retried.failovers.length >= 1 && retried.failovers.every((f) => f.error.code === 'WEFT_ERR_APPROXIMATE_RECONNECT_TIMEOUT'), JSON.stringify(retried.failovers.map((f) => f.error)));
    assert.ok(retried.failovers.every((f) => f.tasksToRestart.every((t) => t.startsWith('count#'))), 'only the tasks that timed out restart');
  });

  it('refuses exactly-once checkpoints, naming both options', async () => {
    const memory = createMemoryShuffleServiceFactory();
    const job = wordCount(10, 1000);
    await assert.rejects(
      runJob({ job, exchangeMode: 'ALL_EDGES_PIPELINED_APPROXIMATE', shuffle: { pipelined: memory, blocking: memory }, checkpointing: { intervalMs: 10, mode: 'exactly-once', storage: new InMemoryCheckpointStorage() } }),
      (error: unknown) => isEngineError(error, 'WEFT_ERR_APPROXIMATE_REFUSED') && /ALL_EDGES_PIPELINED_APPROXIMATE.*checkpointing\.mode 'exactly-once'/.test(error.message),
    );
  });
});

interface CliRun {
  code: number;
  stdout: string;
  stderr: string;
}

async function weft(args: string[], cwd: string): Promise<CliRun> {
  let stdout = '';
  let stderr = '';
  const code = await runCli(args, { stdout: { write: (t: string) => (stdout += t) }, stderr: { write: (t: string) => (stderr += t) }, cwd, env: {} });
  return { code, stdout, stderr };
}

describe('weft run --approximate-recovery', () => {
  it('reports each single-task recovery in the summary and in --json', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'weft-approx-'));
    try {
      const flags = ['run', fixture, '--approximate-recovery', '--parallelism', '2', '--inject-faults', 'throw:count#1@300', '--restart-strategy', 'fixed-delay', '--restart-attempts', '2', '--restart-delay', '0'];
      const json = await weft([...flags, '--json'], dir);
      assert.equal(json.code, 0, json.stderr);
      const summary = JSON.parse(json.stdout) as { exchangeMode: string; failovers: { tasksToRestart: string[] }[]; approximateRecoveries: Record<string, unknown>[] };
      assert.equal(summary.exchangeMode, 'ALL_EDGES_PIPELINED_APPROXIMATE');
      assert.deepEqual(summary.failovers.map((f) => f.tasksToRestart), [['count#1']]);
      assert.equal(summary.approximateRecoveries.length, 1);
      const recovery = summary.approximateRecoveries[0] as Record<string, unknown>;
      assert.deepEqual(Object.keys(recovery).sort(), ['durationMs', 'failedAttempt', 'partialRecordsDiscardedDownstream', 'recordsDroppedUpstream', 'recordsLost', 'recordsProcessedByFailedAttempt', 'recordsUnprocessedByFailedAttempt', 'task']);
      assert.equal(recovery['recordsProcessedByFailedAttempt'], 300, 'the fault fired at its record 300');
      assert.equal(recovery['task'], 'count#1');
      assert.ok(Number.isSafeInteger(recovery['durationMs']) && Number.isSafeInteger(recovery['recordsDroppedUpstream']));
      const plain = await weft(flags, dir);
      assert.equal(plain.code, 0, plain.stderr);
      assert.match(plain.stdout, /approximate recovery of count#1 \(attempt 0 failed\): read again after \d+ ms; \d+ records? lost to its state; \d+ records? dropped upstream, \d+ partial records? discarded downstream; the failed attempt had processed 300 and left \d+ unprocessed/);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('restarts as Flink does a checkpointed job when no restart flag is given (fixed-delay, Integer.MAX_VALUE attempts, 1 s), not never — approximate or checkpointed', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'weft-approx-'));
    try {
      const run = await weft(['run', fixture, '--approximate-recovery', '--parallelism', '2', '--json'], dir);
      assert.equal(run.code, 0, run.stderr);
      assert.equal((JSON.parse(run.stdout) as { restartStrategy: string }).restartStrategy, 'FixedDelayRestartBackoffTimeStrategy(attempts=2147483647, delayMs=1000)');
      const chosen = await weft(['run', fixture, '--approximate-recovery', '--parallelism', '2', '--restart-strategy', 'none', '--json'], dir);
      assert.equal((JSON.parse(chosen.stdout) as { restartStrategy: string }).restartStrategy, 'NoRestartBackoffTimeStrategy', 'a given strategy stands');
      // the same for a checkpointed job (Flink: checkpointing on and no strategy configured → fixed-delay)
      const checkpointed = await weft(['run', fixture, '--checkpoint-interval', '100ms', '--parallelism', '2', '--json'], dir);
      assert.equal(checkpointed.code, 0, checkpointed.stderr);
      assert.equal((JSON.parse(checkpointed.stdout) as { restartStrategy: string }).restartStrategy, 'FixedDelayRestartBackoffTimeStrategy(attempts=2147483647, delayMs=1000)');
      const plain = await weft(['run', fixture, '--executor', 'inprocess', '--parallelism', '2', '--json'], dir);
      assert.equal(plain.code, 0, plain.stderr);
      assert.equal((JSON.parse(plain.stdout) as { restartStrategy: string }).restartStrategy, 'NoRestartBackoffTimeStrategy', 'a batch run keeps none');
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('refuses --checkpoint-mode exactly-once, and --workers 2 or --cluster over the in-memory pipelined shuffle, with exit 2 naming both flags', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'weft-approx-'));
    try {
      const exactly = await weft(['run', fixture, '--approximate-recovery', '--checkpoint-interval', '100ms', '--checkpoint-mode', 'exactly-once'], dir);
      assert.equal(exactly.code, 2);
      assert.match(exactly.stderr, /--approximate-recovery cannot be combined with --checkpoint-mode exactly-once/);
      const workers = await weft(['run', fixture, '--exchange-mode', 'ALL_EDGES_PIPELINED_APPROXIMATE', '--workers', '2', '--pipelined-shuffle', 'memory'], dir);
      assert.equal(workers.code, 2);
      assert.match(workers.stderr, /--exchange-mode ALL_EDGES_PIPELINED_APPROXIMATE cannot be combined with --pipelined-shuffle memory/);
      const cluster = await weft(['run', fixture, '--approximate-recovery', '--cluster', 'redis://127.0.0.1:1/1', '--pipelined-shuffle', 'memory'], dir);
      assert.equal(cluster.code, 2);
      assert.match(cluster.stderr, /--approximate-recovery cannot be combined with --pipelined-shuffle memory: its tasks, a region each, read partitions produced on other task executors/);
      // an exactly-once sink (sinkTo): refused by the engine once the job is planned, before anything runs
      for (const flags of [['--approximate-recovery'], ['--exchange-mode', 'ALL_EDGES_PIPELINED_APPROXIMATE', '--workers', '2']]) {
        const sink = await weft(['run', twoPhaseFixture, ...flags, '--', '--dir', join(dir, 'committed')], dir);
        assert.equal(sink.code, 2, sink.stderr);
        assert.match(sink.stderr, /^weft run: approximate recovery .* cannot be combined with the exactly-once sink "sinkTo"/);
        assert.doesNotMatch(sink.stderr, /\n\s+at /, 'no stack trace');
        assert.equal(existsSync(join(dir, 'committed')), false, 'nothing written');
      }
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it("restarts what `weft plan --fail` says on DESIGN.md's approximate example (v2 fails: v2 and v4), and v4 drops v2's partial record", async () => {
    // v1→v2, v1→v3, v2→v4, v3→v4, parallelism 1, every edge PIPELINED_APPROXIMATE; records of 600 bytes and
    // more span several 256-byte buffers, so v4 holds part of one of v2's records when v2 fails
    const PAD = 'x'.repeat(600);
    const diamond = defineJob((ctx) => {
      const v1 = ctx.generate((seq) => `${seq}:${PAD}`, { count: 2000, splits: 1, ratePerSecond: 8000, name: 'v1' });
      const v2 = v1.map((x) => x, { name: 'v2', chaining: false });
      const v3 = v1.map((x) => x, { name: 'v3', chaining: false });
      v2.union(v3).map((x) => x, { name: 'v4', chaining: false }).collect('out');
    }, { name: 'approximate-diamond' });
    const memory = createMemoryShuffleServiceFactory(SHUFFLE);
    const result = await runJob({ job: diamond, parallelism: 1, exchangeMode: 'ALL_EDGES_PIPELINED_APPROXIMATE', shuffle: { pipelined: memory, blocking: memory }, restartStrategy: { type: 'fixed-delay', attempts: 2, delayMs: 0 }, faults: throwOnce('v2#0', 100) });
    assert.equal(result.status, 'succeeded', result.error?.message);
    for (const record of result.collected['out'] ?? []) assert.ok(typeof record === 'string' && /^\d+:x{600}$/.test(record), `a malformed record: ${String(record).slice(0, 40)}…`);
    const ids = result.topology.vertices.map((v) => v.id).sort();
    const edges = result.topology.edges.map((e) => `${e.source}->${e.target}:${e.partitionType}`).sort();
    assert.deepEqual(edges, ['v1->v2:PIPELINED_APPROXIMATE', 'v1->v3:PIPELINED_APPROXIMATE', 'v2->v4:PIPELINED_APPROXIMATE', 'v3->v4:PIPELINED_APPROXIMATE'], `vertices ${ids.join(', ')}`);
    const expected = ['v2#0', 'v4#0']; // by hand, DESIGN.md: approximate inputs are available; consumers restart
    assert.deepEqual(result.failovers.map((f) => [...f.tasksToRestart].sort()), [expected]);
    assert.equal(result.approximateRecoveries?.length, 1);
    assert.ok((result.approximateRecoveries?.[0]?.partialRecordsDiscardedDownstream ?? 0) >= 1, `v4's gate discarded v2's partial record: ${JSON.stringify(result.approximateRecoveries)}`);
    const dir = await mkdtemp(join(tmpdir(), 'weft-approx-plan-'));
    try {
      await writeFile(join(dir, 'topology.json'), JSON.stringify(result.topology));
      const plan = await weft(['plan', 'topology.json', '--fail', 'v2#0', '--json'], dir);
      assert.equal(plan.code, 0, plan.stderr);
      const planned = JSON.parse(plan.stdout) as { regions: string[][]; restart: string[] };
      assert.equal(planned.regions.length, 4, 'a region per task');
      assert.deepEqual([...planned.restart].sort(), expected);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
