// The checkpoint link between a job master and a worker process — WorkerCheckpointRelay (job master side)
// and WorkerCheckpointing (the worker's proxy per task attempt) — over a fake IPC pipe that clones each
// message as the worker channel does (v8 serialization) and delivers it later, in order, in front of a
// real JobCheckpointing: triggers reach the worker's source, acknowledgements carry the snapshot bytes,
// completions and the final checkpoint come back, a restarted attempt starts from the bytes it
// acknowledged, and attempts no longer current (ended, or on a lost worker) are ignored on both sides.
import assert from 'node:assert/strict';
import { describe, it, type TestContext } from 'node:test';
import { deserialize, serialize } from 'node:v8';
import { defineJob, InMemoryCheckpointStorage, InMemoryCheckpointStore, isEngineError } from '@weft/engine';
import { JobCheckpointing } from '../../src/checkpoint/job-checkpointing.js';
import { WorkerCheckpointRelay } from '../../src/executor/worker-checkpoint-relay.js';
import { WorkerCheckpointing } from '../../src/executor/worker-checkpointing.js';
import { loadJob } from '../../src/graph/load-job.js';
import type { TaskCheckpointing } from '../../src/runtime/task-checkpointing.js';
import type { TaskDeployment } from '../../src/runtime/task-deployment.js';

/** Delivers each message cloned, on a later turn, in the order sent (a child process's IPC channel). */
function pipe<M>(deliver: (message: M) => void): { send: (message: M) => void; sent: M[] } {
  const sent: M[] = [];
  let chain = Promise.resolve();
  return {
    sent,
    send: (message) => {
      sent.push(message);
      const copy = deserialize(serialize(message)) as M;
      chain = chain.then(() => new Promise<void>((resolve) => setImmediate(() => resolve(deliver(copy)))));
    },
  };
}

const nextTurns = async (n = 20): Promise<void> => {
  for (let i = 0; i < n; i++) await new Promise((resolve) => setImmediate(resolve));
};

/** A JobCheckpointing linked to a worker's end over `pipe`s; stopped after the test, whatever it asserted. */
async function linked(t: TestContext) {
  const { plan } = await loadJob({ job: defineJob((ctx) => ctx.generate((seq) => seq % 3, { count: 10 }).keyBy((n) => n).count().collect('c')), parallelism: 1 });
  const storage = new InMemoryCheckpointStorage();
  const failures: Error[] = [];
  const checkpoints = new JobCheckpointing({ jobId: 'link', plan, mode: 'aligned', intervalMs: 5, store: new InMemoryCheckpointStore(), storage, onFailure: (e) => failures.push(e) });
  let worker: WorkerCheckpointing | undefined;
  const toWorker = pipe((m: Parameters<WorkerCheckpointing['handle']>[0]) => worker?.handle(m));
  const relay = new WorkerCheckpointRelay({ provider: checkpoints.forTask, send: toWorker.send });
  const toMaster = pipe((m: Parameters<WorkerCheckpointRelay['handle']>[0]) => relay.handle(m));
  worker = new WorkerCheckpointing(toMaster.send);
  t.after(() => checkpoints.stop());
  const [source, sink] = plan.vertices as [(typeof plan.vertices)[number], (typeof plan.vertices)[number]];
  /** An attempt of `vertex`'s subtask 0, deployed through the relay once (linked then; it may also ask). */
  const deployed = new Map<string, TaskDeployment>();
  const task = (vertex: typeof source, attempt: number): TaskDeployment => {
    const attemptId = `${vertex.id}#0@${attempt}`;
    const known = deployed.get(attemptId);
    if (known !== undefined) return known;
    const deployment = { attemptId, executionVertexId: `${vertex.id}#0`, vertexId: vertex.id, vertexIndex: vertex.index, subtask: 0, parallelism: 1, attempt, outputs: [], inputs: [] };
    deployed.set(attemptId, deployment);
    relay.deployed([deployment]);
    return deployment;
  };
  return { checkpoints, relay, worker, toWorker, toMaster, source, sink, task, storage, failures, uidOf: (v: typeof source) => v.operators[0]?.node.uid as string };
}

/** A broken link leaves a test waiting for a checkpoint that never completes: it fails after 10 s instead. */
const LINK_TIMEOUT = { timeout: 10_000 };

/** Resolves with the first checkpoint a source proxy is triggered with. */
const triggered = (c: TaskCheckpointing): Promise<number> =>
  new Promise((resolve) => {
    const off = c.onTrigger((id) => {
      off();
      resolve(id);
    });
  });

