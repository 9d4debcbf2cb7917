// Recovery in the runtime: restart strategies deciding whether and when (and the job failing with
// "recovery is suppressed by <strategy>" and the root cause), the failover strategies deciding what, and
// task executors that die, freeze, or hold tasks that ignore cancellation.
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { defineJob, type FailoverRecord, isEngineError, type JobBuildFunction, type JobResult, type RestartStrategyOptions, type RunJobOptions, runJob } from '@weft/engine';
import { createMemoryShuffleServiceFactory } from '@weft/shuffle-memory';
import { createRemoteShuffleServiceFactory } from '@weft/shuffle-remote';

const fixtures = fileURLToPath(new URL('./fixtures/', import.meta.url));

function inProcess(build: JobBuildFunction, extra: Partial<RunJobOptions> = {}): Promise<JobResult> {
  const memory = createMemoryShuffleServiceFactory();
  return runJob({ job: defineJob(build), parallelism: 3, executor: 'inprocess', slotsPerExecutor: 2, shuffle: { pipelined: memory, blocking: memory }, ...extra });
}

/** A map that throws at record 100 of subtask 1 — in every attempt, or in attempt 0 only. */
function failing(always: boolean): JobBuildFunction {
  return (ctx) =>
    ctx
      .range(0, 3000, { name: 'numbers' })
      .map((x, runtime) => {
        if (runtime.subtask === 1 && x === 1100 && (always || runtime.attempt === 0)) throw new Error(always ? 'always fails' : 'fails once');
        return x;
      }, { name: 'fragile' })
      .keyBy((x) => x % 5)
      .reduce((a, b) => a + b, { parallelism: 2 })
      .collect('sums');
}

const expectedSums = Array.from({ length: 5 }, (_, k) => {
  let s = 0;
  for (let x = k; x < 3000; x += 5) s += x;
  return s;
}).sort((a, b) => a - b);

/** A clock 1 s further at each reading. */
function steppingClock(): () => number {
  let now = 0;
  return () => (now += 1000);
}

