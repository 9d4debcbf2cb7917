import { strict as assert } from 'node:assert';
import { createHash } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { type ShuffleDescriptor, deserializeError, isShuffleError, type SerializedShuffleError, taskExecutorId } from '@weft/shuffle-api';
import {
  type RemoteShuffleOptions,
  createBlobStore,
  createMetadataStore,
  createRemoteShuffleServiceFactory,
  objectKey,
  resolveRemoteShuffleOptions,
} from '@weft/shuffle-remote';
import { type Backend, localSqliteBackend, s3RedisBackend } from './helpers/backends.js';
import { startFixture } from './helpers/child-process.js';
import { readPartition, rejection, shuffleFixture, tagOf, taggedRecord, writePartition } from './helpers/shuffle-fixture.js';

/** The blob and metadata stores of `options`, started, as a producer process would open them. */
async function openStores(options: RemoteShuffleOptions) {
  const resolved = resolveRemoteShuffleOptions(options);
  const blob = createBlobStore(resolved.store);
  const meta = createMetadataStore(resolved);
  const close = async (): Promise<void> => {
    await Promise.allSettled([blob.close(), meta.close()]);
  };
  try {
    await Promise.all([blob.start(), meta.start()]);
  } catch (error) {
    await close();
    throw error;
  }
  return { blob, meta, [Symbol.asyncDispose]: close };
}

let labels = 0;
const freshLabel = (name: string): string => `${name}-${++labels}`;

/** The commit record of a partition, read straight from the metadata store. */
async function commitOf(options: RemoteShuffleOptions, descriptor: ShuffleDescriptor) {
  const meta = createMetadataStore(resolveRemoteShuffleOptions(options));
  await meta.start();
  try {
    const lookup = await meta.lookupPartition(descriptor.jobId, descriptor.partition.partitionId);
    assert.ok(lookup.commit, `partition ${descriptor.partition.partitionId} should be committed`);
    return lookup.commit;
  } finally {
    await meta.close();
  }
}

function sha256Of(records: Uint8Array[][]): string {
  const hash = createHash('sha256');
  for (const list of records) for (const r of list) hash.update(r);
  return hash.digest('hex');
}

function expectCode(error: unknown, code: string, partitionId: string): void {
  assert.ok(isShuffleError(error), `expected ${code}, got ${String(error)}`);
  assert.equal(error.code, code, error.message);
  assert.equal(error.context['partitionId'], partitionId, error.message);
}