describe('the checkpoint link between a job master and a worker (WorkerCheckpointRelay ↔ WorkerCheckpointing)', () => {
  it('carries triggers, acknowledged snapshot bytes and completions, and a restarted attempt starts from the bytes it acknowledged', LINK_TIMEOUT, async (t) => {
    const l = await linked(t);
    const source = await l.worker.provider(l.task(l.source, 0));
    const sinkTask = l.task(l.sink, 0);
    const sink = await l.worker.provider(sinkTask);
    assert.equal(source.mode, 'aligned');
    assert.equal(source.restore, undefined, 'a fresh start');
    const completed: number[] = [];
    sink.onComplete((id) => completed.push(id));
    await l.checkpoints.start();
    const id = await triggered(source);
    const bytes = { keyed: new Uint8Array([1, 2, 3]), operator: new Uint8Array([9]) };
    source.acknowledge({ checkpointId: id, operators: { [l.uidOf(l.source)]: { operator: new Uint8Array([7, 7]) } } });
    sink.acknowledge({ checkpointId: id, operators: { [l.uidOf(l.sink)]: bytes } });
    while (!completed.includes(id)) await nextTurns(1);
    assert.equal(l.checkpoints.summary().latestCompletedId, id);

    // count#0 restarts: its new attempt, on this worker, starts from what it acknowledged
    l.relay.detach(sinkTask.attemptId);
    l.worker.detach(sinkTask.attemptId);
    const again = await l.worker.provider(l.task(l.sink, 1));
    assert.equal(again.restore?.checkpointId, id);
    assert.deepEqual(again.restore?.operators[l.uidOf(l.sink)], { keyed: [bytes.keyed], operator: [bytes.operator] });
    assert.equal(l.checkpoints.summary().tasksRestored, 1);
    assert.deepEqual(l.failures, []);
  });

  it('links a deployed attempt with its restore state before it asks: a task starting after that sends no checkpoint-attach, one starting before gets the same link once', LINK_TIMEOUT, async (t) => {
    const l = await linked(t);
    const attaches = (): number => l.toMaster.sent.filter((m) => m.type === 'checkpoint-attach').length;
    const early = l.task(l.source, 0);
    await nextTurns();
    assert.deepEqual(l.toWorker.sent.map((m) => [m.type, m.attemptId]), [['checkpoint-attached', early.attemptId]], 'sent with the deployment, unasked');
    const source = await l.worker.provider(early);
    assert.equal(source.mode, 'aligned');
    assert.equal(attaches(), 0, 'no round trip');
    // a task that asks at once (before the unasked link arrived) is answered once, by that link
    const eager = l.task(l.sink, 0);
    const sink = await l.worker.provider(eager);
    await nextTurns();
    assert.equal(attaches(), 1);
    assert.equal(l.toWorker.sent.filter((m) => m.type === 'checkpoint-attached' && m.attemptId === eager.attemptId).length, 1);
    // both links work: a checkpoint completes through them
    const completed: number[] = [];
    sink.onComplete((id) => completed.push(id));
    await l.checkpoints.start();
    const id = await triggered(source);
    source.acknowledge({ checkpointId: id, operators: { [l.uidOf(l.source)]: { operator: new Uint8Array([1]) } } });
    sink.acknowledge({ checkpointId: id, operators: { [l.uidOf(l.sink)]: { keyed: new Uint8Array([2]) } } });
    while (!completed.includes(id)) await nextTurns(1);
    assert.deepEqual(l.failures, []);
  });

  it('drops a link sent with the deployment that arrives after its attempt ended, rather than keeping it', LINK_TIMEOUT, async (t) => {
    const l = await linked(t);
    const attaches = (): number => l.toMaster.sent.filter((m) => m.type === 'checkpoint-attach').length;
    const ended = l.task(l.source, 0);
    // the attempt ends on the worker before the link sent with its deployment is handled
    l.worker.detach(ended.attemptId);
    await nextTurns();
    assert.deepEqual(l.toWorker.sent.map((m) => [m.type, m.attemptId]), [['checkpoint-attached', ended.attemptId]]);
    // not kept: asking again for that attempt (nothing does: it ended) is not answered from the dropped link
    let settled = false;
    const asked = l.worker.provider(ended).finally(() => (settled = true));
    await nextTurns();
    assert.equal(settled, false, 'not answered from a kept link');
    assert.equal(attaches(), 1, 'asked the job master instead');
    l.worker.close();
    await assert.rejects(asked);
  });

  it('ignores what a worker sends for an attempt that ended, and a worker ignores what comes for one it no longer runs', LINK_TIMEOUT, async (t) => {
    const l = await linked(t);
    const source = await l.worker.provider(l.task(l.source, 0));
    const sink = await l.worker.provider(l.task(l.sink, 0));
    const sinkCompleted: number[] = [];
    sink.onComplete((id) => sinkCompleted.push(id));
    await l.checkpoints.start();
    const first = await triggered(source);
    // the sink attempt ended on the master's side (its terminal task event) before its acknowledgement arrived
    l.relay.detach(l.task(l.sink, 0).attemptId);
    source.acknowledge({ checkpointId: first, operators: { [l.uidOf(l.source)]: {} } });
    sink.acknowledge({ checkpointId: first, operators: { [l.uidOf(l.sink)]: { keyed: new Uint8Array([1]) } } });
    await nextTurns();
    assert.equal(l.checkpoints.summary().completed, 0, 'an ended attempt acknowledges nothing');
    // and the worker side: once it detached the source, a trigger for it reaches no listener, and its proxy sends nothing
    let late = 0;
    source.onTrigger(() => (late += 1));
    await nextTurns();
    const before = l.toMaster.sent.length;
    l.worker.detach(l.task(l.source, 0).attemptId);
    l.worker.handle({ type: 'checkpoint-trigger', attemptId: l.task(l.source, 0).attemptId, checkpointId: first + 1, timestampMs: 0 });
    source.acknowledge({ checkpointId: first, operators: {} });
    source.decline(first, 'gone', 'DECLINED');
    assert.equal(late, 0);
    assert.equal(l.toMaster.sent.length, before);
    assert.equal(await source.awaitFinalCheckpoint(), undefined, 'a detached attempt waits for no final checkpoint');
    assert.deepEqual(sinkCompleted, []);
  });

  it("a lost worker's sources no longer count as running: the next trigger fails instead of waiting for their barriers", LINK_TIMEOUT, async (t) => {
    const l = await linked(t);
    const source = await l.worker.provider(l.task(l.source, 0));
    await l.worker.provider(l.task(l.sink, 0));
    await l.checkpoints.start();
    await triggered(source);
    source.onTrigger(() => {});
    await nextTurns();
    l.relay.detachAll();
    // the pending checkpoint is declined by the restarted attempts (JobCheckpointing.forTask); later triggers fail
    await l.worker.provider(l.task(l.sink, 1));
    while ((l.checkpoints.summary().abortReasons.TRIGGER_FAILURE ?? 0) === 0) await new Promise((resolve) => setTimeout(resolve, 5));
    assert.equal(l.checkpoints.summary().completed, 0);
  });

  it('a source at its end waits across the link for the final checkpoint, told of its completion first', LINK_TIMEOUT, async (t) => {
    const l = await linked(t);
    const source = await l.worker.provider(l.task(l.source, 0));
    const sink = await l.worker.provider(l.task(l.sink, 0));
    const order: string[] = [];
    source.onComplete((id) => order.push(`complete ${id}`));
    // the sink acknowledges what the source triggers (the barrier's path, short-cut)
    source.onTrigger((id) => {
      source.acknowledge({ checkpointId: id, operators: { [l.uidOf(l.source)]: {} } });
      sink.acknowledge({ checkpointId: id, operators: { [l.uidOf(l.sink)]: {} } });
    });
    await l.checkpoints.start();
    const final = await source.awaitFinalCheckpoint();
    order.push(`final ${final}`);
    assert.ok(final !== undefined);
    assert.equal(order.at(-1), `final ${final}`);
    assert.ok(order.includes(`complete ${final}`), `told of the completion before: ${order.join(', ')}`);
  });

  it("fails the task's link when the job master cannot give it one, and when the link is closed (the job master is gone)", LINK_TIMEOUT, async () => {
    const sent: unknown[] = [];
    let worker: WorkerCheckpointing | undefined;
    const toWorker = pipe((m: Parameters<WorkerCheckpointing['handle']>[0]) => worker?.handle(m));
    const relay = new WorkerCheckpointRelay({ provider: () => Promise.reject(new Error('snapshot unreadable')), send: toWorker.send });
    worker = new WorkerCheckpointing(pipe((m: Parameters<WorkerCheckpointRelay['handle']>[0]) => relay.handle(m)).send);
    const task: TaskDeployment = { attemptId: 'v#0@0', executionVertexId: 'v#0', vertexId: 'v', vertexIndex: 0, subtask: 0, parallelism: 1, attempt: 0, outputs: [], inputs: [] };
    // an attempt this job master never deployed (a dead master's, on an executor taken over) gets no link
    await assert.rejects(worker.provider(task), (error: unknown) => isEngineError(error, 'WEFT_ERR_TASK_CANCELLED') && /was not deployed by this job master/.test(error.message));
    // linked at the deployment, unasked: the failure is left for the task's own ask
    relay.deployed([task]);
    await assert.rejects(worker.provider(task), /snapshot unreadable/);
    const lonely = new WorkerCheckpointing((m) => sent.push(m));
    const waiting = lonely.provider({ ...task, attemptId: 'v#0@1' });
    lonely.close();
    await assert.rejects(waiting, (error: unknown) => isEngineError(error, 'WEFT_ERR_TASK_CANCELLED') && /lost its job master/.test(error.message));
    await assert.rejects(lonely.provider({ ...task, attemptId: 'v#0@2' }), /the link is closed/);
    assert.equal(sent.length, 1);
  });
});
