// Approximate local recovery (issue 16) on two real worker processes over the network pipelined shuffle:
// count#0's worker is SIGKILLed at its record AT; only count#0 restarts (on the surviving worker), the
// source and count#1 there keep running; its new attempt is told where its producer is, the source drops
// what it writes for count#0 meanwhile, and what is lost is what the counters saw plus at most what was in
// flight to the killed process. Also the failover set against `weft plan --fail` on the same topology.
import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { runCli } from '@weft/cli';
import { type FaultInjectorFactory, type JobProgress, runJob } from '@weft/engine';
import { createMemoryShuffleServiceFactory } from '@weft/shuffle-memory';
import { createNetworkShuffleServiceFactory } from '@weft/shuffle-network';
import { WORDS, wordOf } from './fixtures/approximate-workers-job.js';
import { APPROXIMATE_WORKERS_JOB as fixture, killWorkerOnce, NETWORK, runApproximateOnWorkers } from './helpers/approximate-workers-run.js';

const diamond = fileURLToPath(new URL('./fixtures/approximate-diamond-job.ts', import.meta.url));

/** Most records one buffer holds: a record takes its 4-byte header and at least one byte. */
const RECORDS_PER_BUFFER = Math.floor(NETWORK.bufferSizeBytes / 5);

/** Throws in `task`'s first attempt at its record `atRecord`. */
const throwOnce = (task: string, atRecord: number): FaultInjectorFactory => () => ({
  taskFault: ({ executionVertexId, attempt }) => (executionVertexId === task && attempt === 0 ? { kind: 'throw', atRecord } : undefined),
});


async function weft(args: string[], cwd: string): Promise<{ code: number; stdout: string; stderr: string }> {
  let stdout = '';
  let stderr = '';
  const code = await runCli(args, { stdout: { write: (t: string) => (stdout += t) }, stderr: { write: (t: string) => (stderr += t) }, cwd, env: {} });
  return { code, stdout, stderr };
}

