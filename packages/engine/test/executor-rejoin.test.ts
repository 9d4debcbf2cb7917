// Every task executor of the job lost, none being replaced (a cluster's executors all killed): without
// `executorRejoinTimeoutMs` the job fails at once ("no task executor is left"); with it the job waits —
// its failed region waiting for a slot — and goes on on an executor that joins meanwhile (a cluster
// executor restarted), or fails once none joined within the timeout. Before, a cluster job failed at once
// whatever its restart strategy allowed. Scripted one-slot executors; one task, one region.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { setImmediate as tick } from 'node:timers/promises';
import { jobId, noopLogger, taskExecutorId } from '@weft/shuffle-api';
import { createFailoverStrategy, createRestartBackoffTimeStrategy, ExecutionTopology, type JobPlan, type JobTopology, type RegionDeployment } from '@weft/engine';
import { JobMaster } from '../src/job-master/job-master.js';
import { buildPipelinedRegions } from '../src/regions/pipelined-regions.js';
import { testingDescriptorOnlyMaster } from './support/descriptor-only-master.js';
import { ScriptedExecutor } from './support/scripted-executor.js';

const TOPOLOGY: JobTopology = { vertices: [{ id: 'v', parallelism: 1 }], edges: [] };
const PLAN = { name: 'executor-rejoin', vertices: [{ id: 'v', index: 0 }], edges: [], logical: { nodes: [] } } as unknown as JobPlan;

/** Runs each attempt until told to finish. */
class OneSlotExecutor extends ScriptedExecutor {
  readonly running = new Set<string>();

  deploy(deployment: RegionDeployment): void {
    for (const { attemptId } of deployment.tasks) {
      this.running.add(attemptId);
      this.emit({ type: 'running', attemptId });
    }
  }

  cancel(attemptIds: readonly string[]): void {
    for (const attemptId of attemptIds) if (this.running.delete(attemptId)) this.emit({ type: 'cancelled', attemptId });
  }

  finishAll(): void {
    for (const attemptId of this.running) this.emit({ type: 'finished', attemptId, result: { attemptId, durationMs: 0, metrics: { recordsIn: 0, outputs: [] }, sinks: [] } });
    this.running.clear();
  }
}

async function until(condition: () => boolean): Promise<void> {
  for (let i = 0; i < 10_000 && !condition(); i++) await tick();
  assert.ok(condition(), 'timed out');
}

function start(executorRejoinTimeoutMs: number | undefined) {
  const topology = ExecutionTopology.from(TOPOLOGY);
  const regions = buildPipelinedRegions(topology);
  const master = new JobMaster({
    jobId: jobId('job-executor-rejoin'),
    plan: PLAN,
    topology,
    regions,
    blockingMaster: testingDescriptorOnlyMaster(),
    failover: createFailoverStrategy(topology, 'region', { regions }),
    restart: createRestartBackoffTimeStrategy({ type: 'fixed-delay', attempts: 5, delayMs: 0 }),
    logger: noopLogger,
    ...(executorRejoinTimeoutMs === undefined ? {} : { executorRejoinTimeoutMs }),
  });
  const first = new OneSlotExecutor(taskExecutorId('e0'), 1);
  first.listener = master;
  let settled = false;
  const outcome = master.run([first]).finally(() => (settled = true));
  return { master, first, outcome, settled: () => settled };
}

describe('every task executor lost', () => {
  it('without a rejoin timeout the job fails at once', async () => {
    const job = start(undefined);
    await until(() => job.first.running.size === 1);
    job.master.onExecutorLost(job.first.id, new Error('killed'));
    const result = await job.outcome;
    assert.equal(result.status, 'failed');
    assert.match(result.error?.message ?? '', /no task executor is left: task executor e0 was lost: killed/);
  });

  it('with one, the job waits and goes on on an executor that joins', async () => {
    const job = start(60_000);
    await until(() => job.first.running.has('v#0@0'));
    job.master.onExecutorLost(job.first.id, new Error('killed'));
    for (let i = 0; i < 200; i++) await tick();
    await new Promise((resolve) => setTimeout(resolve, 20));
    assert.equal(job.settled(), false, 'the job still runs with no executor');
    const second = new OneSlotExecutor(taskExecutorId('e1'), 1);
    second.listener = job.master;
    job.master.onExecutorJoined(second);
    await until(() => second.running.has('v#0@1'));
    second.finishAll();
    const result = await job.outcome;
    assert.equal(result.status, 'succeeded', result.error?.message);
    assert.equal(result.failures, 1);
    assert.deepEqual(result.executorsLost.map((l) => l.taskExecutorId), ['e0']);
  });

  it('with one, the job fails once no executor joined within it, naming the timeout', async () => {
    const job = start(50);
    await until(() => job.first.running.size === 1);
    job.master.onExecutorLost(job.first.id, new Error('killed'));
    const result = await job.outcome;
    assert.equal(result.status, 'failed');
    assert.match(result.error?.message ?? '', /no task executor is left: task executor e0 was lost: killed; no task executor joined within 50 ms/);
  });
});
