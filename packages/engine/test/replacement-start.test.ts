// A lost executor's replacement starts once the restart its loss caused has its tasks reading again on the
// executors left (forking a worker blocks the job master for milliseconds, which those tasks' first
// messages would wait behind) — at once when a restarted region has no free slot but the replacement's.
// The job master runs on scripted task executors (the test decides each task's events), two single-task
// regions a#0 and b#0, one slot each or two.
import assert from 'node:assert/strict';
import { setImmediate as tick } from 'node:timers/promises';
import { describe, it } from 'node:test';
import { jobId, noopLogger, type TaskExecutorId, taskExecutorId } from '@weft/shuffle-api';
import { createFailoverStrategy, createRestartBackoffTimeStrategy, ExecutionTopology, type JobPlan, type JobTopology, type RegionDeployment, type TaskEvent, type TaskExecutor, type TaskExecutorListener } from '@weft/engine';
import { buildPipelinedRegions } from '../src/regions/pipelined-regions.js';
import { JobMaster } from '../src/job-master/job-master.js';
import { testingDescriptorOnlyMaster } from './support/descriptor-only-master.js';

const topologyJson: JobTopology = { vertices: [{ id: 'a', parallelism: 1 }, { id: 'b', parallelism: 1 }], edges: [] };
const plan = { name: 'replacement', vertices: topologyJson.vertices.map((v, index) => ({ id: v.id, index })), edges: [], logical: { nodes: [] } } as unknown as JobPlan;

/** Tasks run until the test says: `read` (the `reading` report of a restarted attempt), `finishAll`. Events arrive on later turns. */
class TestingScriptedExecutor implements TaskExecutor {
  readonly kind = 'scripted';
  readonly running = new Set<string>();
  listener: TaskExecutorListener | undefined;

  constructor(
    readonly id: TaskExecutorId,
    readonly slots: number,
    readonly log: string[],
  ) {}

  deploy(deployment: RegionDeployment): void {
    for (const task of deployment.tasks) {
      this.log.push(`deploy ${task.attemptId} on ${this.id}`);
      this.running.add(task.attemptId);
      this.#emit({ type: 'running', attemptId: task.attemptId });
    }
  }

  cancel(attemptIds: readonly string[]): void {
    for (const id of attemptIds) if (this.running.delete(id)) this.#emit({ type: 'cancelled', attemptId: id });
  }

  read(attemptId: string): void {
    assert.ok(this.running.has(attemptId), `${attemptId} runs on ${this.id}`);
    this.#emit({ type: 'reading', attemptId, atMs: Date.now() });
  }

  finishAll(): void {
    for (const attemptId of [...this.running]) {
      this.running.delete(attemptId);
      this.#emit({ type: 'finished', attemptId, result: { attemptId, durationMs: 0, metrics: { recordsIn: 0, outputs: [] }, sinks: [] } });
    }
  }

  progress(): [] {
    return [];
  }

  async close(): Promise<void> {
    this.running.clear();
  }

  async [Symbol.asyncDispose](): Promise<void> {
    await this.close();
  }

  #emit(event: TaskEvent): void {
    setImmediate(() => this.listener?.onTaskEvent(this.id, event));
  }
}

async function until(condition: () => boolean, what: string): Promise<void> {
  for (let i = 0; i < 10_000; i++) {
    if (condition()) return;
    await tick();
  }
  assert.fail(`never happened: ${what}`);
}

