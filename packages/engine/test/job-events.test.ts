// The job's event stream (RunJobOptions.eventListener): one typed event per scheduler transition, in causal
// order — what the job event log will store and a new job master replay. The expected streams below are
// written by hand from the job's plan, not derived from the scheduler's code.
import assert from 'node:assert/strict';
import { mkdtemp, readFile, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { defineJob, type JobEvent, type JobEventListener, type RunJobOptions, runJob } from '@weft/engine';
import { testingNoShuffleFactory } from './support/no-shuffle.js';
import { testingRecordingBlockingShuffle } from './support/recording-blocking-shuffle.js';

/** a (2 subtasks) → b (2 subtasks), ALL_TO_ALL BLOCKING: four regions, one task each; b writes a text file. */
const job = defineJob(
  (ctx) => {
    ctx
      .range(0, 20, { name: 'a', parallelism: 2 })
      .keyBy((i) => i % 4)
      .reduce((x, y) => x + y, { name: 'b', parallelism: 2 })
      .writeText('out.txt', { name: 'out' });
  },
  { name: 'events' },
);

/** Sums of i in [0, 20) by i % 4: 4·(0+1+2+3+4) + 5k for k = 0..3, sorted as text. */
const EXPECTED_LINES = ['40', '45', '50', '55'];

async function withDir<T>(fn: (dir: string) => Promise<T>): Promise<T> {
  const dir = await mkdtemp(join(tmpdir(), 'weft-job-events-'));
  try {
    return await fn(dir);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

function options(dir: string, eventListener: JobEventListener, extra: Partial<RunJobOptions> = {}): RunJobOptions {
  return {
    job,
    cwd: dir,
    parallelism: 2,
    exchangeMode: 'ALL_EDGES_BLOCKING',
    shuffle: { pipelined: testingNoShuffleFactory(), blocking: testingRecordingBlockingShuffle() },
    eventListener,
    ...extra,
  };
}

/** The key fields of an event, as one line: what the hand-written streams list. */
function brief(event: JobEvent): string {
  switch (event.type) {
    case 'job-submitted':
      return `job-submitted ${event.data.name} tasks=${event.data.tasksTotal}`;
    case 'vertex-initialized':
      return `vertex-initialized ${event.data.vertexId} p=${event.data.parallelism}`;
    case 'task-deployed':
      return `task-deployed ${event.data.executionVertexId}@${event.data.attempt}`;
    case 'task-finished':
      return `task-finished ${event.data.executionVertexId}@${event.data.attempt} [${event.data.partitions.map((p) => p.partitionId).join(',')}]`;
    case 'failover':
      return `failover ${event.data.attemptId} restarts [${event.data.tasksToRestart.join(',')}]`;
    case 'tasks-reset':
      return `tasks-reset [${event.data.tasks.join(',')}]`;
    case 'partitions-released':
      return `partitions-released [${event.data.partitionIds.join(',')}]`;
    case 'sink-published':
      return `sink-published ${event.data.sink}`;
    default:
      return event.type;
  }
}

async function outputLines(dir: string): Promise<string[]> {
  return (await readFile(join(dir, 'out.txt'), 'utf8')).split('\n').filter((l) => l !== '').sort();
}

describe('the job event stream', () => {
  it('is, for a→b BLOCKING with one slot and a failure of b#1, exactly the hand-written sequence', async () => {
    await withDir(async (dir) => {
      const events: JobEvent[] = [];
      const result = await runJob(
        options(dir, { onJobEvent: (event) => void events.push(event) }, {
          slotsPerExecutor: 1,
          restartStrategy: { type: 'fixed-delay', attempts: 1, delayMs: 0 },
          faults: () => ({ taskFault: (t) => (t.executionVertexId === 'b#1' && t.attempt === 0 ? { kind: 'throw', atRecord: 1 } : undefined) }),
        }),
      );
      assert.equal(result.status, 'succeeded', String(result.error?.stack));
      assert.deepEqual(await outputLines(dir), EXPECTED_LINES);
      // One slot: regions run one at a time, in the order they became ready (a#0, a#1, then b#0, b#1).
      // b#1's first attempt throws: its region alone restarts (its inputs are still there), then it runs
      // again as attempt 1. The a->b partitions are released once both b regions finished.
      assert.deepEqual(events.map(brief), [
        'job-submitted events tasks=4',
        'vertex-initialized a p=2',
        'vertex-initialized b p=2',
        'task-deployed a#0@0',
        'task-finished a#0@0 [a->b#0]',
        'task-deployed a#1@0',
        'task-finished a#1@0 [a->b#1]',
        'task-deployed b#0@0',
        'task-finished b#0@0 []',
        'task-deployed b#1@0',
        'failover b#1@0 restarts [b#1]',
        'tasks-reset [b#1]',
        'task-deployed b#1@1',
        'task-finished b#1@1 []',
        'partitions-released [a->b#0,a->b#1]',
        'sink-published out',
        'job-finished',
      ]);
      const submitted = events[0] as Extract<JobEvent, { type: 'job-submitted' }>;
      assert.deepEqual(submitted.data.topology, result.topology);
      assert.deepEqual(submitted.data.options, {
        parallelism: 2,
        exchangeMode: 'ALL_EDGES_BLOCKING',
        executor: 'inprocess',
        workers: submitted.data.options?.workers,
        slotsPerExecutor: 1,
        failoverStrategy: 'region',
        restartStrategy: { type: 'fixed-delay', attempts: 1, delayMs: 0 },
        serializer: 'default',
        releasePartitionsDuringJob: true,
        spillRoot: tmpdir(),
      });
      const finished = events.filter((e): e is Extract<JobEvent, { type: 'task-finished' }> => e.type === 'task-finished' && e.data.executionVertexId.startsWith('a#'));
      for (const f of finished) assert.ok((f.data.partitions[0]?.bytes ?? 0) > 0, `${f.data.executionVertexId} reports the bytes it wrote`);
      const published = events.find((e) => e.type === 'sink-published') as Extract<JobEvent, { type: 'sink-published' }>;
      assert.equal(published.data.path, join(dir, 'out.txt'));
      assert.doesNotThrow(() => JSON.parse(JSON.stringify(events)), 'every event is plain JSON');
      assert.deepEqual(JSON.parse(JSON.stringify(events)), events);
    });
  });

  it('holds a consumer back until the listener acknowledged its producers’ task-finished events, and the job’s end until every event was taken', async () => {
    await withDir(async (dir) => {
      const log: string[] = [];
      const listener: JobEventListener = {
        onJobEvent(event) {
          log.push(brief(event));
          const held = event.type === 'job-finished' || (event.type === 'task-finished' && event.data.executionVertexId.startsWith('a#'));
          if (!held) return;
          const task = event.type === 'task-finished' ? event.data.executionVertexId : event.type;
          // Stored "later": a few turns of the event loop and a timer, as a durable append would take.
          return new Promise<void>((resolve) =>
            setTimeout(() => {
              log.push(`stored ${task}`);
              resolve();
            }, 20),
          );
        },
      };
      const result = await runJob(options(dir, listener, { slotsPerExecutor: 2 }));
      assert.equal(result.status, 'succeeded', String(result.error?.stack));
      assert.deepEqual(await outputLines(dir), EXPECTED_LINES);
      const firstConsumer = log.findIndex((line) => line.startsWith('task-deployed b#'));
      assert.ok(firstConsumer > log.indexOf('stored a#0') && firstConsumer > log.indexOf('stored a#1'), `no b task deployed before both a task-finished events were stored: ${log.join(' | ')}`);
      assert.deepEqual(log.slice(-2), ['job-finished', 'stored job-finished'], 'runJob resolves once the listener took every event');
    });
  });

  it('fails the job loudly when the listener throws, and publishes nothing', async () => {
    await withDir(async (dir) => {
      const seen: string[] = [];
      const listener: JobEventListener = {
        onJobEvent(event) {
          seen.push(brief(event));
          if (event.type === 'task-finished' && event.data.executionVertexId === 'a#0') throw new Error('disk full');
        },
      };
      const result = await runJob(options(dir, listener, { slotsPerExecutor: 1 }));
      assert.equal(result.status, 'failed');
      assert.equal(result.error?.code, 'WEFT_ERR_JOB_FAILED');
      const cause = result.error?.cause as { code?: string; message?: string } | undefined;
      assert.equal(cause?.code, 'WEFT_ERR_EVENT_LOG');
      assert.match(String(cause?.message), /task-finished.*disk full/);
      assert.deepEqual(result.outputs, []);
      await assert.rejects(stat(join(dir, 'out.txt')), { code: 'ENOENT' }, 'nothing is published');
      assert.ok(!seen.some((line) => line.startsWith('task-deployed b#')), `the unrecorded finish made no consumer schedulable: ${seen.join(' | ')}`);
      assert.equal(seen.at(-1), 'job-failed');
    });
  });

  it('fails the job when the listener’s promise rejects, even for an event it does not wait on', async () => {
    await withDir(async (dir) => {
      const listener: JobEventListener = {
        onJobEvent: (event) => (event.type === 'task-deployed' && event.data.executionVertexId === 'b#0' ? Promise.reject(new Error('connection reset')) : undefined),
      };
      const result = await runJob(options(dir, listener, { slotsPerExecutor: 1 }));
      assert.equal(result.status, 'failed');
      const cause = result.error?.cause as { code?: string; message?: string } | undefined;
      assert.equal(cause?.code, 'WEFT_ERR_EVENT_LOG');
      assert.match(String(cause?.message), /task-deployed.*connection reset/);
    });
  });

  it('ends an aborted job with job-cancelled, its one terminal event', async () => {
    await withDir(async (dir) => {
      const controller = new AbortController();
      const seen: string[] = [];
      const listener: JobEventListener = {
        onJobEvent(event) {
          seen.push(brief(event));
          if (event.type === 'task-finished' && event.data.executionVertexId === 'a#0') controller.abort(new Error('operator stop'));
        },
      };
      const result = await runJob(options(dir, listener, { slotsPerExecutor: 1, signal: controller.signal }));
      assert.equal(result.status, 'failed');
      assert.match(String(result.error?.message), /aborted: operator stop/);
      assert.equal(seen.at(-1), 'job-cancelled');
      assert.ok(!seen.includes('job-failed') && !seen.includes('job-finished'), seen.join(' | '));
    });
  });

  it('refuses an event listener without onJobEvent', async () => {
    await withDir(async (dir) => {
      await assert.rejects(runJob(options(dir, {} as JobEventListener)), { code: 'WEFT_ERR_INVALID_ARGUMENT', message: /eventListener/ });
    });
  });
});
