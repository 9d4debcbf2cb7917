// --inject-faults kill-job-master: the harness kills the job master right after the append that brings the
// job's count of an event type to AT is durable — counting earlier runs' events, so the run that resumes
// the job is not killed again. A real SQLite event log; the kill itself is recorded instead of SIGKILL.
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { FaultHarness } from '@weft/cli/faults';
import type { JobTopology } from '@weft/engine';
import { SqliteJobEventLog } from '@weft/job-store';
import { createTempDir, type TempDir } from '@weft/testkit';

const topology: JobTopology = {
  vertices: [
    { id: 'src', parallelism: 3 },
    { id: 'out', parallelism: 1 },
  ],
  edges: [{ id: 'src->out', source: 'src', target: 'out', distribution: 'ALL_TO_ALL', partitionType: 'BLOCKING' }],
};
const context = { jobId: 'job-k', topology, regions: [['src#0'], ['src#1'], ['src#2'], ['out#0']], executor: 'workers' as const };

describe('kill-job-master', () => {
  let dir: TempDir;
  before(async () => {
    dir = await createTempDir('weft-kill-master-');
  });
  after(() => dir.remove());

  it('kills once the log durably holds the AT-th event of the type, and not again in the run that resumes', async () => {
    await using store = new SqliteJobEventLog({ path: join(dir.path, 'meta.db') });
    const kills: string[] = [];
    const spec = { faults: [{ kind: 'kill-job-master' as const, target: 'task-finished', at: 2 }] };
    const first = new FaultHarness(spec, { killJobMaster: () => kills.push('killed') });
    const log = await first.wrapEventLog(store).open({ jobId: 'job-k', owner: 'test' });
    first.factory(context);
    const seenAtKill: number[] = [];
    await log.append({ type: 'job-submitted', data: {} });
    await log.append({ type: 'task-finished', data: { executionVertexId: 'src#0' } });
    assert.equal(kills.length, 0, 'one task-finished: no kill yet');
    await log.append({ type: 'task-finished', data: { executionVertexId: 'src#1' } });
    seenAtKill.push((await store.readRun('job-k')).filter((e) => e.type === 'task-finished').length);
    assert.deepEqual(kills, ['killed'], 'the second task-finished kills');
    assert.deepEqual(seenAtKill, [2], 'the event that kills is stored before the kill');
    await log.close();

    // the same spec, the next run of the job: the history already holds two task-finished events
    const second = new FaultHarness(spec, { killJobMaster: () => kills.push('killed again') });
    const resumed = await second.wrapEventLog(store).open({ jobId: 'job-k', owner: 'test' });
    second.factory(context);
    for (const task of ['src#2', 'out#0']) await resumed.append({ type: 'task-finished', data: { executionVertexId: task } });
    assert.deepEqual(kills, ['killed'], 'the resuming run is not killed');
    await resumed.close();
  });

  it("keeps the store's checkpoint records: a checkpointed run killed this way resumes from the checkpoints it completed", async () => {
    await using store = new SqliteJobEventLog({ path: join(dir.path, 'meta-checkpoints.db') });
    const harness = new FaultHarness({ faults: [{ kind: 'kill-job-master' as const, target: 'task-finished', at: 1 }] }, { killJobMaster: () => {} });
    const wrapped = harness.wrapEventLog(store);
    assert.ok(wrapped.checkpointStore !== undefined, 'without it runJob records checkpoints in memory: a resume finds none');
    const log = await wrapped.open({ jobId: 'job-c', owner: 'test' });
    await wrapped.checkpointStore(log.jobId, log.epoch).addCompleted({ checkpointId: 1, triggeredAtMs: 1, completedAtMs: 2, tasks: { 'src#0': { key: 'k' } } });
    assert.deepEqual((await store.checkpointStore('job-c', log.epoch).completed()).map((c) => c.checkpointId), [1], 'recorded in the store itself');
    await log.close();
  });

  it("draws AT from the seed within the job's task count, the same for the same seed", async () => {
    const draw = (seed: number): number => {
      const harness = new FaultHarness({ seed, faults: [{ kind: 'kill-job-master' }] });
      harness.factory(context);
      const fault = harness.faults[0];
      assert.equal(fault?.target, 'task-finished');
      return fault?.at as number;
    };
    const draws = Array.from({ length: 30 }, (_, seed) => draw(seed));
    assert.deepEqual(draws, Array.from({ length: 30 }, (_, seed) => draw(seed)));
    assert.ok(draws.every((at) => at >= 1 && at <= 4), `within 1..4 tasks: ${draws.join(',')}`);
    assert.ok(new Set(draws).size > 2, 'seeds spread over the tasks');
  });
});
