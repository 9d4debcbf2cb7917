// The restore's re-commit and its abort of lingering transactions, across processes: `weft run --workers 2
// --checkpoint-interval 100ms` on the two-phase-commit workers job, the worker running lines#1 SIGKILLed at
// an exact moment of a checkpoint (--inject-faults):
// - kill-worker-before-commit:lines#1@3 — checkpoint 3 completed, the word of it never reached lines#1's
//   sink: its transaction pre-committed for 3 is committed by nobody but the restore from checkpoint 3;
// - kill-worker-after-pre-commit:lines#1@1 — lines#1 pre-committed checkpoint 1 (staged its transaction)
//   and died before acknowledging it: no checkpoint ever completes before the restart, the new attempt
//   restores nothing, and what the dead one staged lingers unless the new attempt aborts it;
// - kill-worker-after-pre-commit:lines#1@3 — the same, most often with a checkpoint to restore (2, or 1).
// What is committed — part files of fileCommitSink (a local dir), entries of redisStreamSink (a real
// redis-server) — must equal the naive expected lines exactly, and nothing may be left staged. Last, `weft gc`
// on a succeeded run removes the Redis staging lists of its job (planted: a subtask it no longer has), no other.
import assert from 'node:assert/strict';
import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { runCli } from '@weft/cli';
import { noopLogger } from '@weft/shuffle-api';
import { connectRedis } from '@weft/shuffle-remote/redis';
import { type RedisServer, startRedis } from '@weft/testkit';
import { lineOf } from './fixtures/two-phase-commit-workers-job.js';

const job = fileURLToPath(new URL('./fixtures/two-phase-commit-workers-job.ts', import.meta.url));
/** 8 000 lines at 8 000 a second over both subtasks: about a second, ten checkpoints 100 ms apart. */
const COUNT = 8_000;
const ARGS = ['--count', String(COUNT), '--rate', '8000'];
/** The naive reference: every line of the generator, upper-cased, once. */
const EXPECTED = Array.from({ length: COUNT }, (_, seq) => lineOf(seq).toUpperCase()).sort();
/** Broken code fails a test instead of hanging it (not a timing assertion: a healthy run takes seconds). */
const GUARD_MS = 120_000;

interface Summary {
  jobId: string;
  status: string;
  executorsLost: { taskExecutorId: string }[];
  checkpoints: { completed: number; tasksRestored: number };
}

/**
 * `restores`: whether the restarted lines#1 restores a checkpoint — certainly (the one that completed),
 * certainly not (none completed before the kill), or either (@3 after its pre-commit: checkpoints 1 and 2
 * may both have been aborted on a busy machine; the fault fires at the first checkpoint from 3 on that
 * lines#1 pre-commits).
 */
const FAULTS = [
  { spec: 'kill-worker-before-commit:lines#1@3', what: 'killed after checkpoint 3 completed, before its sink committed it: the restore commits it', restores: true },
  { spec: 'kill-worker-after-pre-commit:lines#1@1', what: 'killed after pre-committing checkpoint 1, which never completes: the restart restores nothing and aborts what it staged', restores: false },
  { spec: 'kill-worker-after-pre-commit:lines#1@3', what: 'killed after pre-committing checkpoint 3, which never completes: the restart aborts what it staged', restores: undefined },
] as const;

function assertRestores(summary: Summary, restores: boolean | undefined): void {
  if (restores === true) assert.ok(summary.checkpoints.tasksRestored > 0, `restored from a checkpoint: ${JSON.stringify(summary.checkpoints)}`);
  if (restores === false) assert.equal(summary.checkpoints.tasksRestored, 0, `no checkpoint to restore: ${JSON.stringify(summary.checkpoints)}`);
}

