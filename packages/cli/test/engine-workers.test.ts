// The worker-process executor with the persisted blocking shuffle (a local directory + SQLite), as
// `weft run` wires them: worker death, restarts on the surviving worker, non-deterministic jobs.
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { isEngineError, type JobProgress, type RunJobOptions, runJob } from '@weft/engine';
import { createMemoryShuffleServiceFactory } from '@weft/shuffle-memory';
import { createRemoteShuffleServiceFactory } from '@weft/shuffle-remote';

const fixtures = fileURLToPath(new URL('./fixtures/', import.meta.url));

async function withDir<T>(fn: (dir: string) => Promise<T>): Promise<T> {
  const dir = await mkdtemp(join(tmpdir(), 'weft-workers-'));
  try {
    return await fn(dir);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

function options(dir: string, job: string, args: string[], extra: Partial<RunJobOptions> = {}): RunJobOptions {
  return {
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
  };
}

function expectedSums(count: number): string {
  const sums = Array.from({ length: 10 }, () => 0);
  for (let x = 0; x < count; x++) sums[x % 10] = (sums[x % 10] as number) + x;
  return sums.map((s, k) => `${k}\t${s}`).sort().join('\n');
}

describe('worker-process executor', () => {
  it('runs a job across worker processes through the persisted blocking shuffle', async () => {
    await withDir(async (dir) => {
      const result = await runJob(options(dir, 'failing-job.ts', ['--count', '20000', '--output', 'sums.tsv']));
      assert.equal(result.status, 'succeeded', String(result.error?.stack));
      assert.deepEqual(result.executor, { kind: 'workers', executors: 2, slots: 1 });
      assert.equal((await readFile(join(dir, 'sums.tsv'), 'utf8')).trim().split('\n').sort().join('\n'), expectedSums(20_000));
      assert.ok(result.edges.every((e) => e.partitionType === 'BLOCKING' && e.records > 0));
    });
  });

  it('reports progress while it runs: counts never go down, and the last report is the finished job', async () => {
    await withDir(async (dir) => {
      const reports: JobProgress[] = [];
      const result = await runJob(options(dir, 'failing-job.ts', ['--count', '200000', '--output', 'sums.tsv'], { onProgress: (p) => reports.push(p), progressIntervalMs: 2 }));
      assert.equal(result.status, 'succeeded', String(result.error?.stack));
      assert.ok(reports.length >= 2, `${reports.length} reports`);
      assert.ok(reports[0] !== undefined && reports[0].tasksFinished < reports[0].tasksTotal, 'the first report comes while tasks still run');
      const last = reports[reports.length - 1] as JobProgress;
      assert.equal(last.tasksTotal, result.tasks);
      assert.equal(last.tasksFinished, last.tasksTotal);
      assert.equal(last.tasksRunning, 0);
      assert.equal(last.regionsFinished, last.regionsTotal);
      assert.equal(last.regionsTotal, result.regions);
      assert.equal(last.recordsRead, 200_000);
      assert.equal(last.recordsShuffled, result.recordsShuffled);
      assert.ok(last.bytesShuffled > 0);
      assert.equal(last.bytesShuffled, result.bytesShuffled);
      assert.equal(last.failures, 0);
      const monotonic = ['elapsedMs', 'tasksFinished', 'regionsFinished', 'recordsRead', 'recordsShuffled', 'bytesShuffled'] as const;
      for (let i = 1; i < reports.length; i++) {
        const [before, after] = [reports[i - 1] as JobProgress, reports[i] as JobProgress];
        for (const field of monotonic) assert.ok(after[field] >= before[field], `${field} went down: report ${i - 1} ${before[field]}, report ${i} ${after[field]}`);
        assert.equal(after.tasksTotal, before.tasksTotal);
        assert.ok(after.tasksRunning + after.tasksFinished <= after.tasksTotal);
      }
    });
  });

  for (const [mode, regions] of [
    // one region: every edge pipelined, so the whole job runs in one worker
    ['ALL_EDGES_PIPELINED', 1],
    // the rescale pipelined (numbers#0-1 with pair#0, numbers#2-3 with pair#1), the ALL_TO_ALL edges blocking
    ['POINTWISE_EDGES_PIPELINED', 2 + 3 + 2],
  ] as const) {
    it(`computes exact results on worker processes under ${mode}`, async () => {
      await withDir(async (dir) => {
        const result = await runJob(options(dir, 'exchange-job.ts', ['--count', '30000', '--output', 'sums.tsv'], { exchangeMode: mode }));
        assert.equal(result.status, 'succeeded', String(result.error?.stack));
        assert.equal(result.exchangeMode, mode);
        assert.equal(result.executor.kind, 'workers');
        assert.equal(result.regions, regions);
        assert.equal(result.tasks, 4 + 2 + 3 + 2);
        assert.deepEqual(
          Object.fromEntries(result.edges.map((e) => [e.id, e.partitionType])),
          mode === 'ALL_EDGES_PIPELINED'
            ? { 'numbers->pair': 'PIPELINED_BOUNDED', 'pair->sum': 'PIPELINED_BOUNDED', 'sum->format': 'PIPELINED_BOUNDED' }
            : { 'numbers->pair': 'PIPELINED_BOUNDED', 'pair->sum': 'BLOCKING', 'sum->format': 'BLOCKING' },
        );
        assert.ok(result.edges.every((e) => e.records > 0), 'records crossed every edge');
        assert.equal(result.recordsRead, 30_000);
        assert.equal((await readFile(join(dir, 'sums.tsv'), 'utf8')).trim().split('\n').sort().join('\n'), expectedSums(30_000));
      });
    });
  }

  it('fails the job when a worker dies, naming the lost executor, and publishes nothing', async () => {
    await withDir(async (dir) => {
      const result = await runJob(options(dir, 'failing-job.ts', ['--count', '20000', '--fail-at', '7777', '--kill', '--output', 'sums.tsv']));
      assert.equal(result.status, 'failed');
      assert.ok(isEngineError(result.error, 'WEFT_ERR_JOB_FAILED'));
      const cause = result.error?.cause;
      assert.ok(isEngineError(cause, 'WEFT_ERR_TASK_EXECUTOR_LOST'), String(cause));
      assert.match((cause as Error).message, /task executor worker-\d was lost: worker process \d+ exited with SIGKILL/);
      assert.equal(existsSync(join(dir, 'sums.tsv')), false);
    });
  });

  it("restarts the dead worker's region on the surviving worker when a restart strategy allows", async () => {
    await withDir(async (dir) => {
      const result = await runJob(options(dir, 'failing-job.ts', ['--count', '20000', '--fail-at', '7777', '--kill', '--output', 'sums.tsv'], { restartStrategy: { type: 'fixed-delay', attempts: 3, delayMs: 10 } }));
      assert.equal(result.status, 'succeeded', String(result.error?.stack));
      assert.equal(result.restarts, 1);
      assert.equal(result.executor.executors, 2);
      assert.equal((await readFile(join(dir, 'sums.tsv'), 'utf8')).trim().split('\n').sort().join('\n'), expectedSums(20_000));
    });
  });

  it('refuses a job whose build function makes another graph in a worker', async () => {
    await withDir(async (dir) => {
      await assert.rejects(runJob(options(dir, 'random-job.ts', [], { workers: 4 })), (error: unknown) => isEngineError(error, 'WEFT_ERR_INVALID_JOB') && /must be deterministic/.test((error as Error).message));
    });
  });
});
