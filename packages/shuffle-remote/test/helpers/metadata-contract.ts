import { strict as assert } from 'node:assert';
import { it } from 'node:test';
import { type Logger, type ShuffleDescriptor, isShuffleError } from '@weft/shuffle-api';
import type { CommitRecord, MetadataStore } from '@weft/shuffle-remote';

/**
 * A store used before `start()` or after `close()` fails at once and is never retried (the retrying
 * wrapper would otherwise wait through its backoff, seconds, for a store that cannot come back by itself).
 * `create` returns a store, not started, built with `logger` (retries log a warning).
 */
export function metadataStoreLifecycleContract(create: (label: string, logger: Logger) => MetadataStore): void {
  it('fails at once and without retrying when used before start() (INVALID_ARGUMENT, field state) or after close() (CLOSED)', async () => {
    const warnings: unknown[] = [];
    const logger: Logger = {
      debug: () => {},
      info: () => {},
      warn: (fields, message) => warnings.push(message ?? fields),
      error: () => {},
      child: () => logger,
    };
    const store = create(`lifecycle-${process.pid}`, logger);
    try {
      const early = await store.registerJob('lifecycle').then(() => undefined, (error: unknown) => error);
      assert.ok(isShuffleError(early, 'SHF_ERR_INVALID_ARGUMENT'), `before start(): ${String(early)}`);
      assert.equal(early.retryable, false);
      assert.equal(early.context['field'], 'state');
      assert.match(early.message, /not started/);
      await store.start();
      await store.registerJob('lifecycle');
    } finally {
      await store.close();
    }
    const late = await store.listCommitted('lifecycle').then(() => undefined, (error: unknown) => error);
    assert.ok(isShuffleError(late, 'SHF_ERR_CLOSED'), `after close(): ${String(late)}`);
    assert.equal(late.retryable, false);
    assert.deepEqual(warnings, [], 'nothing was retried');
  });
}

