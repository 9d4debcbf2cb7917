// A task executor that cancels a task on its own (a cluster executor draining past its timeout does) must
// not leave the job master waiting: the cancellation it did not ask for is a failure of that task, failed
// over by the restart strategy (or failing the job without one). Before, the region was marked stopped
// and nothing restarted it — the job hung. A scripted executor decides each attempt's end.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { jobId, noopLogger, taskExecutorId } from '@weft/shuffle-api';
import { createFailoverStrategy, createRestartBackoffTimeStrategy, ExecutionTopology, type FailoverRecord, type JobPlan, type JobTopology, type RegionDeployment } from '@weft/engine';
import { buildPipelinedRegions } from '../src/regions/pipelined-regions.js';
import { JobMaster } from '../src/job-master/job-master.js';
import { testingDescriptorOnlyMaster } from './support/descriptor-only-master.js';
import { ScriptedExecutor } from './support/scripted-executor.js';

const topologyJson: JobTopology = {
  vertices: [
    { id: 'a', parallelism: 1 },
    { id: 'b', parallelism: 1 },
  ],
  edges: [{ id: 'a->b', source: 'a', target: 'b', distribution: 'POINTWISE', partitionType: 'BLOCKING' }],
};
const plan = { name: 'self-cancel', vertices: topologyJson.vertices.map((v, index) => ({ id: v.id, index })), edges: topologyJson.edges.map((e, index) => ({ id: e.id, index, targetInput: 0 })), logical: { nodes: [] } } as unknown as JobPlan;

/** b's first attempt reports `cancelled` though nobody asked; every other attempt finishes. */
class SelfCancellingExecutor extends ScriptedExecutor {
  readonly log: string[] = [];

  constructor() {
    super(taskExecutorId('self-cancelling'), 2);
  }

  deploy(deployment: RegionDeployment): void {
    for (const { attemptId } of deployment.tasks) {
      this.log.push(`deploy ${attemptId}`);
      this.emit({ type: 'running', attemptId });
      if (attemptId === 'b#0@0') this.emit({ type: 'cancelled', attemptId });
      else this.emit({ type: 'finished', attemptId, result: { attemptId, durationMs: 0, metrics: { recordsIn: 0, outputs: [] }, sinks: [] } });
    }
  }

  cancel(attemptIds: readonly string[]): void {
    this.log.push(`cancel ${attemptIds.join(',')}`);
  }
}

async function run(restart: Parameters<typeof createRestartBackoffTimeStrategy>[0]) {
  const topology = ExecutionTopology.from(topologyJson);
  const regions = buildPipelinedRegions(topology);
  let master: JobMaster | undefined;
  const failovers: FailoverRecord[] = [];
  const executor = new SelfCancellingExecutor();
  master = new JobMaster({
    jobId: jobId('job-self-cancel'),
    plan,
    topology,
    regions,
    blockingMaster: testingDescriptorOnlyMaster(),
    failover: createFailoverStrategy(topology, 'region', { regions, isPartitionAvailable: (id) => master?.isPartitionAvailable(id) ?? true }),
    restart: createRestartBackoffTimeStrategy(restart),
    logger: noopLogger,
    cancelTimeoutMs: 60_000,
    onFailover: (record) => failovers.push(record),
  });
  executor.listener = master;
  const result = await master.run([executor]);
  return { result, failovers, log: executor.log };
}

describe('a cancellation the job master did not ask for', () => {
  it('fails the task over (WEFT_ERR_TASK_CANCELLED), and the job succeeds on its next attempt', { timeout: 10_000 }, async () => {
    const { result, failovers, log } = await run({ type: 'fixed-delay', attempts: 3, delayMs: 1 });
    assert.equal(result.status, 'succeeded', String(result.error?.stack));
    assert.deepEqual(failovers.map((f) => [f.failedTask, [...f.tasksToRestart]]), [['b#0', ['b#0']]]);
    assert.equal(failovers[0]?.error.code, 'WEFT_ERR_TASK_CANCELLED');
    assert.match(String(failovers[0]?.error.message), /b#0 was cancelled by its task executor, not by the job master/);
    assert.deepEqual(log.filter((l) => l.startsWith('deploy')), ['deploy a#0@0', 'deploy b#0@0', 'deploy b#0@1'], 'b runs again; a, finished, does not');
  });

  it('fails the job without a restart strategy — it never waits for a task nobody will run', { timeout: 10_000 }, async () => {
    const { result } = await run({ type: 'none' });
    assert.equal(result.status, 'failed');
    assert.match(String(result.error?.message), /recovery is suppressed/);
  });
});
