// A checkpoint store that goes down while a streaming job runs on two real worker processes (`weft run
// --workers 2 --checkpoint-interval`): the workers cannot write their snapshots, the checkpoint fails (none
// tolerated), and the job master fails over globally, as Flink's failGlobal — every task restarts from the
// latest completed checkpoint once the restart strategy's 1 s backoff passed, by which time the store is
// back. The counts equal a naive count computed here. Then a store that stays down: the restarted tasks
// cannot read their checkpoint either, the restart strategy's attempts run out and the run fails (exit 1),
// naming the strategy and what the store said, without a stack trace. A store that cannot be written at
// all is refused at start.
import assert from 'node:assert/strict';
import { mkdir, mkdtemp, readdir, rename, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { runCli } from '@weft/cli';
import { wordOf } from './fixtures/streaming-checkpoint-workers-job.js';

const job = fileURLToPath(new URL('./fixtures/streaming-checkpoint-workers-job.ts', import.meta.url));
const COUNT = 30_000;

interface Summary {
  status: string;
  failures: number;
  restarts: number;
  failovers: { global?: boolean; failedTask?: string; strategy: string; error: { code?: string; message: string }; tasksToRestart: string[] }[];
  checkpoints: { completed: number; tasksRestored: number };
  collected: { counts?: [string, number][] };
}

function referenceCounts(): Map<string, number> {
  const counts = new Map<string, number>();
  for (let seq = 0; seq < COUNT; seq++) counts.set(wordOf(seq), (counts.get(wordOf(seq)) ?? 0) + 1);
  return counts;
}

/** Resolves once `check()` is true, polling every 20 ms; rejects after `ms`. */
async function until(what: string, check: () => boolean | Promise<boolean>, ms = 20_000): Promise<void> {
  const deadline = performance.now() + ms;
  while (!(await check())) {
    if (performance.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(20);
  }
}

describe('weft run --workers 2 --checkpoint-interval: a checkpoint store outage fails the job over globally', () => {
  let dir = '';
  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'weft-global-failover-'));
  });
  after(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  /** `weft run` in this process (its workers are processes); `stderr` grows as it runs. */
  function weft(jobId: string, args: string[]): { done: Promise<{ code: number; summary: Summary | undefined }>; stderr: () => string } {
    let stdout = '';
    let stderr = '';
    const stores = ['--store', pathToFileURL(join(dir, jobId, 'store')).href, '--meta', `sqlite://${join(dir, jobId, 'meta.db')}`];
    const argv = ['run', job, ...stores, '--job-id', jobId, '--workers', '2', '--parallelism', '2', '--checkpoint-interval', '100ms', '--json', ...args, '--', '--count', String(COUNT), '--rate', '6000'];
    const done = runCli(argv, { stdout: { write: (t: string) => (stdout += t) }, stderr: { write: (t: string) => (stderr += t) }, cwd: dir, env: {} }).then((code) => ({ code, summary: stdout === '' ? undefined : (JSON.parse(stdout) as Summary) }));
    return { done, stderr: () => stderr };
  }

  /**
   * Once a checkpoint completed (one checkpoint is retained: an older one's directory went away), makes the
   * job's checkpoint directory a file (writes under it fail with ENOTDIR); returns what puts it back.
   */
  async function takeDown(jobId: string, run: { stderr: () => string }): Promise<() => Promise<void>> {
    const checkpoints = join(dir, jobId, 'store', 'checkpoints', jobId);
    const seen = new Set<string>();
    await until('a completed checkpoint', async () => {
      if (/^(Job|error)/m.test(run.stderr())) throw new Error(`the run ended first: ${run.stderr()}`);
      const now = (await readdir(checkpoints).catch(() => [])).filter((name) => name.startsWith('chk-'));
      const gone = [...seen].some((name) => !now.includes(name));
      for (const name of now) seen.add(name);
      return gone;
    });
    await rename(checkpoints, `${checkpoints}.away`);
    await writeFile(checkpoints, 'down');
    return async () => {
      await rm(checkpoints);
      await rename(`${checkpoints}.away`, checkpoints);
    };
  }

  it('restarts every task from the latest completed checkpoint once the store is back; the counts are exact', { timeout: 60_000 }, async () => {
    const run = weft('outage', []);
    const bringBack = await takeDown('outage', run);
    await until('the global failover', () => /failed over globally \(WEFT_ERR_CHECKPOINT_FAILED\)/.test(run.stderr()));
    await bringBack();
    const { code, summary } = await run.done;
    assert.equal(code, 0, run.stderr());
    assert.ok(summary !== undefined);
    const global = summary.failovers.filter((f) => f.global === true);
    assert.ok(global.length >= 1, JSON.stringify(summary.failovers));
    assert.equal(global[0]?.strategy, 'all');
    assert.equal(global[0]?.failedTask, undefined);
    assert.deepEqual([...(global[0]?.tasksToRestart ?? [])].sort(), ['count#0', 'count#1', 'words#0', 'words#1']);
    assert.match(global[0]?.error.message ?? '', /ENOTDIR/, 'the cause names what the store said');
    assert.equal(summary.failures, 0, 'no task failed: only the job master');
    assert.ok(summary.checkpoints.tasksRestored >= 4, `the restarted tasks restored the checkpoint completed before the outage: ${JSON.stringify(summary.checkpoints)}`);
    assert.deepEqual(new Map(summary.collected.counts ?? []), referenceCounts());
  });

  it('refuses a store whose checkpoints cannot be written at all before anything runs (exit 2, one line)', { timeout: 60_000 }, async () => {
    await mkdir(join(dir, 'unwritable', 'store'), { recursive: true });
    await writeFile(join(dir, 'unwritable', 'store', 'checkpoints'), 'a file where the directory goes');
    const run = weft('unwritable', []);
    const { code, summary } = await run.done;
    assert.equal(code, 2, run.stderr());
    assert.equal(summary, undefined);
    assert.match(run.stderr(), /^weft run: invalid checkpointing\.storage: file:\/\/.*\/unwritable\/store cannot take a checkpoint's snapshots: .*ENOTDIR/);
    assert.equal(run.stderr().trim().split('\n').length, 1, run.stderr());
  });

  it('fails the run once the restart strategy allows no more restarts (exit 1), naming it and what the store said', { timeout: 60_000 }, async () => {
    const run = weft('down', ['--restart-strategy', 'fixed-delay', '--restart-attempts', '1', '--restart-delay', '100']);
    await takeDown('down', run);
    const { code, summary } = await run.done;
    assert.equal(code, 1, run.stderr());
    assert.equal(summary?.status, 'failed');
    assert.equal(summary?.failovers.length, 1, 'the one restart allowed');
    assert.equal(summary?.failovers[0]?.global, true);
    // the restarted tasks cannot read the checkpoint they restore from either: that failure ends it
    assert.match(run.stderr(), /recovery is suppressed by FixedDelayRestartBackoffTimeStrategy\(attempts=1, delayMs=100\): task \S+ failed: cannot restore job down from checkpoint \d+: a snapshot of vertex \S+ cannot be read from .*ENOTDIR/);
    assert.match(run.stderr(), /^caused by: ENOTDIR: /m);
    assert.doesNotMatch(run.stderr(), /\n\s+at .+\(.+:\d+:\d+\)/, 'no stack trace');
  });
});