/** The MetadataStore contract, run against SQLite (unit) and Redis (integration). */
export function metadataStoreContract(createStore: (label: string) => Promise<MetadataStore>): void {
  let n = 0;
  const withStore = async (body: (store: MetadataStore, job: string) => Promise<void>): Promise<void> => {
    const label = `contract-${process.pid}-${++n}`;
    const store = await createStore(label);
    try {
      await body(store, label);
    } finally {
      await store.close();
    }
  };
  const descriptor = (job: string, partitionId: string): ShuffleDescriptor =>
    ({
      shuffleServiceId: 'remote',
      jobId: job,
      partition: { resultId: 'e', partitionId, partitionIndex: 0, partitionType: 'BLOCKING', numberOfSubpartitions: 2 },
      producer: { producerId: 'm#0@0', attempt: 0, taskExecutorId: 't' },
      details: {},
    }) as unknown as ShuffleDescriptor;
  const commit = (job: string, partitionId: string, writeId: string): CommitRecord => ({
    jobId: job,
    partitionId,
    writeId,
    descriptor: descriptor(job, partitionId),
    objectKey: `${job}/${writeId}.wsm`,
    objectBytes: 100,
    numberOfRegions: 1,
    indexOffset: 50,
    indexLength: 2,
    subpartitionBytes: [10, 20],
    totalBytes: 30,
    storedBytes: 50,
    committedAtMs: 0,
  });
  const begin = (store: MetadataStore, job: string, partitionId: string, writeId: string) =>
    store.beginAttempt({ writeId, jobId: job, partitionId, producerId: `m#0@${writeId}`, objectKey: `${job}/${writeId}.wsm` });

  it('lets exactly one of many concurrent commits of a partition land, and repeats it idempotently', async () =>
    withStore(async (store, job) => {
      await store.registerPartition({ jobId: job, partitionId: 'e#0', persistent: false, descriptor: descriptor(job, 'e#0') });
      const writers = Array.from({ length: 8 }, (_, i) => `w${i}`);
      for (const w of writers) assert.equal(await begin(store, job, 'e#0', w), 'ok');
      const outcomes = await Promise.all(writers.map((w) => store.commit(commit(job, 'e#0', w))));
      const won = outcomes.flatMap((o, i) => (o.status === 'committed' ? [writers[i]!] : []));
      assert.equal(won.length, 1, JSON.stringify(outcomes));
      for (const o of outcomes) if (o.status !== 'committed') assert.deepEqual(o, { status: 'conflict', winner: won[0] });
      assert.deepEqual(await store.commit(commit(job, 'e#0', won[0]!)), { status: 'committed' });
      const lookup = await store.lookupPartition(job, 'e#0');
      assert.equal(lookup.commit?.writeId, won[0]);
      assert.deepEqual(lookup.commit?.subpartitionBytes, [10, 20]);
      assert.equal(lookup.attempts.filter((a) => a.state === 'conflicted').length, 7);
      assert.deepEqual((await store.listCommitted(job)).map((c) => c.writeId), won);
    }));

  it('refuses attempts and commits of partitions that are not registered', async () =>
    withStore(async (store, job) => {
      assert.equal(await begin(store, job, 'ghost#0', 'w'), 'not-registered');
      await store.registerPartition({ jobId: job, partitionId: 'e#1', persistent: false, descriptor: descriptor(job, 'e#1') });
      assert.equal(await begin(store, job, 'e#1', 'w1'), 'ok');
      await store.releasePartition(job, 'e#1');
      assert.deepEqual(await store.commit(commit(job, 'e#1', 'w1')), { status: 'not-registered' });
      assert.deepEqual(await store.listCommitted(job), []);
    }));

  it('records failures for consumers, and hands garbage to the sweep only once its writer let go', async () =>
    withStore(async (store, job) => {
      await store.registerPartition({ jobId: job, partitionId: 'e#2', persistent: false, descriptor: descriptor(job, 'e#2') });
      await begin(store, job, 'e#2', 'failed');
      await begin(store, job, 'e#2', 'live');
      await store.failAttempt('failed', { name: 'Error', message: 'boom' });
      assert.deepEqual(await store.collectGarbage(60_000, 100), [], 'a failed writer still holding its object is not collected');
      await store.closeAttempt('failed');
      const garbage = await store.collectGarbage(60_000, 100);
      assert.deepEqual(garbage.map((a) => a.writeId), ['failed']);
      await store.forgetAttempt('failed');
      assert.deepEqual(await store.collectGarbage(60_000, 100), []);
      const lookup = await store.lookupPartition(job, 'e#2');
      const failed = lookup.attempts.find((a) => a.writeId === 'failed');
      assert.equal(failed?.state, 'failed');
      assert.equal(failed?.failure?.message, 'boom');
      assert.equal(failed?.collected, true);
      assert.equal(await store.heartbeat('live'), 'writing');
    }));

  it('marks writers whose lease ran out abandoned, and fences them from committing', async () =>
    withStore(async (store, job) => {
      await store.registerPartition({ jobId: job, partitionId: 'e#3', persistent: false, descriptor: descriptor(job, 'e#3') });
      await begin(store, job, 'e#3', 'dead');
      await new Promise((resolve) => setTimeout(resolve, 120));
      const garbage = await store.collectGarbage(50, 100);
      assert.deepEqual(garbage.map((a) => [a.writeId, a.state]), [['dead', 'abandoned']]);
      assert.equal(await store.heartbeat('dead'), 'abandoned');
      assert.deepEqual(await store.commit(commit(job, 'e#3', 'dead')), { status: 'fenced', state: 'abandoned' });
    }));

  it('releases a job but its persistent partitions, and a release removes commit and attempts', async () =>
    withStore(async (store, job) => {
      for (const [id, persistent] of [['e#4', false], ['e#5', true]] as const) {
        await store.registerPartition({ jobId: job, partitionId: id, persistent, descriptor: descriptor(job, id) });
        await begin(store, job, id, `w-${id.replace('#', '')}`);
        assert.deepEqual(await store.commit(commit(job, id, `w-${id.replace('#', '')}`)), { status: 'committed' });
        await store.closeAttempt(`w-${id.replace('#', '')}`);
      }
      const released = await store.releaseJob(job, true);
      assert.equal(released.status, 'released');
      if (released.status !== 'released') return;
      assert.deepEqual(released.attempts.map((a) => [a.writeId, a.state]), [['w-e4', 'released']]);
      // the release reports the store's clock (milliseconds), which leases are judged by
      const storeNow = (await store.lookupPartition(job, 'e#5')).nowMs;
      assert.ok(Math.abs(released.nowMs - storeNow) < 60_000, `release at ${released.nowMs}, store clock ${storeNow}`);
      assert.deepEqual((await store.listCommitted(job)).map((c) => c.partitionId), ['e#5']);
      for (const attempt of released.attempts) await store.forgetAttempt(attempt.writeId);
      assert.deepEqual((await store.lookupPartition(job, 'e#4')).attempts, []);
      assert.equal((await store.lookupPartition(job, 'e#4')).registered, false);
    }));

  // Before, the partition's release by the newer run was found first: an old run's task failed with
  // SHF_ERR_PARTITION_NOT_FOUND, not a fencing refusal, so the old job master did not learn it was fenced.
  it('refuses the commit of an older epoch as epoch-fenced, even once the newer epoch released its partition, or committed its own attempt', async () =>
    withStore(async (store, job) => {
      const at = (partitionId: string, epoch: number) => ({ ...descriptor(job, partitionId), details: { epoch } }) as ShuffleDescriptor;
      assert.deepEqual(await store.registerJob(job, 1), { status: 'registered' });
      for (const id of ['g#0', 'g#1']) {
        await store.registerPartition({ jobId: job, partitionId: id, persistent: false, descriptor: at(id, 1), epoch: 1 });
        await begin(store, job, id, `w-old${id.slice(2)}`);
      }
      // epoch 2 takes over: it releases g#0, which epoch 1 left unfinished, and produces g#1 again, committing first
      assert.deepEqual(await store.registerJob(job, 2), { status: 'registered' });
      assert.equal((await store.releasePartition(job, 'g#0', 2)).status, 'released');
      await store.registerPartition({ jobId: job, partitionId: 'g#1', persistent: false, descriptor: at('g#1', 2), epoch: 2 });
      await begin(store, job, 'g#1', 'w-new1');
      assert.deepEqual(await store.commit({ ...commit(job, 'g#1', 'w-new1'), descriptor: at('g#1', 2) }), { status: 'committed' });
      for (const id of ['g#0', 'g#1']) assert.deepEqual(await store.commit({ ...commit(job, id, `w-old${id.slice(2)}`), descriptor: at(id, 1) }), { status: 'epoch-fenced', epoch: 1, newestEpoch: 2 }, id);
      assert.deepEqual((await store.listCommitted(job)).map((c) => c.writeId), ['w-new1'], "the newer run's commit stays");
    }));

  it('refuses, atomically and deleting nothing, the releases of an epoch older than the one that registered the job since', async () =>
    withStore(async (store, job) => {
      assert.deepEqual(await store.registerJob(job, 1), { status: 'registered' });
      for (const id of ['f#0', 'f#1']) {
        await store.registerPartition({ jobId: job, partitionId: id, persistent: false, descriptor: descriptor(job, id), epoch: 1 });
        await begin(store, job, id, `w-${id.replace('#', '')}`);
        assert.deepEqual(await store.commit(commit(job, id, `w-${id.replace('#', '')}`)), { status: 'committed' });
      }
      // epoch 1 releases what it decides to while it is the newest
      const own = await store.releasePartition(job, 'f#1', 1);
      assert.equal(own.status, 'released');
      // epoch 2 takes over: registering the job raises its epoch before anything is listed
      assert.deepEqual(await store.registerJob(job, 2), { status: 'registered' });
      assert.deepEqual(await store.registerJob(job, 1), { status: 'fenced', newestEpoch: 2 });
      assert.deepEqual(await store.releasePartition(job, 'f#0', 1), { status: 'fenced', newestEpoch: 2 });
      assert.deepEqual(await store.releaseJob(job, true, 1), { status: 'fenced', newestEpoch: 2 });
      assert.deepEqual((await store.listCommitted(job)).map((c) => c.partitionId), ['f#0'], 'the fenced releases deleted nothing');
      assert.equal((await store.lookupPartition(job, 'f#0')).registered, true);
      // without an epoch, or with the newest, a release goes through
      assert.equal((await store.releasePartition(job, 'f#0', 2)).status, 'released');
      assert.equal((await store.releaseJob(job, true)).status, 'released');
      assert.deepEqual(await store.listCommitted(job), []);
    }));
}
