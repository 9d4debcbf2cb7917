import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { JobEventLog } from '@weft/engine';
import type { JobEventLogOptions } from '@weft/job-store';
import { startChildLog } from './child-log-process.js';
import { RecordingLogger } from './recording-logger.js';

/** What the contract needs from one implementation, beyond the JobEventLog itself. */
export interface JobEventLogHarness {
  /** Starts what the store needs (a temp dir, a redis-server). */
  setUp(): Promise<void>;
  tearDown(): Promise<void>;
  /** The store's URL, for child processes. */
  url(): string;
  /** A store handle on the same data; `keyPrefix` is set by the contract. */
  create(options: JobEventLogOptions): Promise<JobEventLog>;
  /** Adds a damaged entry after the last one (as a write torn by a crash leaves it). */
  appendTorn(jobId: string): Promise<void>;
  /** Adds a whole entry with these fields after the last one, bypassing the API (no epoch check). */
  appendRaw(jobId: string, event: { v: number; seq: number; epoch: number; atMs: number; type: string; data: unknown }): Promise<void>;
  /** Makes the store fail transiently (lock held, server down) until `restore()`. */
  disrupt(): Promise<void>;
  restore(): Promise<void>;
  /**
   * Makes every later write fail with an error that is not transient (a full disk, a store out of
   * memory), until `unbreakWrites()`. Optional: the case is skipped without it.
   */
  breakWrites?(): Promise<void>;
  unbreakWrites?(): Promise<void>;
}

const isCode = (code: string) => (error: unknown) => {
  assert.equal((error as { code?: unknown } | null)?.code, code, `expected ${code}, got ${String(error)}`);
  return true;
};

/**
 * The JobEventLog contract (job-event-log.ts in @weft/engine), run against a real store: order, epochs,
 * fencing (in one process and across two), durability across SIGKILL, torn tails, newer versions,
 * transient failures, deleteRun and close.
 */