for (const makeBackend of [localSqliteBackend, s3RedisBackend]) {
  describe(`persisted partitions across processes: ${makeBackend === localSqliteBackend ? 'local directory + SQLite' : 'S3 (s3rver) + Redis'}`, () => {
    let backend: Backend;
    before(async () => {
      backend = await makeBackend();
    });
    after(async () => {
      await backend?.close();
    });

    it('lets exactly one of two producer processes racing to commit win; the other gets COMMIT_CONFLICT and its object is deleted', async () => {
      const label = freshLabel('race');
      const options = backend.options(label);
      await using fx = await shuffleFixture(options);
      const first = await fx.register({ job: label, subpartitions: 2 });
      // two writers of the one registered attempt (a zombie producer and its retry): the first commit wins; a
      // writer of an attempt that is not the registered one may never commit (see the conformance suite)
      const second = first;
      await using a = startFixture('produce', { options, descriptor: first, records: 3000, tag: 10, waitForCommit: true });
      await using b = startFixture('produce', { options, descriptor: second, records: 3000, tag: 20, waitForCommit: true });
      await Promise.all([a.until('ready'), b.until('ready')]);
      a.send('commit');
      b.send('commit');
      const outcomes = await Promise.all([a, b].map((p) => Promise.race([p.until('finished'), p.until('failed')])));
      const winners = outcomes.filter((o) => o.event === 'finished');
      const losers = outcomes.filter((o) => o.event === 'failed');
      assert.equal(winners.length, 1, `exactly one commit wins: ${JSON.stringify(outcomes)}`);
      const loss = deserializeError(losers[0]!['error'] as SerializedShuffleError);
      expectCode(loss, 'SHF_ERR_COMMIT_CONFLICT', 'edge#0');
      await Promise.all([a.exited(), b.exited()]);
      await fx.master.sweep();
      assert.equal((await backend.objectFiles(label)).length, 1, "only the winner's object remains");
      const winnerTag = outcomes[0]!.event === 'finished' ? 10 : 20;
      const read = await readPartition(fx.env, first);
      assert.equal(read.flat().length, 3000);
      assert.deepEqual(new Set(read.flat().map((r) => tagOf(r).tag)), new Set([winnerTag]));
    });

    it('shows nothing of a producer killed with SIGKILL mid-write, and sweeps its object once its lease runs out', async () => {
      const label = freshLabel('sigkill');
      const options = backend.options(label, { attemptLeaseMs: 1000, producerMemoryBytes: backend.redis ? 12 * 1024 * 1024 : 1024 * 1024 });
      await using fx = await shuffleFixture(options);
      const descriptor = await fx.register({ job: label, subpartitions: 2 });
      const producer = startFixture('produce', { options, descriptor, records: 200_000, recordBytes: 200, holdAfter: 150_000 });
      await producer.until('holding');
      await producer.kill('SIGKILL');
      assert.deepEqual(await fx.master.listPartitions(descriptor.jobId), [], 'nothing of a dead producer is listed');
      if (backend.redis === undefined) assert.equal((await backend.objectFiles(label)).length, 1, 'the dead producer left a partial object');
      // once its lease has run out the consumer learns the producer is gone, and a sweep collects the attempt
      let swept = { collectedAttempts: 0, deletedObjects: 0, failedDeletions: 0 };
      for (let tries = 0; swept.collectedAttempts === 0 && tries < 100; tries++) {
        await new Promise((resolve) => setTimeout(resolve, 100));
        swept = await fx.master.sweep();
      }
      // a local object is appended to as the producer runs; with S3 (upload 'spill') nothing went up before finish()
      const expected = { collectedAttempts: 1, deletedObjects: backend.redis === undefined ? 1 : 0, failedDeletions: 0 };
      assert.deepEqual(swept, expected, 'the sweep collects the abandoned attempt and deletes what it left');
      assert.deepEqual(await backend.objectFiles(label), []);
      expectCode(await rejection(readPartition(fx.env, descriptor)), 'SHF_ERR_PRODUCER_FAILED', 'edge#0');
    });

    it('deletes the object of a producer that uploaded it and died before committing, once its lease runs out, and counts only objects that existed', async () => {
      const label = freshLabel('uploaded');
      const options = backend.options(label, { attemptLeaseMs: 500 });
      await using fx = await shuffleFixture(options);
      const descriptor = await fx.register({ job: label, subpartitions: 2 });
      await using stores = await openStores(options);
      const { blob, meta } = stores;
      // two producers of the partition that died before their commit: one after uploading its whole object, one before its first byte
      const attempt = (writeId: string) => {
        const ids = { writeId, jobId: descriptor.jobId, partitionId: descriptor.partition.partitionId, producerId: descriptor.producer.producerId };
        return { ...ids, objectKey: objectKey(ids) };
      };
      const uploaded = attempt('died-after-upload');
      const empty = attempt('died-before-upload');
      assert.equal(await meta.beginAttempt(uploaded), 'ok');
      assert.equal(await meta.beginAttempt(empty), 'ok');
      const writer = await blob.createWriter(uploaded.objectKey);
      await writer.append([taggedRecord(1, 0, 0, 64 * 1024)]);
      await writer.complete();

      assert.deepEqual(await blob.listKeys(), [uploaded.objectKey], 'the uploaded object is in the store');
      assert.deepEqual(await fx.master.listPartitions(descriptor.jobId), [], 'an attempt that never committed is not listed');
      const total = { collectedAttempts: 0, deletedObjects: 0, failedDeletions: 0 };
      for (let tries = 0; total.collectedAttempts < 2 && tries < 100; tries++) {
        await new Promise((resolve) => setTimeout(resolve, 100));
        const swept = await fx.master.sweep();
        total.collectedAttempts += swept.collectedAttempts;
        total.deletedObjects += swept.deletedObjects;
        total.failedDeletions += swept.failedDeletions;
      }
      assert.deepEqual(total, { collectedAttempts: 2, deletedObjects: 1, failedDeletions: 0 }, 'both attempts collected, one object deleted');
      assert.deepEqual(await blob.listKeys(), [], 'the store is empty');
      assert.deepEqual(await backend.objectFiles(label), []);
      expectCode(await rejection(readPartition(fx.env, descriptor)), 'SHF_ERR_PRODUCER_FAILED', 'edge#0');
    });

    it('deletes at unregisterJob the object of a producer that died mid-write, though its partition was released before (the engine releases partitions as the job goes)', async () => {
      const label = freshLabel('released-then-unregister');
      const options = backend.options(label, { attemptLeaseMs: 60_000 });
      await using fx = await shuffleFixture(options);
      const descriptor = await fx.register({ job: label, subpartitions: 2 });
      await using stores = await openStores(options);
      const { blob, meta } = stores;
      const ids = { writeId: 'killed-then-released', jobId: descriptor.jobId, partitionId: descriptor.partition.partitionId, producerId: descriptor.producer.producerId };
      const dead = { ...ids, objectKey: objectKey(ids) };
      assert.equal(await meta.beginAttempt(dead), 'ok');
      const writer = await blob.createWriter(dead.objectKey);
      await writer.append([taggedRecord(1, 0, 0, 64 * 1024)]);
      await writer.complete();
      await fx.master.releasePartitionExternally(descriptor);
      assert.deepEqual(await blob.listKeys(), [dead.objectKey], 'its lease still runs: the release leaves the object to a sweep');
      await fx.master.unregisterJob(descriptor.jobId);
      assert.deepEqual(await blob.listKeys(), [], 'the job is over: the object is gone at once');
      assert.deepEqual(await backend.objectFiles(label), []);
    });

    it('deletes at unregisterJob the object of a producer that died mid-write with its lease still running, and a sweep still collects what it writes later', async () => {
      const label = freshLabel('unregister');
      const options = backend.options(label, { attemptLeaseMs: 60_000 });
      await using fx = await shuffleFixture(options);
      const descriptor = await fx.register({ job: label, subpartitions: 2 });
      await using stores = await openStores(options);
      const { blob, meta } = stores;
      const ids = { writeId: 'killed-mid-write', jobId: descriptor.jobId, partitionId: descriptor.partition.partitionId, producerId: descriptor.producer.producerId };
      const dead = { ...ids, objectKey: objectKey(ids) };
      assert.equal(await meta.beginAttempt(dead), 'ok');
      const writer = await blob.createWriter(dead.objectKey);
      await writer.append([taggedRecord(1, 0, 0, 64 * 1024)]);
      await writer.complete();
      assert.deepEqual(await fx.master.sweep(), { collectedAttempts: 0, deletedObjects: 0, failedDeletions: 0 }, 'its lease protects it from a sweep');

      await fx.master.unregisterJob(descriptor.jobId);
      assert.deepEqual(await blob.listKeys(), [], 'the job is over: its object is gone at once, not after the 60 s lease');
      assert.deepEqual(await backend.objectFiles(label), []);

      // a writer that was in fact still alive completes its object again after that: its commit is refused,
      // and its record, kept, lets a sweep collect the object once the lease has run out
      const late = await blob.createWriter(dead.objectKey);
      await late.append([taggedRecord(1, 0, 1, 1024)]);
      await late.complete();
      const outcome = await meta.commit({
        writeId: dead.writeId,
        jobId: descriptor.jobId,
        partitionId: descriptor.partition.partitionId,
        descriptor,
        objectKey: dead.objectKey,
        objectBytes: 1028,
        numberOfRegions: 1,
        indexOffset: 0,
        indexLength: 0,
        subpartitionBytes: [1028, 0],
        totalBytes: 1028,
        storedBytes: 1028,
        committedAtMs: Date.now(),
      });
      assert.notEqual(outcome.status, 'committed', 'the partition is gone with its job');
      // no sweep at start: the one below must be the sweep that finds it (a slow start would take it first)
      const sweeper = await shuffleFixture({ ...options, attemptLeaseMs: 100, sweepOnStart: false });
      try {
        await new Promise((resolve) => setTimeout(resolve, 500));
        const swept = await sweeper.master.sweep();
        assert.equal(swept.deletedObjects, 1);
      } finally {
        await sweeper[Symbol.asyncDispose]();
      }
      assert.deepEqual(await blob.listKeys(), []);
    });

    it('reads back, in order, records larger than a region followed by many regions of small ones (default upload mode)', async () => {
      const label = freshLabel('oversized');
      await using fx = await shuffleFixture(backend.options(label, { producerMemoryBytes: 1024 * 1024 }));
      const descriptor = await fx.register({ job: label, subpartitions: 2 });
      const writer = await fx.env.createResultPartitionWriter({ descriptor });
      const expected: Uint8Array[][] = [[], []];
      const emit = async (s: number, record: Uint8Array): Promise<void> => {
        expected[s]!.push(record);
        if (!writer.emitRecord(record, s)) await writer.ready();
      };
      let i = 0;
      for (; i < 1000; i++) await emit(i % 2, taggedRecord(1, i % 2, i, 300));
      await emit(0, taggedRecord(1, 0, i++, 3 * 1024 * 1024));
      await emit(0, taggedRecord(1, 0, i++, 2 * 1024 * 1024));
      for (const end = i + 6000; i < end; i++) await emit(i % 2, taggedRecord(1, i % 2, i, 300));
      await writer.finish();
      await writer.close();
      const read = await readPartition(fx.env, descriptor);
      for (let s = 0; s < 2; s++) {
        assert.equal(read[s]!.length, expected[s]!.length, `subpartition ${s}: every record`);
        read[s]!.forEach((record, k) => assert.ok(Buffer.from(record).equals(expected[s]![k]!), `subpartition ${s}, record ${k}: byte for byte, in order`));
      }
    });

    it('reports one corrupted byte as DATA_CORRUPTED naming the partition and the block', async () => {
      const label = freshLabel('corrupt');
      const options = backend.options(label);
      await using fx = await shuffleFixture(options);
      const descriptor = await fx.register({ job: label, subpartitions: 2 });
      await writePartition(fx.env, descriptor, 3000, 5, 300);
      const commit = await commitOf(options, descriptor);
      const target = Math.floor(commit.indexOffset / 2);
      await backend.flipByte(label, commit.objectKey, target);
      const error = await rejection(readPartition(fx.env, descriptor));
      expectCode(error, 'SHF_ERR_DATA_CORRUPTED', 'edge#0');
      const block = (error as { context: Record<string, unknown> }).context['block'] as number;
      assert.ok(block <= target && target < block + 40_000, `block ${block} holds byte ${target}`);
      assert.match((error as Error).message, /block at byte \d+ \(region \d+, subpartition [01]\)/);
    });

    it('reports a deleted data object as PARTITION_NOT_FOUND naming the partition', async () => {
      const label = freshLabel('deleted');
      const options = backend.options(label);
      await using fx = await shuffleFixture(options);
      const descriptor = await fx.register({ job: label, subpartitions: 2 });
      await writePartition(fx.env, descriptor, 100);
      const commit = await commitOf(options, descriptor);
      await backend.deleteObject(label, commit.objectKey);
      const error = await rejection(readPartition(fx.env, descriptor));
      expectCode(error, 'SHF_ERR_PARTITION_NOT_FOUND', 'edge#0');
      assert.match((error as Error).message, /data object .* is gone/);
    });

    it('lets a reader in another process read what this process committed, byte for byte', async () => {
      const label = freshLabel('reader');
      const options = backend.options(label);
      await using fx = await shuffleFixture(options);
      const descriptor = await fx.register({ job: label, subpartitions: 3 });
      await writePartition(fx.env, descriptor, 2000, 8, 150);
      const expected = sha256Of(await readPartition(fx.env, descriptor));
      await using reader = startFixture('consume', { options, descriptor });
      const result = await Promise.race([reader.until('read'), reader.until('failed')]);
      assert.deepEqual(result, { event: 'read', records: 6000, sha256: expected });
    });

    it('lists committed partitions with their sizes after the master process is killed and restarted', async () => {
      const label = freshLabel('master');
      const options = backend.options(label);
      const first = startFixture('master-register', { options, job: label, partitions: [{ index: 0, subpartitions: 2 }, { index: 1, subpartitions: 2 }] });
      try {
        const { descriptors } = (await first.until('registered')) as unknown as { descriptors: ShuffleDescriptor[] };
        const env = createRemoteShuffleServiceFactory(options).createShuffleEnvironment({ taskExecutorId: taskExecutorId('it') });
        try {
          await writePartition(env, descriptors[0]!, 100, 1, 96);
          await writePartition(env, descriptors[1]!, 300, 2, 46);
        } finally {
          await env.close();
        }
        first.send('list');
        const before = ((await first.until('listed')) as unknown as { partitions: unknown[] }).partitions;
        assert.equal(before.length, 2);
        await first.kill('SIGKILL');
        await using second = startFixture('master-list', { options, job: label });
        const afterRestart = ((await second.until('listed')) as unknown as { partitions: { subpartitionBytes: number[]; totalBytes: number }[] }).partitions;
        assert.deepEqual(afterRestart, before);
        assert.deepEqual(afterRestart.map((p) => p.subpartitionBytes), [[10_000, 10_000], [15_000, 15_000]]);
      } finally {
        await first.kill();
      }
    });
  });
}