describe('weft run --workers 2: a two-phase-commit sink\'s worker SIGKILLed at a checkpoint, restored in a new process', () => {
  let dir = '';
  let server: RedisServer;
  let redis: Awaited<ReturnType<typeof connectRedis>>;
  let runs = 0;
  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'weft-2pc-restore-'));
    server = await startRedis({ persistent: false });
    redis = await connectRedis({ url: server.url, connectTimeoutMs: 5000, commandTimeoutMs: 5000, setting: 'test', logger: noopLogger });
  });
  after(async () => {
    await redis?.quit();
    await server?.close();
    await rm(dir, { recursive: true, force: true });
  });

  /** The stores of one run. */
  function storesOf(run: number): string[] {
    return ['--store', pathToFileURL(join(dir, `run-${run}`, 'store')).href, '--meta', `sqlite://${join(dir, `run-${run}`, 'meta.db')}`];
  }

  /** One run on stores of its own; at most 3 restarts, so a sink that cannot work fails the run. */
  async function weft(fault: string, jobArgs: string[]): Promise<Summary> {
    const stores = storesOf(runs++);
    let stdout = '';
    let stderr = '';
    const args = ['run', job, ...stores, '--workers', '2', '--parallelism', '2', '--checkpoint-interval', '100ms', '--restart-attempts', '3', '--restart-delay', '100', '--json', '--inject-faults', fault, '--', ...ARGS, ...jobArgs];
    const code = await runCli(args, { stdout: { write: (t: string) => ((stdout += t), true) }, stderr: { write: (t: string) => ((stderr += t), true) }, cwd: dir, env: {} });
    assert.equal(code, 0, stderr);
    const summary = JSON.parse(stdout) as Summary;
    assert.equal(summary.executorsLost.length, 1, `the worker running lines#1 was killed: ${stderr}`);
    return summary;
  }

  for (const fault of FAULTS) {
    it(`fileCommitSink: ${fault.what} — the part files hold each expected line once, nothing left in progress`, { timeout: GUARD_MS }, async () => {
      const out = join(dir, `out-${runs}`);
      const summary = await weft(fault.spec, ['--sink', 'file', '--dir', out]);
      assertRestores(summary, fault.restores);
      const lines: string[] = [];
      for (const name of (await readdir(out)).filter((n) => !n.startsWith('.'))) lines.push(...(await readFile(join(out, name), 'utf8')).split('\n').filter((l) => l !== ''));
      assert.deepEqual(lines.sort(), EXPECTED);
      assert.deepEqual(await readdir(join(out, '.in-progress')).catch(() => []), [], 'no transaction left in progress');
    });

    it(`redisStreamSink: ${fault.what} — the stream holds each expected line once, nothing left staged`, { timeout: GUARD_MS }, async () => {
      const stream = `restore:${runs}`;
      const summary = await weft(fault.spec, ['--sink', 'redis', '--url', server.url, '--stream', stream]);
      assertRestores(summary, fault.restores);
      const entries = (await redis.xrange(stream, '-', '+')).map(([, fields]) => fields[1] as string);
      assert.deepEqual(entries.sort(), EXPECTED);
      assert.deepEqual(await redis.keys(`${stream}:weft-2pc:txn:*`), [], 'no transaction left staged');
    });
  }

  it('weft gc removes the staging lists a succeeded run left in Redis (a subtask a smaller parallelism dropped), and keeps another job\'s', { timeout: GUARD_MS }, async () => {
    const run = runs;
    const stream = `restore:gc:${run}`;
    const summary = await weft('kill-worker-after-pre-commit:lines#1@1', ['--sink', 'redis', '--url', server.url, '--stream', stream]);
    const ours = `${stream}:weft-2pc:txn:${summary.jobId}/sinkTo/7/0/abcdef`;
    const otherJob = `${stream}:weft-2pc:txn:${summary.jobId}-other/sinkTo/7/0/abcdef`;
    await redis.rpush(ours, 'staged by a subtask the run no longer has');
    await redis.rpush(otherJob, 'staged by another job');
    let stdout = '';
    let stderr = '';
    const code = await runCli(['gc', ...storesOf(run), '--older-than', '0s', '--json'], { stdout: { write: (t: string) => ((stdout += t), true) }, stderr: { write: (t: string) => ((stderr += t), true) }, cwd: dir, env: {} });
    assert.equal(code, 0, stderr);
    const removed = (JSON.parse(stdout) as { removed: { jobId: string; twoPhaseStaged: string[] }[] }).removed;
    assert.deepEqual(removed.map((r) => [r.jobId, r.twoPhaseStaged]), [[summary.jobId, [`${server.url}#${ours}`]]]);
    assert.deepEqual(await redis.keys(`${stream}:weft-2pc:txn:*`), [otherJob]);
    assert.equal(await redis.xlen(stream), COUNT, 'the committed entries stay');
  });
});
