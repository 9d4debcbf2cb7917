// A job resumed in process (RunJobOptions.eventLog): a second runJob of the same job id on the same
// shuffle keeps what the first finished and whose partitions exist, and runs the rest.
import assert from 'node:assert/strict';
import { mkdir, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { defineJob, type RunJobOptions, runJob } from '@weft/engine';
import type { JobShuffleContext, ShuffleDescriptor, ShuffleMaster, ShuffleServiceFactory } from '@weft/shuffle-api';
import { testingNoShuffleFactory } from './support/no-shuffle.js';
import { testingRecordingBlockingShuffle } from './support/recording-blocking-shuffle.js';
import { testingJobEventLog } from './support/testing-job-event-log.js';

/** a (2 subtasks) → b (2 subtasks), ALL_TO_ALL BLOCKING: four regions, one task each; b writes a text file. */
const job = defineJob(
  (ctx) => {
    ctx
      .range(0, 20, { name: 'a', parallelism: 2 })
      .keyBy((i) => i % 4)
      .reduce((x, y) => x + y, { name: 'b', parallelism: 2 })
      .writeText('out.txt', { name: 'out' });
  },
  { name: 'resume' },
);

const EXPECTED_LINES = ['40', '45', '50', '55'];

async function withDir<T>(fn: (dir: string) => Promise<T>): Promise<T> {
  const dir = await mkdtemp(join(tmpdir(), 'weft-job-resume-'));
  try {
    return await fn(dir);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

async function outputLines(dir: string): Promise<string[]> {
  return (await readFile(join(dir, 'out.txt'), 'utf8')).split('\n').filter((l) => l !== '').sort();
}

describe('a job resumed from its event log, in process', () => {
  it('keeps a#0 and a#1 of a run whose b#1 failed, runs b again (b#0’s part file went with the failed run) and publishes the right output', async () => {
    await withDir(async (dir) => {
      const blocking = testingRecordingBlockingShuffle();
      const eventLog = testingJobEventLog();
      const base: RunJobOptions = { job, cwd: dir, parallelism: 2, jobId: 'r1', slotsPerExecutor: 1, exchangeMode: 'ALL_EDGES_BLOCKING', shuffle: { pipelined: testingNoShuffleFactory(), blocking }, eventLog };
      const first = await runJob({ ...base, faults: () => ({ taskFault: (t) => (t.executionVertexId === 'b#1' ? { kind: 'throw', atRecord: 1 } : undefined) }) });
      assert.equal(first.status, 'failed');
      const second = await runJob(base);
      assert.equal(second.status, 'succeeded', String(second.error?.stack));
      assert.deepEqual([second.resumed, second.tasksReused, second.attempts, second.epoch], [true, 2, 2, 2]);
      // b#0 and b#1 run as attempts above every logged one (b#1's attempt 0 was deployed, b#0's finished)
      assert.deepEqual(second.taskAttempts, { 'a#0': 0, 'a#1': 0, 'b#0': 1, 'b#1': 1 });
      assert.deepEqual(await outputLines(dir), EXPECTED_LINES);
      const types = (eventLog.events.get('r1') ?? []).filter((e) => e.epoch === 2).map((e) => `${e.type}${e.type === 'tasks-reset' ? ` ${JSON.stringify((e.data as { tasks: string[] }).tasks)}` : ''}`);
      assert.ok(types.includes('tasks-reset ["b#0"]'), `the finished b#0 that runs again is reset in the log: ${types.join(', ')}`);
    });
  });

  it('keeps a published sink published: a run that died after sink-published, before job-finished, only finishes', async () => {
    await withDir(async (dir) => {
      const blocking = testingRecordingBlockingShuffle();
      const eventLog = testingJobEventLog();
      const base: RunJobOptions = { job, cwd: dir, parallelism: 2, jobId: 'r2', exchangeMode: 'ALL_EDGES_BLOCKING', shuffle: { pipelined: testingNoShuffleFactory(), blocking }, eventLog };
      const first = await runJob(base);
      assert.equal(first.status, 'succeeded');
      const events = eventLog.events.get('r2') as { type: string }[];
      assert.equal(events.pop()?.type, 'job-finished'); // the master died before it was stored
      const second = await runJob(base);
      assert.equal(second.status, 'succeeded', String(second.error?.stack));
      assert.deepEqual([second.resumed, second.tasksReused, second.attempts], [true, 4, 0]);
      assert.deepEqual(second.outputs.map((o) => [o.sink, o.path]), [['out', join(dir, 'out.txt')]]);
      assert.deepEqual(await outputLines(dir), EXPECTED_LINES);
      await assert.rejects(runJob(base), (e: { code?: string }) => e.code === 'WEFT_ERR_RESUME_REFUSED');
    });
  });

  it('is hands-off once an append is refused as fenced (a newer epoch took the job over): WEFT_ERR_FENCED naming it, no sink file discarded, no partition released, the job not unregistered', async () => {
    await withDir(async (dir) => {
      const eventLog = testingJobEventLog();
      const open = eventLog.open.bind(eventLog);
      eventLog.open = async (request) => {
        const log = await open(request);
        return {
          ...log,
          history: log.history,
          append: async (event) => {
            if (event.type === 'task-finished' && (event.data as { executionVertexId?: string }).executionVertexId?.startsWith('b#') === true) {
              throw Object.assign(new Error('append by epoch 1 refused: epoch 2 took the job over'), { code: 'WEFT_ERR_FENCED', context: { jobId: 'r3', epoch: 1, newestEpoch: 2 } });
            }
            return log.append(event);
          },
        };
      };
      const recording = testingRecordingBlockingShuffle();
      const jobCalls: string[] = [];
      const blocking: ShuffleServiceFactory = {
        ...recording,
        createShuffleMaster(context) {
          const master = recording.createShuffleMaster(context);
          return Object.assign(Object.create(master) as ShuffleMaster, {
            registerJob: async (c: JobShuffleContext) => void jobCalls.push(`register ${c.jobId} epoch ${String(c.epoch)}`),
            unregisterJob: async (jobId: string) => void jobCalls.push(`unregister ${jobId}`),
          });
        },
      };
      const result = await runJob({ job, cwd: dir, parallelism: 2, jobId: 'r3', slotsPerExecutor: 1, exchangeMode: 'ALL_EDGES_BLOCKING', shuffle: { pipelined: testingNoShuffleFactory(), blocking }, eventLog });
      assert.equal(result.status, 'failed');
      assert.equal(result.error?.code, 'WEFT_ERR_FENCED', String(result.error?.stack));
      assert.match(result.error?.message ?? '', /job r3: this job master \(epoch 1\) was fenced: epoch 2 took the job over/);
      assert.deepEqual([result.error?.context['epoch'], result.error?.context['newestEpoch']], [1, 2]);
      await assert.rejects(readFile(join(dir, 'out.txt')), /ENOENT/);
      // the sinks' attempt directory is the one a newer run of the job id writes into: it stays
      const parts = await readdir(join(dir, '.out.txt.weft-r3'));
      assert.ok(parts.length > 0, 'the part file b wrote is still there');
      assert.deepEqual(jobCalls, ['register r3 epoch 1'], 'registered with its epoch, never unregistered');
      assert.deepEqual(recording.records.filter((r) => r.kind === 'released'), [], 'no partition released');
    });
  });

  it('stops collecting an earlier run’s garbage once a release is refused as fenced: WEFT_ERR_FENCED, no more releases, no sink file removed', async () => {
    await withDir(async (dir) => {
      const eventLog = testingJobEventLog();
      const open = eventLog.open.bind(eventLog);
      let dropped = false;
      eventLog.open = async (request) => {
        const log = await open(request);
        return {
          ...log,
          history: log.history,
          // the first run "dies" before a#1's task-finished is stored: its committed partitions are garbage to the next run
          append: async (event) => {
            if (!dropped && event.type === 'task-finished' && (event.data as { executionVertexId?: string }).executionVertexId === 'a#1') {
              dropped = true;
              return { v: 1, seq: 0, epoch: log.epoch, atMs: Date.now(), type: event.type, data: event.data };
            }
            return log.append(event);
          },
        };
      };
      const recording = testingRecordingBlockingShuffle();
      let fenced = false;
      const releases: string[] = [];
      const blocking: ShuffleServiceFactory = {
        ...recording,
        createShuffleMaster(context) {
          const master = recording.createShuffleMaster(context);
          return Object.assign(Object.create(master) as ShuffleMaster, {
            releasePartitionExternally: async (descriptor: ShuffleDescriptor) => {
              if (!fenced) return master.releasePartitionExternally(descriptor);
              releases.push(descriptor.partition.partitionId);
              throw Object.assign(new Error('release refused: epoch 3 took the job over'), { code: 'SHF_ERR_FENCED', context: { jobId: 'r4', epoch: 2, newestEpoch: 3 } });
            },
          });
        },
      };
      const base: RunJobOptions = { job, cwd: dir, parallelism: 2, jobId: 'r4', slotsPerExecutor: 1, exchangeMode: 'ALL_EDGES_BLOCKING', shuffle: { pipelined: testingNoShuffleFactory(), blocking }, eventLog };
      const first = await runJob({ ...base, faults: () => ({ taskFault: (t) => (t.executionVertexId.startsWith('b#') ? { kind: 'throw', atRecord: 1 } : undefined) }) });
      assert.equal(first.status, 'failed');
      // a file in the sinks' attempt directory, that a resume would remove as no kept attempt's
      const tempDir = join(dir, '.out.txt.weft-r4');
      await mkdir(tempDir, { recursive: true });
      await writeFile(join(tempDir, 'part-of-a-newer-run'), 'x');
      fenced = true;
      await assert.rejects(runJob(base), (error: { code?: string; message?: string }) => {
        assert.equal(error.code, 'WEFT_ERR_FENCED');
        assert.match(error.message ?? '', /this job master \(epoch 2\) was fenced: epoch 3 took the job over/);
        return true;
      });
      assert.equal(releases.length, 1, `the refused release: ${releases.join(', ')}`);
      assert.deepEqual(await readdir(tempDir), ['part-of-a-newer-run'], 'no sink file removed');
    });
  });
});