describe('Redis restarted during a job', () => {
  let backend: Backend;
  before(async () => {
    backend = await s3RedisBackend();
  });
  after(async () => {
    await backend?.close();
  });

  it('fails operations with retryable STORAGE_UNAVAILABLE while Redis is down, then recovers with nothing lost', async () => {
    const label = freshLabel('redis-restart');
    const options = backend.options(label, { metaRetryAttempts: 3, metaRetryInitialDelayMs: 20, metaRetryMaxDelayMs: 50 });
    const redis = backend.redis!;
    await using fx = await shuffleFixture(options);
    const done = await fx.register({ job: label, index: 0, subpartitions: 2 });
    const pending = await fx.register({ job: label, index: 1, subpartitions: 2 });
    await writePartition(fx.env, done, 500, 1);
    const writer = await fx.env.createResultPartitionWriter({ descriptor: pending });
    for (let i = 0; i < 500; i++) writer.emitRecord(taggedRecord(2, i % 2, i), i % 2);

    await redis.stop();
    const commitError = await rejection(writer.finish());
    assert.ok(isShuffleError(commitError, 'SHF_ERR_STORAGE_UNAVAILABLE'), `expected STORAGE_UNAVAILABLE, got ${String(commitError)}`);
    assert.equal(commitError.retryable, true);
    const listError = await rejection(fx.master.listPartitions(done.jobId));
    assert.ok(isShuffleError(listError, 'SHF_ERR_STORAGE_UNAVAILABLE') && listError.retryable, String(listError));
    const readError = await rejection(readPartition(fx.env, done));
    assert.ok(isShuffleError(readError, 'SHF_ERR_STORAGE_UNAVAILABLE') && readError.retryable, String(readError));

    await redis.start();
    // the connection comes back by itself; the same writer's commit is retried by calling finish() again
    let committed = false;
    for (let tries = 0; !committed && tries < 100; tries++) {
      try {
        await writer.finish();
        committed = true;
      } catch (error) {
        assert.ok(isShuffleError(error, 'SHF_ERR_STORAGE_UNAVAILABLE'), String(error));
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
    }
    await writer.close();
    assert.ok(committed, 'the commit lands once Redis is back');
    const listed = await fx.master.listPartitions(done.jobId);
    assert.deepEqual(listed.map((p) => p.descriptor.partition.partitionId), ['edge#0', 'edge#1']);
    assert.equal((await readPartition(fx.env, done)).flat().length, 1000);
    assert.equal((await readPartition(fx.env, pending)).flat().length, 500);
  });
});
