// A failover cancels the tasks of the regions it restarts that still run — never the failed task itself:
// its attempt already stopped (it reported its failure), and cancelling it again made an error, aborted
// a task that had ended and armed a cancel timeout, all on the path of a single-task recovery. A scripted
// executor records what it is asked to cancel.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { jobId, noopLogger, taskExecutorId } from '@weft/shuffle-api';
import { createFailoverStrategy, createRestartBackoffTimeStrategy, ExecutionTopology, serializeTaskError, type JobPlan, type JobTopology, type RegionDeployment } from '@weft/engine';
import { buildPipelinedRegions } from '../src/regions/pipelined-regions.js';
import { JobMaster } from '../src/job-master/job-master.js';
import { testingDescriptorOnlyMaster } from './support/descriptor-only-master.js';
import { ScriptedExecutor } from './support/scripted-executor.js';

function planOf(topology: JobTopology): JobPlan {
  return { name: 'failed-task-cancel', vertices: topology.vertices.map((v, index) => ({ id: v.id, index })), edges: topology.edges.map((e, index) => ({ id: e.id, index, targetInput: 0 })), logical: { nodes: [] } } as unknown as JobPlan;
}

/** `a`'s first attempt fails; every other first attempt runs until cancelled; later attempts finish. */
class FailingExecutor extends ScriptedExecutor {
  readonly cancels: string[][] = [];
  readonly #running = new Set<string>();

  constructor() {
    super(taskExecutorId('failing'), 4);
  }

  deploy(deployment: RegionDeployment): void {
    for (const { attemptId } of deployment.tasks) {
      this.emit({ type: 'running', attemptId });
      if (attemptId === 'a#0@0') setTimeout(() => this.emit({ type: 'failed', attemptId, error: serializeTaskError(new Error('planted')) }), 5);
      else if (attemptId.endsWith('@0')) this.#running.add(attemptId);
      else this.emit({ type: 'finished', attemptId, result: { attemptId, durationMs: 0, metrics: { recordsIn: 0, outputs: [] }, sinks: [] } });
    }
  }

  cancel(attemptIds: readonly string[]): void {
    this.cancels.push([...attemptIds]);
    for (const attemptId of attemptIds) if (this.#running.delete(attemptId)) this.emit({ type: 'cancelled', attemptId });
  }
}

async function run(topologyJson: JobTopology) {
  const topology = ExecutionTopology.from(topologyJson);
  const regions = buildPipelinedRegions(topology);
  let master: JobMaster | undefined;
  const executor = new FailingExecutor();
  master = new JobMaster({
    jobId: jobId('job-failed-task-cancel'),
    plan: planOf(topologyJson),
    topology,
    regions,
    blockingMaster: testingDescriptorOnlyMaster(),
    failover: createFailoverStrategy(topology, 'region', { regions, isPartitionAvailable: (id) => master?.isPartitionAvailable(id) ?? true }),
    restart: createRestartBackoffTimeStrategy({ type: 'fixed-delay', attempts: 2, delayMs: 0 }),
    logger: noopLogger,
    cancelTimeoutMs: 60_000,
  });
  executor.listener = master;
  const result = await master.run([executor]);
  return { result, cancels: executor.cancels };
}

describe('a failover cancels what still runs of its regions, not the failed task', () => {
  it('a region of two pipelined tasks: only the one still running is cancelled', { timeout: 10_000 }, async () => {
    const { result, cancels } = await run({
      vertices: [
        { id: 'a', parallelism: 1 },
        { id: 'b', parallelism: 1 },
      ],
      edges: [{ id: 'a->b', source: 'a', target: 'b', distribution: 'POINTWISE', partitionType: 'PIPELINED' }],
    });
    assert.equal(result.status, 'succeeded', String(result.error?.stack));
    assert.deepEqual(cancels, [['b#0@0']]);
  });

  it('a region of the failed task alone: nothing is cancelled', { timeout: 10_000 }, async () => {
    const { result, cancels } = await run({ vertices: [{ id: 'a', parallelism: 1 }], edges: [] });
    assert.equal(result.status, 'succeeded', String(result.error?.stack));
    assert.deepEqual(cancels, []);
  });
});
