// Two-phase-commit sinks end to end, in process over the in-memory pipelined shuffle: a bounded
// ctx.generate stream into fileCommitSink, checkpoints taken by the job master, tasks that throw at
// seeded points and restore. The committed part files must hold exactly what a fault-free run commits.
import assert from 'node:assert/strict';
import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { existsSync } from 'node:fs';
import { defineJob, type FaultInjectorFactory, fileCommitSink, type TwoPhaseCommitSinkFactory, InMemoryCheckpointStorage, InMemoryCheckpointStore, type JobResult, runJob } from '@weft/engine';
import { createMemoryShuffleServiceFactory } from '@weft/shuffle-memory';
import { seededRandom } from '@weft/testkit';

const lineOf = (seq: number): string => `line ${seq} ${(seq * 7919) % 1000}`;

/** What the sinks of a run did, counted in process. */
interface Commits {
  /** Commits of a transaction that wrote a part file. */
  parts: number;
  /** Of those, commits of a part already in place (a re-commit after a restore). */
  again: number;
}

/** `factory`'s sinks, counting their commits in `commits`. */
function counting(factory: TwoPhaseCommitSinkFactory<string>, commits: Commits): TwoPhaseCommitSinkFactory<string> {
  return (context) => {
    const sink = factory(context);
    return {
      ...sink,
      beginTransaction: () => sink.beginTransaction(),
      write: (handle, value) => sink.write(handle, value),
      preCommit: (handle) => sink.preCommit(handle),
      abort: (handle) => sink.abort(handle),
      close: () => sink.close?.(),
      commit: async (handle) => {
        const { file, target } = handle as { file: string | null; target: string };
        if (file !== null) {
          commits.parts += 1;
          if (existsSync(target)) commits.again += 1;
        }
        await sink.commit(handle);
      },
    };
  };
}

const linesJob = (dir: string, count: number, ratePerSecond: number | undefined, commits: Commits) =>
  defineJob((ctx) => {
    ctx.generate(lineOf, { count, splits: 8, ...(ratePerSecond === undefined ? {} : { ratePerSecond }) }).map((l) => l.toUpperCase()).sinkTo(counting(fileCommitSink<string>({ dir }), commits));
  }, { name: 'two-phase-lines' });

/** The committed lines: every line of every part file `dir` shows (hidden `.in-progress` left out), sorted. */
async function committedLines(dir: string): Promise<string[]> {
  const names = (await readdir(dir).catch(() => [] as string[])).filter((n) => !n.startsWith('.'));
  const lines: string[] = [];
  for (const name of names) lines.push(...(await readFile(join(dir, name), 'utf8')).split('\n').filter((l) => l !== ''));
  return lines.sort();
}

async function inProgress(dir: string): Promise<string[]> {
  return readdir(join(dir, '.in-progress')).catch(() => []);
}

/** Throws in each listed task's attempt `attempt` at its record `atRecord`. */
const throwsAt = (faults: readonly { task: string; attempt: number; atRecord: number }[]): FaultInjectorFactory => () => ({
  taskFault: ({ executionVertexId, attempt }) => {
    const fault = faults.find((f) => f.task === executionVertexId && f.attempt === attempt);
    return fault === undefined ? undefined : { kind: 'throw', atRecord: fault.atRecord };
  },
});

function run(request: { dir: string; count: number; parallelism: number; faults?: FaultInjectorFactory; store?: InMemoryCheckpointStore; storage?: InMemoryCheckpointStorage; rate?: number | null; commits?: Commits; restoreFrom?: 'latest'; restarts?: number; jobId?: string; signal?: AbortSignal; checkpoints?: boolean }): Promise<JobResult> {
  const memory = createMemoryShuffleServiceFactory({ buffersPerPartition: 8 });
  const storage = request.storage ?? new InMemoryCheckpointStorage();
  return runJob({
    // 20 000 records a second a subtask: a generator batch (256) every 13 ms, so every checkpoint (15 ms) has records
    job: linesJob(request.dir, request.count, request.rate === null ? undefined : (request.rate ?? 40_000), request.commits ?? { parts: 0, again: 0 }),
    parallelism: request.parallelism,
    cwd: request.dir,
    shuffle: { pipelined: memory, blocking: memory },
    ...(request.checkpoints === false ? {} : { checkpointing: { intervalMs: 15, storage, ...(request.store === undefined ? {} : { store: request.store }), ...(request.restoreFrom === undefined ? {} : { restoreFrom: request.restoreFrom }) } }),
    restartStrategy: request.restarts === 0 ? { type: 'none' } : { type: 'fixed-delay', attempts: request.restarts ?? 3, delayMs: 0 },
    ...(request.jobId === undefined ? {} : { jobId: request.jobId }),
    ...(request.faults === undefined ? {} : { faults: request.faults }),
    ...(request.signal === undefined ? {} : { signal: request.signal }),
  });
}

