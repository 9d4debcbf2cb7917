// runJob publishes a running job's progress to its event log (JobLog.publishProgress), for a UI in another
// process, and names the executor of each deployed attempt in its `task-deployed` event.
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { defineJob, runJob } from '@weft/engine';
import { testingNoShuffleFactory } from './support/no-shuffle.js';
import { testingRecordingBlockingShuffle } from './support/recording-blocking-shuffle.js';
import { testingJobEventLog } from './support/testing-job-event-log.js';

const job = defineJob(
  (ctx) => {
    ctx
      .range(0, 20_000, { name: 'a', parallelism: 2 })
      .keyBy((i) => i % 16)
      .reduce((x, y) => x + y, { name: 'b', parallelism: 2 })
      .writeText('out.txt', { name: 'out' });
  },
  { name: 'progress' },
);

describe('progress published to the job event log', () => {
  it('publishes snapshots of the running job under its epoch, and task-deployed names the executor', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'weft-progress-publish-'));
    try {
      const eventLog = testingJobEventLog();
      const result = await runJob({ job, cwd: dir, parallelism: 2, jobId: 'p1', slotsPerExecutor: 1, exchangeMode: 'ALL_EDGES_BLOCKING', shuffle: { pipelined: testingNoShuffleFactory(), blocking: testingRecordingBlockingShuffle() }, eventLog, progressPublishIntervalMs: 1 });
      assert.equal(result.status, 'succeeded', String(result.error?.stack));
      assert.ok(eventLog.published.length > 0, 'at least one snapshot was published');
      for (const p of eventLog.published) assert.deepEqual([p.jobId, p.epoch, p.progress.tasksTotal], ['p1', 1, 4]);
      for (const p of eventLog.published) assert.deepEqual(p.progress.vertices?.map((v) => v.id), ['a', 'b'], 'per-vertex counters, in topology order');
      const lastA = eventLog.published.at(-1)?.progress.vertices?.[0];
      assert.ok((lastA?.recordsIn ?? 0) <= 20_000 && (lastA?.recordsOut ?? 0) <= (lastA?.recordsIn ?? 0), `a's counters are a range's: ${JSON.stringify(lastA)}`);
      const finished = eventLog.published.map((p) => p.progress.tasksFinished);
      assert.deepEqual(finished, [...finished].sort((a, b) => a - b), 'tasks finished never go down');
      assert.equal((await eventLog.readProgress?.('p1'))?.jobId, 'p1');
      assert.ok(!(eventLog.events.get('p1') ?? []).some((e) => e.type.includes('progress')), 'progress is not an event');
      const deployed = (eventLog.events.get('p1') ?? []).filter((e) => e.type === 'task-deployed').map((e) => (e.data as { executor?: unknown }).executor);
      assert.equal(deployed.length, 4);
      for (const executor of deployed) assert.equal(typeof executor, 'string', `task-deployed names its executor: ${JSON.stringify(deployed)}`);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('refuses a progressPublishIntervalMs below 1, naming it', async () => {
    await assert.rejects(
      runJob({ job, parallelism: 1, shuffle: { pipelined: testingNoShuffleFactory(), blocking: testingRecordingBlockingShuffle() }, progressPublishIntervalMs: 0 }),
      (e: { code?: string; message?: string }) => e.code === 'WEFT_ERR_INVALID_ARGUMENT' && /progressPublishIntervalMs/.test(String(e.message)),
    );
  });
});