/** A job master on two scripted executors of `slots` slots each; `replaceExecutor` logs its start and gives a third. */
function setUp(slots: number) {
  const topology = ExecutionTopology.from(topologyJson);
  const regions = buildPipelinedRegions(topology);
  const log: string[] = [];
  const executors = [new TestingScriptedExecutor(taskExecutorId('x'), slots, log), new TestingScriptedExecutor(taskExecutorId('y'), slots, log)];
  let master: JobMaster | undefined;
  const failover = createFailoverStrategy(topology, 'region', { regions, isPartitionAvailable: (id) => master?.isPartitionAvailable(id) ?? true });
  master = new JobMaster({
    jobId: jobId('job-replacement'),
    plan,
    topology,
    regions,
    blockingMaster: testingDescriptorOnlyMaster(),
    failover,
    restart: createRestartBackoffTimeStrategy({ type: 'fixed-delay', attempts: 5, delayMs: 0 }),
    logger: noopLogger,
    cancelTimeoutMs: 60_000,
    replaceExecutor: async (lost) => {
      log.push(`replacement of ${lost} started`);
      const replacement = new TestingScriptedExecutor(taskExecutorId('z'), slots, log);
      replacement.listener = master;
      executors.push(replacement);
      return replacement;
    },
  });
  for (const executor of executors) executor.listener = master;
  return { master, executors, log };
}

describe("a lost executor's replacement", () => {
  it('starts once the restarted task reads again on the executor left, not before', async () => {
    const { master, executors, log } = setUp(2);
    const [x, y] = executors as [TestingScriptedExecutor, TestingScriptedExecutor];
    try {
      const outcome = master.run([x, y]);
      await until(() => log.filter((l) => l.startsWith('deploy')).length === 2, 'both tasks deployed');
      const lost = y.running.size > 0 ? y : x;
      const left = lost === y ? x : y;
      const restarted = [...lost.running].map((id) => id.replace('@0', '@1'));
      lost.running.clear();
      master.onExecutorLost(lost.id, new Error('killed (scripted)'));
      await until(() => restarted.every((id) => left.running.has(id)), `${restarted.join(', ')} restarted on ${left.id}`);
      for (let i = 0; i < 50; i++) await tick();
      assert.ok(!log.some((l) => l.startsWith('replacement')), `no replacement while the restarted tasks have not read: ${log.join(', ')}`);
      for (const id of restarted.slice(0, -1)) left.read(id);
      for (let i = 0; i < 50; i++) await tick();
      assert.ok(!log.some((l) => l.startsWith('replacement')), `not before the last of them read: ${log.join(', ')}`);
      left.read(restarted.at(-1) as string);
      // within a few turns of that report, not after the 100 ms the start waits at most
      for (let i = 0; i < 50 && !log.includes(`replacement of ${lost.id} started`); i++) await tick();
      assert.ok(log.includes(`replacement of ${lost.id} started`), `the replacement started at the last reading: ${log.join(', ')}`);
      for (const executor of executors) executor.finishAll();
      const result = await outcome;
      assert.equal(result.status, 'succeeded', String(result.error?.stack));
    } finally {
      master.abort(new Error('test over'));
    }
  });

  it('starts at once when the restarted region has no free slot but the one the replacement brings', async () => {
    const { master, executors, log } = setUp(1);
    const [x, y] = executors as [TestingScriptedExecutor, TestingScriptedExecutor];
    try {
      const outcome = master.run([x, y]);
      await until(() => x.running.size === 1 && y.running.size === 1, 'one task on each executor');
      const [restarted] = [...y.running].map((id) => id.replace('@0', '@1'));
      y.running.clear();
      master.onExecutorLost(y.id, new Error('killed (scripted)'));
      // within a few turns, not after the 100 ms the start waits at most for a restart to resume
      for (let i = 0; i < 50 && !log.includes('replacement of y started'); i++) await tick();
      assert.ok(log.includes('replacement of y started'), `the replacement started at once: ${log.join(', ')}`);
      const z = executors[2] as TestingScriptedExecutor;
      await until(() => z.running.has(restarted as string), `${restarted} deployed on the replacement`);
      for (const executor of executors) executor.finishAll();
      const result = await outcome;
      assert.equal(result.status, 'succeeded', String(result.error?.stack));
    } finally {
      master.abort(new Error('test over'));
    }
  });
});