export function describeJobEventLogContract(name: string, harness: JobEventLogHarness): void {
  describe(`${name}: the JobEventLog contract`, () => {
    let n = 0;
    const keyPrefix = `weft-test:${name}:${process.pid}:`;
    const jobId = (): string => `job-${++n}`;
    const create = (options: JobEventLogOptions = {}): Promise<JobEventLog> => harness.create({ keyPrefix, ...options });

    before(() => harness.setUp());
    after(() => harness.tearDown());

    it('reads back appended events in order, each stamped v 1, seq from 1 and the epoch', async () => {
      await using store = await create();
      const id = jobId();
      const log = await store.open({ jobId: id, owner: 'test' });
      assert.equal(log.epoch, 1);
      assert.deepEqual(log.history, []);
      const appended = [];
      for (const type of ['job-submitted', 'task-deployed', 'task-finished']) appended.push(await log.append({ type, data: { type, n: [1, 2] } }));
      assert.deepEqual(
        appended.map((e) => [e.v, e.seq, e.epoch, e.type]),
        [
          [1, 1, 1, 'job-submitted'],
          [1, 2, 1, 'task-deployed'],
          [1, 3, 1, 'task-finished'],
        ],
      );
      assert.deepEqual(await store.readRun(id), appended);
      const next = await store.open({ jobId: id, owner: 'test' });
      assert.deepEqual(next.history, appended);
      assert.equal((await next.append({ type: 'job-finished', data: null })).seq, 4);
      assert.deepEqual(await store.readRun('never-opened'), []);
    });

    it('keeps appends of one log in call order when they are not awaited one by one', async () => {
      await using store = await create();
      const id = jobId();
      const log = await store.open({ jobId: id, owner: 'test' });
      await Promise.all(Array.from({ length: 20 }, (_, i) => log.append({ type: 'task-finished', data: { i } })));
      assert.deepEqual(
        (await store.readRun(id)).map((e) => [e.seq, (e.data as { i: number }).i]),
        Array.from({ length: 20 }, (_, i) => [i + 1, i]),
      );
    });

    it('gives every open() of a job a higher epoch, across store handles', async () => {
      const id = jobId();
      const epochs: number[] = [];
      for (let i = 0; i < 3; i++) {
        await using store = await create();
        epochs.push((await store.open({ jobId: id, owner: `test-${i}` })).epoch);
      }
      assert.deepEqual(epochs, [1, 2, 3]);
    });

    it('refuses an older epoch’s append after a newer open() with WEFT_ERR_FENCED, and writes nothing', async () => {
      await using store = await create();
      await using other = await create();
      const id = jobId();
      const old = await store.open({ jobId: id, owner: 'old' });
      await old.append({ type: 'job-submitted', data: {} });
      const fresh = await other.open({ jobId: id, owner: 'new' });
      assert.equal(fresh.epoch, old.epoch + 1);
      await assert.rejects(old.append({ type: 'task-finished', data: { executionVertexId: 'a#0' } }), (error: unknown) => {
        isCode('WEFT_ERR_FENCED')(error);
        assert.equal((error as { context: Record<string, unknown> }).context['newestEpoch'], fresh.epoch);
        return true;
      });
      await assert.rejects(old.append({ type: 'task-finished', data: {} }), isCode('WEFT_ERR_FENCED'));
      assert.deepEqual((await store.readRun(id)).map((e) => e.type), ['job-submitted']);
      assert.equal((await fresh.append({ type: 'job-finished', data: {} })).seq, 2);
    });

    it('fences a job master in another process that was stopped (SIGSTOP) while a newer one opened the job', async () => {
      const id = jobId();
      await using child = startChildLog({ url: harness.url(), jobId: id, keyPrefix });
      assert.equal(await child.next(), 'opened 1');
      child.send('append job-submitted');
      assert.equal(await child.next(), 'appended 1');
      child.process.kill('SIGSTOP');
      await using store = await create();
      const log = await store.open({ jobId: id, owner: 'parent' });
      assert.equal(log.epoch, 2);
      child.send('append task-finished');
      child.process.kill('SIGCONT');
      assert.equal(await child.next(), 'error WEFT_ERR_FENCED');
      assert.deepEqual((await store.readRun(id)).map((e) => [e.seq, e.epoch, e.type]), [[1, 1, 'job-submitted']]);
    });

    it('keeps an event whose append resolved when its process is SIGKILLed right after', async () => {
      const id = jobId();
      {
        await using child = startChildLog({ url: harness.url(), jobId: id, keyPrefix });
        assert.equal(await child.next(), 'opened 1');
        child.send('append task-finished');
        assert.equal(await child.next(), 'appended 1');
        await child.kill('SIGKILL');
      }
      await using store = await create();
      assert.deepEqual((await store.readRun(id)).map((e) => [e.seq, e.type, (e.data as { from: string }).from]), [[1, 'task-finished', 'child']]);
    });

    it('ends the history at the last whole event when the last one is torn, with a warning, and appends after it', async () => {
      const logger = new RecordingLogger();
      await using store = await create({ logger });
      const id = jobId();
      const log = await store.open({ jobId: id, owner: 'test' });
      await log.append({ type: 'job-submitted', data: {} });
      await log.append({ type: 'task-finished', data: {} });
      await harness.appendTorn(id);
      assert.deepEqual((await store.readRun(id)).map((e) => e.seq), [1, 2]);
      assert.ok(logger.warnings.some((w) => /torn/.test(w.message) && w.fields['jobId'] === id), JSON.stringify(logger.warnings));
      const next = await store.open({ jobId: id, owner: 'test' });
      assert.deepEqual(next.history.map((e) => e.seq), [1, 2]);
      assert.equal((await next.append({ type: 'task-finished', data: {} })).seq, 3);
      assert.deepEqual((await store.readRun(id)).map((e) => [e.seq, e.epoch]), [[1, 1], [2, 1], [3, 2]]);
    });

    it('refuses a log that is damaged in the middle (whole events after a damaged one) with WEFT_ERR_EVENT_LOG', async () => {
      await using store = await create();
      const id = jobId();
      const log = await store.open({ jobId: id, owner: 'test' });
      await log.append({ type: 'job-submitted', data: {} });
      await harness.appendTorn(id);
      await harness.appendRaw(id, { v: 1, seq: 3, epoch: 1, atMs: 1, type: 'task-finished', data: {} });
      await assert.rejects(store.readRun(id), (error: unknown) => isCode('WEFT_ERR_EVENT_LOG')(error) && /corrupt/.test((error as Error).message));
      await assert.rejects(store.open({ jobId: id, owner: 'test' }), isCode('WEFT_ERR_EVENT_LOG'));
    });

    it('refuses a log written by a newer format version, naming the version, and lists the run as unreadable', async () => {
      await using store = await create();
      const id = jobId();
      const log = await store.open({ jobId: id, owner: 'test' });
      await log.append({ type: 'job-submitted', data: { name: 'x', tasksTotal: 1 } });
      await harness.appendRaw(id, { v: 2, seq: 2, epoch: 1, atMs: 1, type: 'task-finished', data: {} });
      await assert.rejects(store.readRun(id), (error: unknown) => isCode('WEFT_ERR_EVENT_LOG')(error) && /version 2/.test((error as Error).message));
      await assert.rejects(store.open({ jobId: id, owner: 'test' }), isCode('WEFT_ERR_EVENT_LOG'));
      const run = (await store.listRuns()).find((r) => r.jobId === id);
      assert.equal(run?.status, 'unreadable');
      assert.match(run?.problem ?? '', /version 2/);
    });

    it('retries an append while the store is unavailable and resolves once it is back, writing the event once', async () => {
      await using store = await create({ retryTimeoutMs: 20_000 });
      const id = jobId();
      const log = await store.open({ jobId: id, owner: 'test' });
      await log.append({ type: 'job-submitted', data: {} });
      await harness.disrupt();
      let settled = false;
      const pending = log.append({ type: 'task-finished', data: { executionVertexId: 'a#0' } }).finally(() => (settled = true));
      pending.catch(() => {});
      try {
        await new Promise((resolve) => setTimeout(resolve, 300));
        assert.equal(settled, false, 'the append waits for the store');
      } finally {
        await harness.restore();
      }
      assert.equal((await pending).seq, 2);
      assert.deepEqual((await store.readRun(id)).map((e) => [e.seq, e.type]), [[1, 'job-submitted'], [2, 'task-finished']]);
    });

    it('fails an append loudly with WEFT_ERR_EVENT_LOG once the store stays unavailable past retryTimeoutMs, and every later one', async () => {
      await using store = await create({ retryTimeoutMs: 300 });
      const id = jobId();
      const log = await store.open({ jobId: id, owner: 'test' });
      await harness.disrupt();
      try {
        await assert.rejects(log.append({ type: 'task-finished', data: {} }), (error: unknown) => isCode('WEFT_ERR_EVENT_LOG')(error) && /retryTimeoutMs 300/.test((error as Error).message));
      } finally {
        await harness.restore();
      }
      await assert.rejects(log.append({ type: 'task-finished', data: {} }), isCode('WEFT_ERR_EVENT_LOG'));
      await using reader = await create();
      assert.deepEqual(await reader.readRun(id), []);
    });

    it('fails an append whose store refuses the write for good (disk full) with WEFT_ERR_EVENT_LOG, its cause kept, and every later one', { skip: harness.breakWrites === undefined }, async () => {
      await using store = await create({ retryTimeoutMs: 300 });
      const id = jobId();
      const log = await store.open({ jobId: id, owner: 'test' });
      await log.append({ type: 'job-submitted', data: {} });
      await harness.breakWrites?.();
      try {
        await assert.rejects(
          log.append({ type: 'task-finished', data: { executionVertexId: 'a#0' } }),
          (error: unknown) => isCode('WEFT_ERR_EVENT_LOG')(error) && /append/.test((error as Error).message) && (error as Error).cause !== undefined,
        );
      } finally {
        await harness.unbreakWrites?.();
      }
      await assert.rejects(log.append({ type: 'task-finished', data: {} }), isCode('WEFT_ERR_EVENT_LOG'));
      await using reader = await create();
      assert.deepEqual((await reader.readRun(id)).map((e) => e.type), ['job-submitted']);
    });

    it('sums up runs for listRuns: status from the last events, tasks finished unless reset later, epoch', async () => {
      await using store = await create();
      const id = jobId();
      const log = await store.open({ jobId: id, owner: 'host:1' });
      await log.append({ type: 'job-submitted', data: { name: 'wordcount', tasksTotal: 4 } });
      for (const v of ['a#0', 'a#1', 'b#0']) await log.append({ type: 'task-finished', data: { executionVertexId: v, attempt: 1 } });
      await log.append({ type: 'tasks-reset', data: { tasks: ['a#1', 'b#0'], reason: 'lost' } });
      await log.append({ type: 'task-finished', data: { executionVertexId: 'a#1', attempt: 2 } });
      let run = (await store.listRuns()).find((r) => r.jobId === id);
      assert.deepEqual(
        { status: run?.status, name: run?.jobName, total: run?.tasksTotal, finished: run?.tasksFinished, epoch: run?.epoch, events: run?.events, owner: run?.owner },
        { status: 'unfinished', name: 'wordcount', total: 4, finished: 2, epoch: 1, events: 6, owner: 'host:1' },
      );
      await log.append({ type: 'job-failed', data: { error: 'boom' } });
      run = (await store.listRuns()).find((r) => r.jobId === id);
      assert.equal(run?.status, 'failed');
      assert.equal(run?.lastType, 'job-failed');
    });

    it('deletes a run: its events and lease go, and its old log can no longer append', async () => {
      await using store = await create();
      const id = jobId();
      const log = await store.open({ jobId: id, owner: 'test' });
      await log.append({ type: 'job-submitted', data: {} });
      await store.deleteRun(id);
      await store.deleteRun('never-opened');
      assert.deepEqual(await store.readRun(id), []);
      assert.equal((await store.listRuns()).some((r) => r.jobId === id), false);
      await assert.rejects(log.append({ type: 'task-finished', data: {} }), isCode('WEFT_ERR_FENCED'));
      assert.deepEqual(await store.readRun(id), []);
      // the id runs again above the deleted run's epoch (shuffles still fence by the epochs they saw)
      const again = await store.open({ jobId: id, owner: 'test' });
      assert.ok(again.epoch > log.epoch, `epoch ${again.epoch} after the deleted run's ${log.epoch}`);
      assert.deepEqual(again.history, []);
      await again.append({ type: 'job-submitted', data: {} });
      assert.deepEqual((await store.listRuns()).filter((r) => r.jobId === id).map((r) => r.epoch), [again.epoch]);
    });

    it('opens and deletes only at the expected epoch (ifEpoch): a run that opened the id since is neither fenced nor deleted', async () => {
      await using store = await create();
      const id = jobId();
      const first = await store.open({ jobId: id, owner: 'dead master' });
      await first.append({ type: 'job-submitted', data: {} });
      const seen = (await store.listRuns()).find((r) => r.jobId === id);
      assert.equal(seen?.epoch, first.epoch);
      // a new run opens the id after the record was read: the conditional open refuses, changing nothing
      const newer = await store.open({ jobId: id, owner: 'new master' });
      await assert.rejects(store.open({ jobId: id, owner: 'gc', ifEpoch: seen?.epoch ?? 0 }), isCode('WEFT_ERR_FENCED'));
      await newer.append({ type: 'task-deployed', data: {} });
      const now = (await store.listRuns()).find((r) => r.jobId === id);
      assert.deepEqual([now?.epoch, now?.owner, now?.events], [newer.epoch, 'new master', 2]);
      // at the epoch it holds, the open goes through (the next epoch) and fences the run it read
      const gc = await store.open({ jobId: id, owner: 'gc', ifEpoch: newer.epoch });
      assert.equal(gc.epoch, newer.epoch + 1);
      await assert.rejects(newer.append({ type: 'task-finished', data: {} }), isCode('WEFT_ERR_FENCED'));
      // a run that opens after gc's lease keeps its log: gc's conditional delete refuses
      const latest = await store.open({ jobId: id, owner: 'latest master' });
      await assert.rejects(store.deleteRun(id, { ifEpoch: gc.epoch }), isCode('WEFT_ERR_FENCED'));
      await latest.append({ type: 'task-finished', data: {} });
      assert.deepEqual((await store.readRun(id)).map((e) => e.type), ['job-submitted', 'task-deployed', 'task-finished']);
      // at its own epoch the delete goes through
      await store.deleteRun(id, { ifEpoch: latest.epoch });
      assert.deepEqual(await store.readRun(id), []);
      // an id never opened has no lease: epoch 0
      const fresh = await store.open({ jobId: jobId(), owner: 'gc', ifEpoch: 0 });
      assert.equal(fresh.epoch, 1);
    });

    it('renews an open log\'s lease every second, and not once a newer epoch holds it', async () => {
      await using store = await create();
      const id = jobId();
      const log = await store.open({ jobId: id, owner: 'first' });
      await log.append({ type: 'job-submitted', data: {} });
      const taken = (await store.listRuns()).find((r) => r.jobId === id)?.leaseRenewedAtMs as number;
      await new Promise((r) => setTimeout(r, 2_300));
      const renewed = (await store.listRuns()).find((r) => r.jobId === id)?.leaseRenewedAtMs as number;
      assert.ok(renewed >= taken + 1_000, `renewed at ${renewed}, taken at ${taken}`);
      const newer = await store.open({ jobId: id, owner: 'second' });
      const takenByNewer = (await store.listRuns()).find((r) => r.jobId === id)?.leaseRenewedAtMs as number;
      await newer.close(); // the newer one stops renewing: only the old one could move the record now
      await new Promise((r) => setTimeout(r, 2_300));
      const record = (await store.listRuns()).find((r) => r.jobId === id);
      assert.equal(record?.owner, 'second');
      assert.equal(record?.leaseRenewedAtMs, takenByNewer, 'the fenced log renews nothing');
      await log.close();
    });

    it('refuses data that is not JSON without writing', async () => {
      await using store = await create();
      const id = jobId();
      const log = await store.open({ jobId: id, owner: 'test' });
      await assert.rejects(log.append({ type: 'x', data: 10n }), isCode('WEFT_ERR_INVALID_ARGUMENT'));
      await assert.rejects(log.append({ type: 'x', data: undefined }), isCode('WEFT_ERR_INVALID_ARGUMENT'));
      await assert.rejects(log.append({ type: '', data: 1 }), isCode('WEFT_ERR_INVALID_ARGUMENT'));
      assert.equal((await log.append({ type: 'x', data: 1 })).seq, 1);
    });

    it('readRunRecord answers the record listRuns has for one job id, undefined for an unknown one', async () => {
      await using store = await create();
      const id = jobId();
      const other = jobId();
      const log = await store.open({ jobId: id, owner: 'test' });
      await log.append({ type: 'job-submitted', data: { name: 'one', tasksTotal: 3 } });
      await log.append({ type: 'task-finished', data: { executionVertexId: 'a#0' } });
      await (await store.open({ jobId: other, owner: 'test' })).append({ type: 'job-submitted', data: { name: 'two' } });
      const listed = (await store.listRuns()).find((r) => r.jobId === id);
      assert.deepEqual(await store.readRunRecord?.(id), listed);
      assert.equal((await store.readRunRecord?.(id))?.tasksFinished, 1);
      assert.equal(await store.readRunRecord?.('never-opened'), undefined);
    });

    it('overwrites the live progress snapshot (no event, no history) and drops a fenced log\'s; deleteRun removes it', async () => {
      await using store = await create();
      const id = jobId();
      assert.equal(await store.readProgress?.(id), undefined);
      const log = await store.open({ jobId: id, owner: 'test' });
      const progress = (tasksFinished: number) => ({ elapsedMs: 10, tasksFinished, tasksTotal: 4, tasksRunning: 1, regionsFinished: 0, regionsTotal: 2, recordsRead: 5 * tasksFinished, recordsShuffled: 3, bytesShuffled: 30, failures: 0 });
      await log.publishProgress?.(progress(1));
      await log.publishProgress?.(progress(2));
      const read = await store.readProgress?.(id);
      assert.equal(read?.jobId, id);
      assert.equal(read?.epoch, 1);
      assert.deepEqual(read?.progress, progress(2));
      await log.publishProgress?.({ ...progress(2), vertices: [{ id: 'a', recordsIn: 7, recordsOut: 3 }] });
      assert.deepEqual((await store.readProgress?.(id))?.progress.vertices, [{ id: 'a', recordsIn: 7, recordsOut: 3 }], 'per-vertex counters round-trip');
      assert.deepEqual(await store.readRun(id), [], 'progress is not an event');
      const newer = await store.open({ jobId: id, owner: 'test' });
      await log.publishProgress?.(progress(3));
      assert.equal((await store.readProgress?.(id))?.progress.tasksFinished, 2, 'a fenced log publishes nothing');
      await newer.publishProgress?.(progress(4));
      assert.equal((await store.readProgress?.(id))?.epoch, 2);
      await newer.close();
      await assert.rejects(Promise.resolve(newer.publishProgress?.(progress(5))), isCode('SHF_ERR_CLOSED'));
      await store.deleteRun(id);
      assert.equal(await store.readProgress?.(id), undefined);
    });

    it('closes once (a second close waits for the first); calls after close reject with SHF_ERR_CLOSED', async () => {
      const store = await create();
      const id = jobId();
      const log = await store.open({ jobId: id, owner: 'test' });
      const pending = log.append({ type: 'job-submitted', data: {} });
      await log.close();
      assert.equal((await pending).seq, 1, 'an append called before close completes');
      await assert.rejects(log.append({ type: 'x', data: 1 }), isCode('SHF_ERR_CLOSED'));
      const other = await store.open({ jobId: id, owner: 'test' });
      const first = store.close();
      const second = store.close();
      await Promise.all([first, second]);
      await assert.rejects(other.append({ type: 'x', data: 1 }), isCode('SHF_ERR_CLOSED'));
      await assert.rejects(store.open({ jobId: id, owner: 'test' }), isCode('SHF_ERR_CLOSED'));
      await assert.rejects(store.listRuns(), isCode('SHF_ERR_CLOSED'));
      await assert.rejects(store.readRun(id), isCode('SHF_ERR_CLOSED'));
      await assert.rejects(store.deleteRun(id), isCode('SHF_ERR_CLOSED'));
    });
  });
}