describe('approximate recovery on worker processes (network pipelined shuffle)', () => {
  it("restarts only the killed worker's task while the other worker's tasks keep running, and loses what the counters saw plus at most what was in flight to it", async () => {
    const N = 8000;
    const AT = 300;
    // workers report progress every 250 ms: the window holds a few of their reports
    const DELAY_MS = 800;
    const dir = await mkdtemp(join(tmpdir(), 'weft-approx-workers-'));
    const samples: JobProgress[] = [];
    const deployedOn = new Map<string, string>();
    try {
      // the restart waits DELAY_MS: the window in which the rest of the job must keep flowing
      const result = await runApproximateOnWorkers({
        count: N,
        rate: 4000,
        killAt: AT,
        delayMs: DELAY_MS,
        onProgress: (p) => samples.push(p),
        eventListener: { onJobEvent: (e) => void (e.type === 'task-deployed' && deployedOn.set(`${e.data.executionVertexId}@${e.data.attempt}`, e.data.executor ?? '?')) },
        cwd: dir,
      });
      assert.equal(result.status, 'succeeded', result.error?.message);
      const killed = deployedOn.get('count#0@0');
      assert.deepEqual(result.executorsLost.map((l) => l.taskExecutorId), [killed], "count#0's worker was lost");
      assert.ok(deployedOn.get('generate#0@0') !== killed && deployedOn.get('count#1@0') === deployedOn.get('generate#0@0'), `the source and count#1 on the other worker: ${JSON.stringify([...deployedOn])}`);
      assert.ok(deployedOn.get('count#0@1') !== undefined && deployedOn.get('count#0@1') !== killed, 'count#0 restarted on a live worker');
      assert.deepEqual(result.failovers.map((f) => f.tasksToRestart), [['count#0']], 'only the task of the killed worker restarts');
      assert.deepEqual(result.taskAttempts, { 'generate#0': 0, 'count#0': 1, 'count#1': 0 });

      // every record well formed, each word once
      const counts = new Map<string, number>();
      for (const record of result.collected['counts'] ?? []) {
        assert.ok(Array.isArray(record) && record.length === 2, `a malformed record: ${JSON.stringify(record)}`);
        const [word, n] = record as [unknown, unknown];
        assert.ok(typeof word === 'string' && WORDS.includes(word), `a malformed word: ${JSON.stringify(word)}`);
        assert.ok(Number.isSafeInteger(n) && (n as number) > 0, `a malformed count: ${JSON.stringify(n)}`);
        assert.equal(counts.has(word), false, `${word} counted twice`);
        counts.set(word, n as number);
      }

      // the other worker's tasks kept going while count#0 had no attempt (before its restart was deployed)
      const failedAt = (result.failovers[0] as { atMs: number }).atMs;
      const during = samples.filter((s) => s.elapsedMs > failedAt && s.elapsedMs < failedAt + DELAY_MS - 50);
      const countIn = (s: JobProgress): number => s.vertices?.find((v) => v.id === 'count')?.recordsIn ?? 0;
      const generated = (s: JobProgress): number => s.vertices?.find((v) => v.id === 'generate')?.recordsOut ?? 0;
      assert.ok(during.length >= 2, `progress samples during the recovery: ${during.length}`);
      const [first, last] = [during[0] as JobProgress, during.at(-1) as JobProgress];
      assert.ok(countIn(last) > countIn(first), `count#1 kept reading: ${countIn(first)} -> ${countIn(last)}`);
      assert.ok(generated(last) > generated(first), `the source kept producing: ${generated(first)} -> ${generated(last)}`);

      // lost = count#0's first attempt's state (AT records: no checkpoint) + what the source's writer counted
      // as dropped for it (its subpartition's counter, from the worker's task metrics) + what died unread
      // with the killed process (on the wire or in its gate: at most its credits' worth of buffers, plus the
      // rest of the batch it was in)
      const [recovery, ...more] = result.approximateRecoveries ?? [];
      assert.equal(more.length, 0);
      assert.ok(recovery !== undefined);
      assert.equal(recovery.task, 'count#0');
      assert.ok(recovery.durationMs !== undefined, 'the new attempt read again');
      assert.ok(recovery.recordsDroppedUpstream > 0, `the source kept producing for count#0 while it was down: ${JSON.stringify(recovery)}`);
      assert.ok(recovery.recordsProcessedByFailedAttempt <= AT, `as last reported before the kill: ${recovery.recordsProcessedByFailedAttempt}`);
      const lost = N - [...counts.values()].reduce((a, b) => a + b, 0);
      const unseen = lost - AT - recovery.recordsDroppedUpstream;
      const inFlight = (NETWORK.buffersPerChannel + NETWORK.floatingBuffersPerGate + 1) * RECORDS_PER_BUFFER;
      assert.ok(unseen >= 0 && unseen <= inFlight, `lost ${lost} = ${AT} processed + ${recovery.recordsDroppedUpstream} dropped upstream + ${unseen} in flight (at most ${inFlight}): ${JSON.stringify(recovery)}`);
      // and the whole loss is counted, in flight included: the new attempt's count (its state read the
      // subpartition from 0; channel-resumed says where it reads on) equals the naive count's shortfall
      assert.equal(recovery.recordsLost, lost, `the summary's recordsLost against the naive count: ${JSON.stringify(recovery)}`);
      // count#1 lost nothing: its words are counted exactly
      const reference = new Map<string, number>();
      for (let seq = 0; seq < N; seq++) reference.set(wordOf(seq), (reference.get(wordOf(seq)) ?? 0) + 1);
      const exact = [...counts].filter(([word, n]) => reference.get(word) === n);
      assert.ok(exact.length > 0 && exact.length < reference.size, `count#1's words are exact, count#0's lost records: ${exact.length} of ${reference.size}`);

      // `weft plan --fail count#0` on the same topology restarts what the job master restarted
      await writeFile(join(dir, 'topology.json'), JSON.stringify(result.topology));
      const plan = await weft(['plan', 'topology.json', '--fail', 'count#0', '--json'], dir);
      assert.equal(plan.code, 0, plan.stderr);
      const planned = JSON.parse(plan.stdout) as { regions: string[][]; restart: string[] };
      assert.equal(planned.regions.length, 3, 'a region per task');
      assert.deepEqual([...planned.restart].sort(), ['count#0']);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('tells the restarted consumer where the restarted producer runs now: v2 throws, v2 and v4 restart as `weft plan --fail` says, v4 reads v2 again and v3 throughout', async () => {
    const N = 2000;
    const dir = await mkdtemp(join(tmpdir(), 'weft-approx-workers-'));
    try {
      const memory = createMemoryShuffleServiceFactory();
      const result = await runJob({
        job: diamond,
        args: ['--count', String(N), '--rate', '4000'],
        parallelism: 1,
        executor: 'workers',
        workers: 2,
        exchangeMode: 'ALL_EDGES_PIPELINED_APPROXIMATE',
        // short: a channel of v4 not told v2's new attempt fails v4 again (a second failover) instead of hanging
        shuffle: { pipelined: createNetworkShuffleServiceFactory({ ...NETWORK, reconnectTimeoutMs: 3000 }), blocking: memory },
        restartStrategy: { type: 'fixed-delay', attempts: 2, delayMs: 0 },
        faults: throwOnce('v2#0', 100),
        cwd: dir,
      });
      assert.equal(result.status, 'succeeded', result.error?.message);
      assert.deepEqual(result.placement.tasksPerExecutor, { 'worker-0': 2, 'worker-1': 4 }, 'v1 and v3 on worker-0; v2 and v4 on worker-1, twice');
      const expected = ['v2#0', 'v4#0']; // DESIGN.md: approximate inputs are available; consumers restart
      assert.deepEqual(result.failovers.map((f) => [...f.tasksToRestart].sort()), [expected], 'one failover: v4 reconnected to v2 without failing again');
      assert.deepEqual(result.taskAttempts, { 'v1#0': 0, 'v2#0': 1, 'v3#0': 0, 'v4#0': 1 });
      const out = result.collected['out'] ?? [];
      for (const record of out) assert.ok(typeof record === 'string' && /^\d+:x{600}$/.test(record), `a malformed record: ${String(record).slice(0, 40)}…`);
      // v4's new attempt read from v3 (it never stopped) and from v2's new attempt
      assert.ok(out.length > N, `v4 wrote ${out.length} records: v3's whole stream reached its first attempt or its second`);
      assert.equal(result.approximateRecoveries?.length, 1);

      await writeFile(join(dir, 'topology.json'), JSON.stringify(result.topology));
      const plan = await weft(['plan', 'topology.json', '--fail', 'v2#0', '--json'], dir);
      assert.equal(plan.code, 0, plan.stderr);
      const planned = JSON.parse(plan.stdout) as { restart: string[] };
      assert.deepEqual([...planned.restart].sort(), expected);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it("fails a consumer whose restarted producer is not back within the network's reconnectTimeoutMs through the ordinary path (SHF_ERR_TIMEOUT, retryable): it restarts and reads again", async () => {
    const dir = await mkdtemp(join(tmpdir(), 'weft-approx-workers-'));
    try {
      // v2's second deployment is held back 1500 ms after its new attempt was registered: v4's new attempt,
      // deployed with v2's old attempt, waits 500 ms for the new one to be named and fails
      const holdBack: FaultInjectorFactory = () => ({
        taskFault: ({ executionVertexId, attempt }) => (executionVertexId === 'v2#0' && attempt === 0 ? { kind: 'throw', atRecord: 100 } : undefined),
        beforeDeploy: async ({ tasks }) => {
          if (tasks.some((t) => t.executionVertexId === 'v2#0' && t.attempt === 1)) await new Promise((resolve) => setTimeout(resolve, 1500));
        },
      });
      const memory = createMemoryShuffleServiceFactory();
      const result = await runJob({
        job: diamond,
        args: ['--count', '3000', '--rate', '4000'],
        parallelism: 1,
        executor: 'workers',
        workers: 2,
        exchangeMode: 'ALL_EDGES_PIPELINED_APPROXIMATE',
        shuffle: { pipelined: createNetworkShuffleServiceFactory({ ...NETWORK, reconnectTimeoutMs: 500 }), blocking: memory },
        restartStrategy: { type: 'fixed-delay', attempts: 3, delayMs: 0 },
        faults: holdBack,
        cwd: dir,
      });
      assert.equal(result.status, 'succeeded', result.error?.message);
      const [thrown, ...timedOut] = result.failovers;
      assert.deepEqual([...(thrown?.tasksToRestart ?? [])].sort(), ['v2#0', 'v4#0']);
      assert.ok(timedOut.length >= 1, 'v4 failed again while v2 was held back');
      for (const f of timedOut) {
        assert.equal(f.error.code, 'SHF_ERR_TIMEOUT', f.error.message);
        assert.match(f.error.message, /reconnectTimeoutMs/);
        assert.deepEqual(f.tasksToRestart, ['v4#0'], 'only the consumer that timed out restarts');
      }
      for (const record of result.collected['out'] ?? []) assert.ok(typeof record === 'string' && /^\d+:x{600}$/.test(record), `a malformed record: ${String(record).slice(0, 40)}…`);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
