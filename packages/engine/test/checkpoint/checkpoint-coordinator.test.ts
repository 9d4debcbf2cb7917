// The checkpoint coordinator on fake timers and an in-memory store: periodic triggers, completion only once
// every task acknowledged and the store recorded it, retention, subsumption, expiry, declines, store
// failures, the tolerated-failure count, the pause after completion, and ids that keep increasing.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { CheckpointCoordinator, type CheckpointCoordinatorOptions, type CheckpointStore, EngineError, InMemoryCheckpointStore, isEngineError } from '@weft/engine';

class FakeTimers {
  now = 1_000;
  #next = 1;
  readonly #timers = new Map<number, { due: number; callback: () => void }>();
  setTimeout = (callback: () => void, ms: number): unknown => {
    const id = this.#next++;
    this.#timers.set(id, { due: this.now + ms, callback });
    return id;
  };
  clearTimeout = (handle: unknown): void => {
    this.#timers.delete(handle as number);
  };
  async advance(ms: number): Promise<void> {
    const target = this.now + ms;
    for (;;) {
      const due = [...this.#timers.entries()].filter(([, t]) => t.due <= target).sort((a, b) => a[1].due - b[1].due || a[0] - b[0])[0];
      if (due === undefined) break;
      this.#timers.delete(due[0]);
      this.now = due[1].due;
      due[1].callback();
      await settle();
    }
    this.now = target;
    await settle();
  }
}

async function settle(): Promise<void> {
  for (let i = 0; i < 10; i++) await new Promise((resolve) => setImmediate(resolve));
}

function harness(options: Partial<CheckpointCoordinatorOptions> = {}, store: CheckpointStore = new InMemoryCheckpointStore()) {
  const timers = new FakeTimers();
  const events: string[] = [];
  const discarded: string[] = [];
  const failures: Error[] = [];
  const coordinator = new CheckpointCoordinator({
    tasks: ['src#0', 'sink#0'],
    intervalMs: 100,
    store,
    triggerSources: (id) => {
      events.push(`trigger ${id}`);
    },
    notifyComplete: (id) => events.push(`complete ${id}`),
    notifyAborted: (id, reason) => events.push(`abort ${id} ${reason}`),
    discardState: async (handle) => {
      discarded.push(String(handle['key']));
    },
    onFailure: (error) => failures.push(error),
    clock: () => timers.now,
    timers,
    ...options,
  });
  const ackAll = async (id: number): Promise<void> => {
    await coordinator.acknowledge(id, 'src#0', { key: `${id}/src` });
    await coordinator.acknowledge(id, 'sink#0', { key: `${id}/sink` });
  };
  return { timers, events, discarded, failures, coordinator, store, ackAll };
}

describe('CheckpointCoordinator', () => {
  it('triggers every interval and completes a checkpoint once every task acknowledged and the store holds it', async () => {
    const h = harness();
    await h.coordinator.start();
    await h.timers.advance(99);
    assert.deepEqual(h.events, []);
    await h.timers.advance(1);
    assert.deepEqual(h.events, ['trigger 1']);
    await h.coordinator.acknowledge(1, 'src#0', { key: '1/src' });
    assert.deepEqual([h.events.length, (await h.store.completed()).length], [1, 0], 'one acknowledgement completes nothing');
    await h.coordinator.acknowledge(1, 'sink#0', { key: '1/sink' });
    assert.deepEqual(h.events, ['trigger 1', 'complete 1']);
    const [completed] = await h.store.completed();
    assert.deepEqual(completed, { checkpointId: 1, triggeredAtMs: 1_100, completedAtMs: 1_100, tasks: { 'sink#0': { key: '1/sink' }, 'src#0': { key: '1/src' } } });
    assert.equal(h.coordinator.latestCompleted?.checkpointId, 1);
    await h.timers.advance(100);
    assert.equal(h.events.at(-1), 'trigger 2');
    h.coordinator.stop();
  });

  it('settled() waits for a completion under way: stored, the subsumed one discarded, notifyComplete called', async () => {
    // a store whose writes of checkpoint 2 wait until released: the completion stays under way meanwhile
    let release = (): void => {};
    const gate = new Promise<void>((resolve) => (release = resolve));
    const inner = new InMemoryCheckpointStore();
    const slow: CheckpointStore = {
      nextCheckpointId: () => inner.nextCheckpointId(),
      completed: () => inner.completed(),
      remove: (id) => inner.remove(id),
      addCompleted: async (c) => {
        if (c.checkpointId === 2) await gate;
        return inner.addCompleted(c);
      },
    };
    const h = harness({ retained: 1 }, slow);
    await h.coordinator.start();
    await h.timers.advance(100);
    await h.ackAll(1);
    await h.timers.advance(100);
    const acked = h.ackAll(2);
    await settle();
    let settled = false;
    const waiting = h.coordinator.settled().then(() => (settled = true));
    await settle();
    assert.equal(settled, false, 'checkpoint 2 is still being stored');
    assert.deepEqual(h.discarded, [], 'checkpoint 1 is not discarded yet');
    release();
    await Promise.all([acked, waiting]);
    assert.deepEqual(h.events.slice(-1), ['complete 2']);
    assert.deepEqual(h.discarded.sort(), ['1/sink', '1/src'], 'by the time settled() resolves, 1 is gone and 2 is the latest');
    assert.equal(h.coordinator.latestCompleted?.checkpointId, 2);
    await h.coordinator.settled();
    h.coordinator.stop();
  });

  it('keeps `retained` completed checkpoints and discards the state of older ones', async () => {
    const h = harness({ retained: 2 });
    await h.coordinator.start();
    for (let id = 1; id <= 3; id++) {
      await h.timers.advance(100);
      await h.ackAll(id);
    }
    assert.deepEqual((await h.store.completed()).map((c) => c.checkpointId), [2, 3]);
    assert.deepEqual(h.discarded.sort(), ['1/sink', '1/src']);
    h.coordinator.stop();
  });

  it('with one pending at a time skips triggers; an expired checkpoint fails the job master when none is tolerated, and the count starts again', async () => {
    const h = harness({ timeoutMs: 250 });
    await h.coordinator.start();
    await h.timers.advance(100);
    await h.coordinator.acknowledge(1, 'src#0', { key: '1/src' });
    await h.timers.advance(200);
    assert.deepEqual(h.events, ['trigger 1'], 'no second trigger while 1 is pending');
    await h.timers.advance(50);
    assert.deepEqual(h.events, ['trigger 1', 'abort 1 EXPIRED']);
    assert.deepEqual(h.discarded, ['1/src'], 'what was acknowledged for it is discarded');
    assert.equal(h.failures.length, 1);
    assert.ok(isEngineError(h.failures[0], 'WEFT_ERR_CHECKPOINT_FAILED') && /checkpoint 1 failed \(EXPIRED\): 1 checkpoint failures in a row, 0 tolerated/.test(h.failures[0]!.message));
    // Flink's CheckpointFailureManager clears its count when it fails the job: the job master fails over
    // globally (or the job fails and stops the coordinator), and the coordinator triggers for the restarted tasks
    await h.timers.advance(100);
    assert.deepEqual(h.events, ['trigger 1', 'abort 1 EXPIRED', 'trigger 2'], 'it goes on triggering');
    await h.ackAll(2);
    assert.equal(h.coordinator.latestCompleted?.checkpointId, 2);
    await h.timers.advance(100);
    await h.timers.advance(250);
    assert.deepEqual(h.events.slice(3, 6), ['complete 2', 'trigger 3', 'abort 3 EXPIRED']);
    assert.equal(h.failures.length, 2);
    assert.match(h.failures[1]!.message, /checkpoint 3 failed \(EXPIRED\): 1 checkpoint failures in a row, 0 tolerated/, 'counted from 0 again');
    h.coordinator.stop();
    const stoppedAt = h.events.length;
    await h.timers.advance(1_000);
    assert.deepEqual(h.events.slice(stoppedAt).filter((e) => e.startsWith('trigger')), [], 'a stopped coordinator triggers nothing more');
  });

  it('counts consecutive failures only: a success in between resets; declines for input reasons and subsumed ones do not count', async () => {
    const h = harness({ tolerableFailures: 1, maxConcurrent: 2 });
    await h.coordinator.start();
    await h.timers.advance(100);
    h.coordinator.decline(1, 'sink#0', 'TASK_FAILURE'); // 1 counted failure: tolerated
    await h.timers.advance(100);
    await h.ackAll(2); // resets
    await h.timers.advance(100);
    h.coordinator.decline(3, 'src#0', 'TASK_FAILURE'); // 1 again
    await h.timers.advance(100);
    h.coordinator.decline(4, 'src#0', 'DECLINED'); // not counted
    await h.timers.advance(100); // 5
    await h.timers.advance(100); // 6, while 5 is pending
    await h.ackAll(6); // subsumes 5 (not counted)
    assert.equal(h.failures.length, 0);
    assert.deepEqual(h.events, ['trigger 1', 'abort 1 TASK_FAILURE', 'trigger 2', 'complete 2', 'trigger 3', 'abort 3 TASK_FAILURE', 'trigger 4', 'abort 4 DECLINED', 'trigger 5', 'trigger 6', 'abort 5 SUBSUMED', 'complete 6']);
    await h.timers.advance(100);
    h.coordinator.decline(7, 'src#0', 'TASK_FAILURE');
    await h.timers.advance(100);
    h.coordinator.decline(8, 'src#0', 'TASK_FAILURE', 'task src#0@0 could not make its snapshot durable: disk full');
    assert.equal(h.failures.length, 1, 'the second counted failure in a row fails the job');
    assert.match(h.failures[0]!.message, /checkpoint 8 failed \(TASK_FAILURE: task src#0@0 could not make its snapshot durable: disk full\): 2 checkpoint failures in a row, 1 tolerated/, 'naming why the task declined it');
  });

  it('a failover aborts what is pending (FAILOVER), which does not count toward the tolerated failures', async () => {
    const h = harness({ timeoutMs: 250 });
    await h.coordinator.start();
    await h.timers.advance(100);
    await h.coordinator.acknowledge(1, 'src#0', { key: '1/src' });
    h.coordinator.abortPending();
    assert.deepEqual(h.events, ['trigger 1', 'abort 1 FAILOVER']);
    assert.deepEqual(h.discarded, ['1/src']);
    await h.timers.advance(260); // past when checkpoint 1 would have expired (350)
    assert.deepEqual(h.events, ['trigger 1', 'abort 1 FAILOVER', 'trigger 2']);
    assert.equal(h.failures.length, 0, 'no failure counted, none tolerated notwithstanding');
    h.coordinator.stop();
  });

  it('a checkpoint counts as completed only once the store recorded it; a store failure aborts it (STORE_FAILURE, counted)', async () => {
    const store = new InMemoryCheckpointStore();
    let fail = true;
    const flaky: CheckpointStore = { nextCheckpointId: () => store.nextCheckpointId(), completed: () => store.completed(), remove: (id) => store.remove(id), addCompleted: async (c) => (fail ? Promise.reject(new Error('disk full')) : store.addCompleted(c)) };
    const h = harness({ tolerableFailures: 1 }, flaky);
    await h.coordinator.start();
    await h.timers.advance(100);
    await h.ackAll(1);
    assert.deepEqual(h.events, ['trigger 1', 'abort 1 STORE_FAILURE']);
    assert.equal(h.coordinator.latestCompleted?.checkpointId, undefined);
    assert.deepEqual(h.discarded.sort(), ['1/sink', '1/src']);
    fail = false;
    await h.timers.advance(100);
    await h.ackAll(2);
    assert.equal(h.coordinator.latestCompleted?.checkpointId, 2);
    assert.equal(h.failures.length, 0);
    h.coordinator.stop();
  });

  // Before, a refusal of the next id was taken for an unreachable store: no checkpoint was ever triggered
  // again, nothing told the job master, and a streaming job's ended sources waited forever for the final one.
  it('a store that refuses this run (WEFT_ERR_FENCED: a newer job master took the job over) stops it and fails the job master with the refusal', async () => {
    const store = new InMemoryCheckpointStore();
    const fenced = new EngineError('WEFT_ERR_FENCED', 'job j: checkpoint by epoch 1 refused, epoch 2 opened the job since', { context: { jobId: 'j', epoch: 1, newestEpoch: 2 } });
    let refuse: 'none' | 'id' | 'record' = 'none';
    const taken: CheckpointStore = {
      nextCheckpointId: () => (refuse === 'id' ? Promise.reject(fenced) : store.nextCheckpointId()),
      completed: () => store.completed(),
      remove: (id) => store.remove(id),
      addCompleted: (c) => (refuse === 'record' ? Promise.reject(fenced) : store.addCompleted(c)),
    };
    for (const [where, tolerableFailures] of [['id', 5], ['record', 5], ['id', 0], ['record', 0]] as const) {
      refuse = 'none';
      // with none tolerated, a refusal counted as a failure would fail over globally before the fence is seen
      const h = harness({ tolerableFailures }, taken);
      await h.coordinator.start();
      refuse = where;
      await h.timers.advance(100);
      // refused at record: the triggered checkpoint is acknowledged by every task, then not recorded
      if (where === 'record') await h.ackAll(Number(h.events[0]?.split(' ')[1]));
      assert.equal(h.failures.length, 1, `refused at ${where} (${tolerableFailures} tolerated): the job master is told once, at once: ${h.failures.map((f) => f.message).join(' | ')}`);
      assert.equal(h.failures[0], fenced);
      const events = h.events.length;
      await h.timers.advance(500);
      assert.equal(h.events.length, events, `refused at ${where}: no checkpoint is triggered any more`);
    }
  });

  it('discards the state of late and repeated acknowledgements, and refuses a task it does not know', async () => {
    const h = harness();
    await h.coordinator.start();
    await h.timers.advance(100);
    await h.coordinator.acknowledge(1, 'src#0', { key: 'first' });
    await h.coordinator.acknowledge(1, 'src#0', { key: 'again' });
    h.coordinator.decline(1, 'sink#0', 'DECLINED');
    await h.coordinator.acknowledge(1, 'sink#0', { key: 'late' });
    assert.deepEqual(h.discarded.sort(), ['again', 'first', 'late']);
    await assert.rejects(h.coordinator.acknowledge(2, 'map#3', {}), (e: unknown) => isEngineError(e, 'WEFT_ERR_INVALID_ARGUMENT'));
    h.coordinator.stop();
  });

  it('waits minPauseMs after a completion before the next trigger', async () => {
    const h = harness({ minPauseMs: 350 });
    await h.coordinator.start();
    await h.timers.advance(100);
    await h.ackAll(1); // completed at 1100
    await h.timers.advance(349);
    assert.deepEqual(h.events, ['trigger 1', 'complete 1']);
    await h.timers.advance(1);
    assert.equal(h.events.at(-1), 'trigger 2');
    assert.equal(h.timers.now, 1_450);
    h.coordinator.stop();
  });

  it('a new coordinator on the same store continues its ids and knows the latest completed checkpoint', async () => {
    const store = new InMemoryCheckpointStore();
    const first = harness({}, store);
    await first.coordinator.start();
    await first.timers.advance(100);
    await first.ackAll(1);
    first.coordinator.stop();
    const second = harness({}, store);
    await second.coordinator.start();
    assert.equal(second.coordinator.latestCompleted?.checkpointId, 1);
    await second.timers.advance(100);
    assert.deepEqual(second.events, ['trigger 2']);
    second.coordinator.stop();
    assert.deepEqual(second.events, ['trigger 2', 'abort 2 COORDINATOR_STOPPED']);
  });

  it('refuses bad options by name', () => {
    const base = harness();
    const refused = (field: string) => (e: unknown) => isEngineError(e, 'WEFT_ERR_INVALID_ARGUMENT') && e.context['field'] === field;
    const ok: CheckpointCoordinatorOptions = { tasks: ['a'], intervalMs: 10, store: base.store, triggerSources: () => {}, onFailure: () => {} };
    assert.throws(() => new CheckpointCoordinator({ ...ok, intervalMs: 0 }), refused('options.intervalMs'));
    assert.throws(() => new CheckpointCoordinator({ ...ok, tasks: [] }), refused('options.tasks'));
    assert.throws(() => new CheckpointCoordinator({ ...ok, tasks: ['a', 'a'] }), refused('options.tasks'));
    assert.throws(() => new CheckpointCoordinator({ ...ok, retained: 0 }), refused('options.retained'));
    assert.throws(() => new CheckpointCoordinator({ ...ok, interval: 5 } as never), refused('options.interval'));
  });
});