describe('restart strategies decide whether and when a failed job restarts', () => {
  const refusing: [string, RestartStrategyOptions, number, RegExp][] = [
    ['none (the default)', { type: 'none' }, 1, /recovery is suppressed by NoRestartBackoffTimeStrategy: task numbers#1@0 failed: /],
    ['fixed-delay', { type: 'fixed-delay', attempts: 2, delayMs: 1 }, 3, /recovery is suppressed by FixedDelayRestartBackoffTimeStrategy\(attempts=2, delayMs=1\): task numbers#1@2 failed: /],
    ['failure-rate', { type: 'failure-rate', maxFailuresPerInterval: 2, failureRateIntervalMs: 60_000, delayMs: 1 }, 3, /recovery is suppressed by FailureRateRestartBackoffTimeStrategy\(maxFailuresPerInterval=2, failureRateIntervalMs=60000, delayMs=1\): task numbers#1@2 failed: /],
    // Its clock jumps 1 s at each reading: a rerun failing within the millisecond its backoff ended would
    // otherwise be merged into that restart (not counted as an attempt), and fail once more than expected.
    ['exponential-delay', { type: 'exponential-delay', initialBackoffMs: 1, maxBackoffMs: 4, backoffMultiplier: 2, jitterFactor: 0, resetBackoffThresholdMs: 60_000, attemptsBeforeResetBackoff: 3, clock: steppingClock() }, 4, /recovery is suppressed by ExponentialDelayRestartBackoffTimeStrategy\(initialBackoffMs=1, maxBackoffMs=4, backoffMultiplier=2, resetBackoffThresholdMs=60000, jitterFactor=0, attemptsBeforeResetBackoff=3\): task numbers#1@3 failed: /],
  ];
  for (const [name, strategy, failures, message] of refusing) {
    it(`${name}: fails the job once it refuses, naming itself and the root cause`, async () => {
      const result = await inProcess(failing(true), { restartStrategy: strategy });
      assert.equal(result.status, 'failed');
      assert.equal(result.failures, failures);
      assert.equal(result.failovers.length, failures - 1, 'every failure but the last was a failover');
      assert.ok(isEngineError(result.error, 'WEFT_ERR_JOB_FAILED'));
      assert.match(String(result.error?.message), message);
      assert.match(String(result.error?.message), /operator "fragile" \(map\) function threw in subtask 1 of 3 \(attempt \d\): Error: always fails$/);
      assert.ok(isEngineError(result.error?.cause, 'WEFT_ERR_USER_FUNCTION_FAILED'), 'the root cause is kept');
      assert.equal(result.error?.context['restartStrategy'], result.restartStrategy);
      assert.deepEqual(result.collected, {});
    });
  }

  const allowing: [string, RestartStrategyOptions, number][] = [
    ['fixed-delay', { type: 'fixed-delay', attempts: 1, delayMs: 7 }, 7],
    ['failure-rate', { type: 'failure-rate', maxFailuresPerInterval: 1, failureRateIntervalMs: 60_000, delayMs: 3 }, 3],
    // A clock that stands still: the backoff Flink reports is what is left of it at the time of asking.
    ['exponential-delay', { type: 'exponential-delay', initialBackoffMs: 5, maxBackoffMs: 100, backoffMultiplier: 2, jitterFactor: 0, clock: () => 1_000_000 }, 5],
  ];
  for (const [name, strategy, backoffMs] of allowing) {
    it(`${name}: restarts the failed region after its backoff, and the job computes exactly`, async () => {
      const result = await inProcess(failing(false), { restartStrategy: strategy });
      assert.equal(result.status, 'succeeded', String(result.error?.stack));
      assert.deepEqual([...(result.collected['sums'] as number[])].sort((a, b) => a - b), expectedSums);
      assert.equal(result.failovers.length, 1);
      const [failover] = result.failovers;
      assert.equal(failover?.failedTask, 'numbers#1');
      assert.equal(failover?.attemptId, 'numbers#1@0');
      assert.equal(failover?.error.code, 'WEFT_ERR_USER_FUNCTION_FAILED');
      assert.match(failover?.error.message ?? '', /Error: fails once/);
      assert.equal(failover?.strategy, 'region');
      // Its region, and the consumer regions of its output (DESIGN.md): the reducers had not started yet,
      // so resetting them costs nothing — only the failed source task runs again.
      assert.deepEqual(failover?.tasksToRestart, ['numbers#1', 'reduce#0', 'reduce#1']);
      assert.deepEqual(failover?.tasksRunAgain, ['numbers#1']);
      assert.equal(failover?.backoffMs, backoffMs);
      assert.equal(result.taskAttempts['numbers#1'], 1);
      assert.equal(result.taskAttempts['numbers#0'], 0);
    });
  }
});

describe('each failover is told as it happens', () => {
  it('calls onFailover with the failover’s record before its tasks are deployed again', async () => {
    const events: string[] = [];
    const told: FailoverRecord[] = [];
    const result = await inProcess(failing(false), {
      restartStrategy: { type: 'fixed-delay', attempts: 1, delayMs: 1 },
      onFailover: (failover) => {
        told.push(failover);
        events.push(`failover ${failover.failedTask}`);
      },
      faults: () => ({ beforeDeploy: (d) => void events.push(`deploy ${d.tasks.map((t) => `${t.executionVertexId}@${t.attempt}`).join(',')}`) }),
    });
    assert.equal(result.status, 'succeeded', String(result.error?.stack));
    assert.deepEqual(told, result.failovers, 'the same records the result lists');
    assert.equal(told.length, 1);
    const failover = events.indexOf('failover numbers#1');
    const redeploy = events.findIndex((e) => e.startsWith('deploy numbers#1@1'));
    assert.ok(failover >= 0 && redeploy > failover, `told before the new attempt is deployed: ${events.join(' | ')}`);
  });

  it('keeps the job running when onFailover throws', async () => {
    const result = await inProcess(failing(false), {
      restartStrategy: { type: 'fixed-delay', attempts: 1, delayMs: 1 },
      onFailover: () => {
        throw new Error('a broken listener');
      },
    });
    assert.equal(result.status, 'succeeded', String(result.error?.stack));
    assert.deepEqual([...(result.collected['sums'] as number[])].sort((a, b) => a - b), expectedSums);
  });
});

describe('failover strategies decide which tasks restart', () => {
  it('all: restarts every task of the job', async () => {
    const result = await inProcess(failing(false), { restartStrategy: { type: 'fixed-delay', attempts: 1, delayMs: 1 }, failoverStrategy: 'all' });
    assert.equal(result.status, 'succeeded', String(result.error?.stack));
    assert.deepEqual([...(result.collected['sums'] as number[])].sort((a, b) => a - b), expectedSums);
    assert.equal(result.failovers[0]?.tasksToRestart.length, result.tasks);
    assert.ok(Object.values(result.taskAttempts).every((a) => a === 1));
  });

  it('individual: restarts only the failed task of a job whose tasks exchange no data', async () => {
    const result = await inProcess(
      (ctx) =>
        ctx
          .range(0, 900, { name: 'numbers' })
          .map((x, runtime) => {
            if (x === 450 && runtime.attempt === 0) throw new Error('once');
            return x * 2;
          }, { name: 'double' })
          .collect('doubled'),
      { restartStrategy: { type: 'fixed-delay', attempts: 1, delayMs: 1 }, failoverStrategy: 'individual' },
    );
    assert.equal(result.status, 'succeeded', String(result.error?.stack));
    assert.deepEqual(result.failovers.map((f) => f.tasksToRestart), [['numbers#1']]);
    assert.deepEqual(result.collected['doubled'], Array.from({ length: 900 }, (_, x) => x * 2));
  });

  it('individual: refuses, before running, a job whose tasks exchange data', async () => {
    await assert.rejects(inProcess(failing(false), { failoverStrategy: 'individual' }), (error: unknown) => isEngineError(error, 'WEFT_ERR_FAILOVER_STRATEGY_NOT_APPLICABLE'));
  });
});

describe('task executors that die, freeze or ignore cancellation', () => {
  async function withDir<T>(fn: (dir: string) => Promise<T>): Promise<T> {
    const dir = await mkdtemp(join(tmpdir(), 'weft-recovery-'));
    try {
      return await fn(dir);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  }

  function onWorkers(dir: string, job: string, args: string[], extra: Partial<RunJobOptions> = {}): Promise<JobResult> {
    return runJob({
      job: join(fixtures, job),
      args,
      parallelism: 2,
      executor: 'workers',
      workers: 2,
      shuffle: {
        pipelined: createMemoryShuffleServiceFactory(),
        blocking: createRemoteShuffleServiceFactory({ store: pathToFileURL(join(dir, 'shuffle')).href, meta: `sqlite://${join(dir, 'meta.db')}` }),
      },
      cwd: dir,
      ...extra,
    });
  }

  function sums(count: number): string {
    const out = Array.from({ length: 10 }, () => 0);
    for (let x = 0; x < count; x++) out[x % 10] = (out[x % 10] as number) + x;
    return out.map((s, k) => `${k}\t${s}`).sort().join('\n');
  }

  function isAlive(pid: number): boolean {
    try {
      process.kill(pid, 0);
      return true;
    } catch {
      return false;
    }
  }

  it('replaces the only worker when it dies, so the job still finishes', async () => {
    await withDir(async (dir) => {
      const result = await onWorkers(dir, 'failing-job.ts', ['--count', '20000', '--fail-at', '7777', '--kill', '--output', 'sums.tsv'], { workers: 1, restartStrategy: { type: 'fixed-delay', attempts: 2, delayMs: 1 } });
      assert.equal(result.status, 'succeeded', String(result.error?.stack));
      assert.equal((await readFile(join(dir, 'sums.tsv'), 'utf8')).trim().split('\n').sort().join('\n'), sums(20_000));
      assert.equal(result.executorsLost.length, 1);
      assert.equal(result.executorsLost[0]?.replaced, true);
      assert.equal(result.workerPids.length, 2, 'a second worker process was started');
      assert.equal(result.failovers[0]?.error.code, 'WEFT_ERR_TASK_EXECUTOR_LOST');
      for (const pid of result.workerPids) assert.equal(isAlive(pid), false);
    });
  });

  it('without replacements, fails the job once no worker is left', async () => {
    await withDir(async (dir) => {
      const result = await onWorkers(dir, 'failing-job.ts', ['--count', '20000', '--fail-at', '7777', '--kill', '--output', 'sums.tsv'], { workers: 1, replaceLostWorkers: false, restartStrategy: { type: 'fixed-delay', attempts: 2, delayMs: 1 } });
      assert.equal(result.status, 'failed');
      assert.match(String(result.error?.message), /no task executor is left: task executor worker-0 was lost: worker process \d+ exited with SIGKILL/);
      assert.equal(existsSync(join(dir, 'sums.tsv')), false);
    });
  });

  it('kills a frozen worker once it misses heartbeats, and restarts its tasks only after it is gone', async () => {
    await withDir(async (dir) => {
      const result = await onWorkers(dir, 'recovery-job.ts', ['--mode', 'stop', '--subtask', '1', '--at', '3000', '--output', 'sums.tsv'], {
        heartbeatIntervalMs: 100,
        heartbeatTimeoutMs: 3000,
        restartStrategy: { type: 'fixed-delay', attempts: 2, delayMs: 1 },
      });
      assert.equal(result.status, 'succeeded', String(result.error?.stack));
      assert.equal((await readFile(join(dir, 'sums.tsv'), 'utf8')).trim().split('\n').sort().join('\n'), sums(20_000));
      assert.equal(result.executorsLost.length, 1);
      assert.match(result.executorsLost[0]?.reason ?? '', /no heartbeat for 3000 ms \(heartbeatTimeoutMs\), so it was killed/);
      assert.deepEqual(result.failovers.map((f) => f.failedTask), ['numbers#1']);
      assert.ok((result.failovers[0]?.atMs ?? 0) >= (result.executorsLost[0]?.atMs ?? Infinity), 'the failover follows the loss');
      for (const pid of result.workerPids) assert.equal(isAlive(pid), false, `worker ${pid} is gone`);
    });
  });

  it('kills the worker of a task that ignores its cancellation, so a failing job ends', { timeout: 60_000 }, async () => {
    await withDir(async (dir) => {
      const result = await onWorkers(dir, 'recovery-job.ts', ['--mode', 'hang', '--subtask', '1', '--at', '500', '--marker', join(dir, 'hanging'), '--output', 'sums.tsv'], {
        heartbeatTimeoutMs: 120_000,
        cancelTimeoutMs: 300,
      });
      assert.equal(result.status, 'failed');
      assert.match(String(result.error?.message), /recovery is suppressed by NoRestartBackoffTimeStrategy: task numbers#0@0 failed: .*another subtask failed while the first one hangs/);
      assert.equal(result.executorsLost.length, 1, 'the hanging task’s worker was killed');
      assert.match(result.executorsLost[0]?.reason ?? '', /still ran 300 ms after they were cancelled \(cancelTimeoutMs\), so it was killed/);
      for (const pid of result.workerPids) assert.equal(isAlive(pid), false, `worker ${pid} is gone`);
    });
  });
});