describe('two-phase-commit sinks, in process', () => {
  it('a file sink restored after throws at seeded points commits exactly what a fault-free run commits, each line once', async () => {
    const root = await mkdtemp(join(tmpdir(), 'weft-2pc-files-'));
    try {
      const count = 8000;
      const clean = await run({ dir: join(root, 'clean'), count, parallelism: 2 });
      assert.equal(clean.status, 'succeeded', clean.error?.message);
      const expected = Array.from({ length: count }, (_, seq) => lineOf(seq).toUpperCase()).sort();
      assert.deepEqual(await committedLines(join(root, 'clean')), expected);
      const random = seededRandom(15);
      const faults = [
        { task: 'generate#1', attempt: 0, atRecord: 800 + Math.floor(random() * 2000) },
        { task: 'generate#0', attempt: 0, atRecord: 800 + Math.floor(random() * 2000) },
        { task: 'generate#1', attempt: 1, atRecord: 3000 + Math.floor(random() * 500) },
      ];
      const faulty = await run({ dir: join(root, 'faulty'), count, parallelism: 2, faults: throwsAt(faults) });
      assert.equal(faulty.status, 'succeeded', faulty.error?.message);
      assert.ok(faulty.failures >= 2, `failures: ${faulty.failures}`);
      assert.ok((faulty.checkpoints?.tasksRestored ?? 0) > 0, `checkpoints: ${JSON.stringify(faulty.checkpoints)}`);
      assert.deepEqual(await committedLines(join(root, 'faulty')), await committedLines(join(root, 'clean')));
    } finally {
      await rm(root, { recursive: true, force: true });
    }
  });

  it('a run restored 2 -> 3 from a failed run\'s checkpoint re-commits its pre-committed transactions without duplicating them', async () => {
    const root = await mkdtemp(join(tmpdir(), 'weft-2pc-recommit-'));
    try {
      const dir = join(root, 'out');
      const count = 8000;
      const store = new InMemoryCheckpointStore();
      const storage = new InMemoryCheckpointStorage();
      const failed = await run({ dir, jobId: 'recommit', count, parallelism: 2, store, storage, faults: throwsAt([{ task: 'generate#0', attempt: 0, atRecord: 2500 }]), restarts: 0 });
      assert.equal(failed.status, 'failed');
      const latest = (await store.completed()).at(-1);
      assert.ok(latest !== undefined, 'the failed run completed a checkpoint');
      const before = await committedLines(dir);
      assert.ok(before.length > 0 && before.length < count, `committed before the failure: ${before.length}`);
      // what the failed run committed is a prefix of each subtask's lines: no line twice
      assert.equal(new Set(before).size, before.length);
      const commits: Commits = { parts: 0, again: 0 };
      // with another parallelism: the recorded handles are dealt over 3 subtasks
      const restored = await run({ dir, jobId: 'recommit', count, parallelism: 3, store, storage, restoreFrom: 'latest', commits });
      assert.equal(restored.status, 'succeeded', restored.error?.message);
      // the restored checkpoint's pre-committed parts were committed by the failed run already: committed again, in place
      assert.ok(commits.again > 0, `commits: ${JSON.stringify(commits)}`);
      assert.equal(restored.checkpoints?.restoredFrom, latest.checkpointId);
      assert.deepEqual(await committedLines(dir), Array.from({ length: count }, (_, seq) => lineOf(seq).toUpperCase()).sort());
    } finally {
      await rm(root, { recursive: true, force: true });
    }
  });

  it('a pre-commit that fails declines its checkpoint and fails the task; the restored attempt commits each line once', async () => {
    const root = await mkdtemp(join(tmpdir(), 'weft-2pc-precommit-'));
    try {
      const dir = join(root, 'out');
      const count = 6000;
      let preCommits = 0;
      const files = fileCommitSink<string>({ dir });
      // subtask 1's first attempt: its third pre-commit fails
      const failing: TwoPhaseCommitSinkFactory<string> = (context) => {
        const sink = files(context);
        return {
          beginTransaction: () => sink.beginTransaction(),
          write: (h, v) => sink.write(h, v),
          preCommit: async (h) => {
            if (context.subtask === 1 && context.attempt === 0 && ++preCommits === 3) throw new Error('the disk refused the pre-commit');
            return sink.preCommit(h);
          },
          commit: (h) => sink.commit(h),
          abort: (h) => sink.abort(h),
          close: () => sink.close?.(),
        };
      };
      const memory = createMemoryShuffleServiceFactory({ buffersPerPartition: 8 });
      const job = defineJob((ctx) => {
        ctx.generate(lineOf, { count, splits: 8, ratePerSecond: 40_000 }).map((l) => l.toUpperCase()).sinkTo(failing);
      }, { name: 'two-phase-lines' });
      const result = await runJob({ job, parallelism: 2, cwd: root, shuffle: { pipelined: memory, blocking: memory }, checkpointing: { intervalMs: 15, storage: new InMemoryCheckpointStorage(), tolerableFailures: 5 }, restartStrategy: { type: 'fixed-delay', attempts: 2, delayMs: 0 } });
      assert.equal(result.status, 'succeeded', result.error?.message);
      assert.equal(result.failures, 1);
      assert.ok((result.checkpoints?.abortReasons.TASK_FAILURE ?? 0) >= 1, `checkpoints: ${JSON.stringify(result.checkpoints)}`);
      assert.deepEqual(await committedLines(dir), Array.from({ length: count }, (_, seq) => lineOf(seq).toUpperCase()).sort());
    } finally {
      await rm(root, { recursive: true, force: true });
    }
  });

  it('a cancelled job aborts its open transactions: no part file, committed or in progress, is left', async () => {
    const root = await mkdtemp(join(tmpdir(), 'weft-2pc-cancel-'));
    try {
      const dir = join(root, 'out');
      const controller = new AbortController();
      // no checkpoints: each attempt's one transaction writes its in-progress file once it buffered 1 MiB
      const running = run({ dir, count: 5_000_000, parallelism: 2, signal: controller.signal, checkpoints: false, rate: null });
      // cancelled once a transaction has written bytes to its in-progress file
      for (let i = 0; i < 4000 && (await inProgress(dir)).length === 0; i++) await new Promise((r) => setTimeout(r, 2));
      assert.ok((await inProgress(dir)).length > 0, 'the transactions wrote their in-progress files');
      controller.abort(new Error('cancelled by the test'));
      const result = await running;
      assert.equal(result.status, 'failed');
      assert.deepEqual(await inProgress(dir), []);
      assert.deepEqual(await committedLines(dir), []);
    } finally {
      await rm(root, { recursive: true, force: true });
    }
  });
});
