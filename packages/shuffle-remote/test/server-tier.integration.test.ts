import { strict as assert } from 'node:assert';
import { readdir, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { ListObjectsV2Command, PutObjectCommand } from '@aws-sdk/client-s3';
import { isShuffleError } from '@weft/shuffle-api';
import { rejectionOf } from '@weft/shuffle-api/testing';
import type { S3StoreOptions } from '@weft/shuffle-remote';
import { ShuffleServerClient, createJobToken, resolveShuffleServerClientOptions } from '@weft/shuffle-remote/client';
import { type ShuffleServer, type TierMode, startShuffleServer } from '@weft/shuffle-remote/server';
import { type RedisServer, type S3Server, createTempDir, s3Call, startRecordingProxy, startRedis, startS3Server } from '@weft/testkit';
import { TEST_SECRET, startServerCluster } from './helpers/server-cluster.js';
import { encodeObject, eventually, fetchedRecords, testDescriptor, text } from './helpers/server-objects.js';
import { startPausableProxy } from './helpers/pausable-proxy.js';
import { s3StoreOn } from './helpers/s3-store-on.js';

// A shuffle server's S3 tier against a real s3rver (and Redis for the cross-server commit index): only
// committed, unreleased partitions may ever be S3 objects; S3 transfers are bounded by tier.maxTransfers.
const BUCKET = 'tier';
const JOB = 'tier-job';
let redis: RedisServer;
let s3: S3Server;
let namespaces = 0;

before(async () => {
  [redis, s3] = await Promise.all([startRedis({ persistent: false }), startS3Server({ buckets: [BUCKET] })]);
});

after(async () => {
  await Promise.allSettled([redis?.close(), s3?.stop()]);
});

function freshStore(): S3StoreOptions {
  return s3StoreOn(s3, BUCKET, `ns${++namespaces}-${process.pid}/`);
}

/** The object keys in the store's namespace of the bucket (what S3 holds as objects, not open uploads). */
async function tierKeys(store: S3StoreOptions): Promise<string[]> {
  const page = await s3.client().send(new ListObjectsV2Command({ Bucket: BUCKET, Prefix: store.prefix }));
  return (page.Contents ?? []).map((o) => o.Key!.slice(store.prefix!.length)).sort();
}

async function filesUnder(dir: string): Promise<string[]> {
  const entries = await readdir(dir, { recursive: true, withFileTypes: true }).catch(() => []);
  return entries.filter((e) => e.isFile()).map((e) => join(e.parentPath ?? '', e.name));
}

/** A valid object of `records` records of `recordBytes` bytes each (raw blocks: its size is about their sum). */
async function object(tag: string, records: number, recordBytes = 100): Promise<Awaited<ReturnType<typeof encodeObject>>> {
  return encodeObject([[Array.from({ length: records }, (_, i) => text(`${tag}-${i}-${'x'.repeat(recordBytes)}`))]], 'none');
}

const SMALL = 20;
/** More than one write-through part (5 MiB here): a part goes to S3 while the push runs. */
const BIG_RECORDS = 100;
const BIG_RECORD_BYTES = 64 * 1024;

for (const mode of ['write-through', 'on-commit'] as const satisfies readonly TierMode[]) {
  describe(`shuffle server S3 tier (${mode})`, () => {
    it('leaves S3 objects of committed, unreleased partitions only: after an abort, a local and a cross-server conflict, a late push, the sweep and releases', async () => {
      const store = freshStore();
      await using cluster = await startServerCluster({ redisUrl: redis.url, count: 2, server: { tier: { store, mode } } });
      const [a, b] = cluster.servers as [ShuffleServer, ShuffleServer];
      const sweeping = await cluster.addServer({ uncommittedTtlMs: 200 });
      const client = new ShuffleServerClient(resolveShuffleServerClientOptions({ servers: cluster.servers.map((s) => s.url), retryAttempts: 1 }));
      const token = createJobToken(Buffer.from(TEST_SECRET), JOB);
      const at = (server: ShuffleServer, partitionId: string, attempt: number) => ({ url: server.url, token, jobId: JOB, partitionId, attempt });
      const descriptor = (partitionId: string, attempt: number, type: 'BLOCKING' | 'BLOCKING_PERSISTENT' = 'BLOCKING') =>
        testDescriptor({ jobId: JOB, partitionId, attempt, subpartitions: 1, token, type });
      const committed = new Set<string>();
      const expectOnlyCommitted = async (after: string): Promise<void> => {
        assert.deepEqual(await tierKeys(store), [...committed].sort(), `after ${after}, S3 must hold exactly the committed partitions`);
      };
      try {
        const small = await object('small', SMALL);
        const big = await object('big', BIG_RECORDS, BIG_RECORD_BYTES);
        assert.ok(big.bytes.length > 5 * 1024 * 1024);

        // a partition committed and kept, one persistent, one to release
        for (const [partitionId, type] of [['keep#0', 'BLOCKING'], ['pers#0', 'BLOCKING_PERSISTENT'], ['rel#0', 'BLOCKING']] as const) {
          await client.push({ ...at(a, partitionId, 0), body: [big.bytes], length: big.bytes.length });
          committed.add((await client.commit(at(a, partitionId, 0), descriptor(partitionId, 0, type), big.subpartitionBytes)).objectKey);
        }
        await expectOnlyCommitted('three commits');

        // a failed writer: pushed (write-through: parts already in S3), then aborted
        await client.push({ ...at(a, 'ab#0', 0), body: [big.bytes], length: big.bytes.length });
        await client.abort(at(a, 'ab#0', 0));
        await expectOnlyCommitted('an abort');

        // two attempts on one server: the loser's copy goes
        await client.push({ ...at(a, 'lc#0', 0), body: [big.bytes], length: big.bytes.length });
        await client.push({ ...at(a, 'lc#0', 1), body: [small.bytes], length: small.bytes.length });
        committed.add((await client.commit(at(a, 'lc#0', 1), descriptor('lc#0', 1), small.subpartitionBytes)).objectKey);
        assert.ok(isShuffleError(await rejectionOf(client.commit(at(a, 'lc#0', 0), descriptor('lc#0', 0), big.subpartitionBytes)), 'SHF_ERR_COMMIT_CONFLICT'));
        await expectOnlyCommitted('a conflict on one server');

        // two attempts on two servers: the commit index refuses the second, whose copy was complete
        await client.push({ ...at(a, 'xc#0', 0), body: [big.bytes], length: big.bytes.length });
        await client.push({ ...at(b, 'xc#0', 1), body: [small.bytes], length: small.bytes.length });
        committed.add((await client.commit(at(b, 'xc#0', 1), descriptor('xc#0', 1), small.subpartitionBytes)).objectKey);
        assert.ok(isShuffleError(await rejectionOf(client.commit(at(a, 'xc#0', 0), descriptor('xc#0', 0), big.subpartitionBytes)), 'SHF_ERR_COMMIT_CONFLICT'));
        await expectOnlyCommitted('a conflict across servers');

        // a push that ends after another attempt committed: 409, and what it sent to S3 goes
        let release: () => void = () => undefined;
        const held = new Promise<void>((resolve) => (release = resolve));
        const cut = 6 * 1024 * 1024; // past the first part
        async function* slow(): AsyncIterable<Uint8Array> {
          yield big.bytes.subarray(0, cut);
          await held;
          yield big.bytes.subarray(cut);
        }
        const late = client.push({ ...at(a, 'lp#0', 0), body: slow() });
        await eventually(async () => (await filesUnder(join(cluster.dirs[0]!.path, 'objects'))).some((f) => f.includes('lp%230')), 'the late push to reach the disk');
        await client.push({ ...at(a, 'lp#0', 1), body: [small.bytes], length: small.bytes.length });
        committed.add((await client.commit(at(a, 'lp#0', 1), descriptor('lp#0', 1), small.subpartitionBytes)).objectKey);
        release();
        const lateError = await rejectionOf(late);
        assert.ok(isShuffleError(lateError, 'SHF_ERR_COMMIT_CONFLICT'), String(lateError));
        await expectOnlyCommitted('a push that lost to a commit');

        // a push nobody commits: the sweep deletes it, S3 upload included
        await client.push({ ...at(sweeping, 'sw#0', 0), body: [big.bytes], length: big.bytes.length });
        await eventually(async () => (await filesUnder(join(cluster.dirs[2]!.path, 'objects'))).length === 0, 'the sweep to delete the push');
        await expectOnlyCommitted('the sweep');

        // releases: one partition, then the job keeping its persistent partition (an upload in progress too)
        await client.release(a.url, token, JOB, 'rel#0');
        committed.delete([...committed].find((k) => k.includes('rel%230'))!);
        await expectOnlyCommitted('a release');
        await client.push({ ...at(b, 'pending#0', 0), body: [big.bytes], length: big.bytes.length });
        for (const server of cluster.servers) await client.releaseJob(server.url, token, JOB, true);
        for (const key of [...committed]) if (!key.includes('pers%230')) committed.delete(key);
        assert.equal(committed.size, 1);
        await expectOnlyCommitted('releasing the job but its persistent partition');
        for (const server of cluster.servers) await client.releaseJob(server.url, token, JOB, false);
        committed.clear();
        await expectOnlyCommitted('releasing the whole job');
      } finally {
        await client.close();
      }
    });
  });
}

describe('shuffle server S3 tier: start-up, offload, transfer limit', () => {
  it('deletes at start-up the S3 copy of an object that was never committed (a crash between the copy and the commit)', async () => {
    const store = freshStore();
    await using dir = await createTempDir('weft-ss-tier-gc-');
    const options = { dir: dir.path, secret: TEST_SECRET, tier: { store, mode: 'on-commit' as const } };
    const first = await startShuffleServer(options);
    const client = new ShuffleServerClient(resolveShuffleServerClientOptions({ servers: [first.url] }));
    const token = createJobToken(Buffer.from(TEST_SECRET), JOB);
    const small = await object('gc', SMALL);
    try {
      await client.push({ url: first.url, token, jobId: JOB, partitionId: 'gc#0', attempt: 0, body: [small.bytes], length: small.bytes.length });
    } finally {
      await client.close();
      await first.close();
    }
    const [file] = await filesUnder(join(dir.path, 'objects'));
    const key = file!.slice(join(dir.path, 'objects').length + 1);
    // what a crash right after the S3 copy completed leaves: the copy, and a disk object with no commit record
    await s3.client().send(new PutObjectCommand({ Bucket: BUCKET, Key: `${store.prefix}${key}`, Body: small.bytes }));
    assert.deepEqual(await tierKeys(store), [key]);
    const second = await startShuffleServer(options);
    try {
      assert.deepEqual(await filesUnder(join(dir.path, 'objects')), []);
      assert.deepEqual(await tierKeys(store), [], 'start-up deletes the S3 copy of the uncommitted object');
    } finally {
      await second.close();
    }
  });

  for (const mode of ['write-through', 'on-commit'] as const) {
    it(`offloads (${mode}, keepLocal: false): a committed partition leaves the disk and is fetched from S3, and its release deletes it there`, async () => {
      const store = freshStore();
      await using dir = await createTempDir('weft-ss-offload-');
      const server = await startShuffleServer({ dir: dir.path, secret: TEST_SECRET, tier: { store, mode, keepLocal: false } });
      const client = new ShuffleServerClient(resolveShuffleServerClientOptions({ servers: [server.url] }));
      const token = createJobToken(Buffer.from(TEST_SECRET), JOB);
      try {
        const big = await object('off', BIG_RECORDS, BIG_RECORD_BYTES);
        const target = { url: server.url, token, jobId: JOB, partitionId: 'off#0', attempt: 0 };
        await client.push({ ...target, body: [big.bytes], length: big.bytes.length });
        const record = await client.commit(target, testDescriptor({ jobId: JOB, partitionId: 'off#0', attempt: 0, subpartitions: 1, token }), big.subpartitionBytes);
        assert.deepEqual(await filesUnder(join(dir.path, 'objects')), [], 'the disk copy is gone once committed');
        assert.deepEqual(await tierKeys(store), [record.objectKey]);
        const [records] = await fetchedRecords(await client.fetch({ ...target, start: 0, end: 0 }), 0, 0, 'off#0');
        assert.equal(records?.length, BIG_RECORDS);
        assert.equal(records?.[BIG_RECORDS - 1], `off-${BIG_RECORDS - 1}-${'x'.repeat(BIG_RECORD_BYTES)}`);
        await client.release(server.url, token, JOB, 'off#0');
        assert.deepEqual(await tierKeys(store), []);
        assert.ok(isShuffleError(await rejectionOf(client.fetch({ ...target, start: 0, end: 0 })), 'SHF_ERR_PARTITION_NOT_FOUND'));
      } finally {
        await client.close();
        await server.close();
      }
    });
  }

  it('runs at most tier.maxTransfers S3 transfers: a commit beyond the limit waits its turn, then commits', async () => {
    await using proxy = await startPausableProxy(s3.endpoint);
    const store = { ...freshStore(), endpoint: proxy.url };
    await using dir = await createTempDir('weft-ss-tier-limit-');
    const server = await startShuffleServer({ dir: dir.path, secret: TEST_SECRET, tier: { store, mode: 'on-commit', maxTransfers: 1 } });
    const client = new ShuffleServerClient(resolveShuffleServerClientOptions({ servers: [server.url], retryAttempts: 1 }));
    const token = createJobToken(Buffer.from(TEST_SECRET), JOB);
    const metric = async (sample: string): Promise<number | undefined> => {
      const line = (await (await fetch(`${server.url}/metrics`)).text()).split('\n').find((l) => l.startsWith(`${sample} `));
      return line === undefined ? undefined : Number(line.slice(sample.length + 1));
    };
    try {
      const small = await object('lim', SMALL);
      const at = (partitionId: string) => ({ url: server.url, token, jobId: JOB, partitionId, attempt: 0 });
      for (const p of ['one#0', 'two#0']) await client.push({ ...at(p), body: [small.bytes], length: small.bytes.length });
      proxy.pause();
      const settled: string[] = [];
      const commits = ['one#0', 'two#0'].map((p) =>
        client.commit(at(p), testDescriptor({ jobId: JOB, partitionId: p, attempt: 0, subpartitions: 1, token }), small.subpartitionBytes).finally(() => settled.push(p)),
      );
      await eventually(async () => (await metric('weft_shuffle_server_tier_transfers{state="waiting"}')) === 1, 'the second copy to wait for a transfer slot');
      assert.equal(await metric('weft_shuffle_server_tier_transfers{state="active"}'), 1, 'one transfer at a time');
      assert.deepEqual(settled, [], 'neither commit is acknowledged before its S3 copy');
      proxy.resume();
      const records = await Promise.all(commits);
      assert.deepEqual(await tierKeys(store), records.map((r) => r.objectKey).sort());
      assert.equal(await metric('weft_shuffle_server_tier_transfers{state="active"}'), 0);
    } finally {
      proxy.resume();
      await client.close();
      await server.close();
    }
  });
});

describe('shuffle server S3 tier: when the data reaches S3', () => {
  /** A server whose tier reaches s3rver through a recording proxy, a client, and a push whose body holds after `cut` bytes. */
  async function heldPush(mode: TierMode, dirPath: string, proxyUrl: string) {
    const store = { ...freshStore(), endpoint: proxyUrl };
    const server = await startShuffleServer({ dir: dirPath, secret: TEST_SECRET, tier: { store, mode } });
    const client = new ShuffleServerClient(resolveShuffleServerClientOptions({ servers: [server.url], retryAttempts: 1 }));
    const token = createJobToken(Buffer.from(TEST_SECRET), JOB);
    const big = await object('held', BIG_RECORDS, BIG_RECORD_BYTES);
    const cut = 6 * 1024 * 1024; // more than one part (the store's minPartBytes, 5 MiB), less than the object
    assert.ok(big.bytes.length > cut);
    let release: () => void = () => undefined;
    const held = new Promise<void>((resolve) => (release = resolve));
    async function* body(): AsyncIterable<Uint8Array> {
      yield big.bytes.subarray(0, cut);
      await held;
      yield big.bytes.subarray(cut);
    }
    const target = { url: server.url, token, jobId: JOB, partitionId: 'held#0', attempt: 0 };
    const pushing = client.push({ ...target, body: body() });
    pushing.catch(() => undefined);
    const descriptor = testDescriptor({ jobId: JOB, partitionId: 'held#0', attempt: 0, subpartitions: 1, token });
    return { store, server, client, big, cut, release, pushing, target, descriptor };
  }

  it('write-through: a whole part of a push is uploaded to S3 while the push is still open, and the object is completed there only at commit', async () => {
    await using proxy = await startRecordingProxy(s3.endpoint);
    await using dir = await createTempDir('weft-ss-wt-early-');
    const run = await heldPush('write-through', dir.path, proxy.url);
    const calls = (from = 0) => proxy.requests.slice(from).map(s3Call);
    try {
      // the body is held after 6 MiB: a 5 MiB part can only have come from the push in progress
      await eventually(() => proxy.requests.some((r) => s3Call(r) === 'UploadPart' && r.status === 200), 'an UploadPart that S3 accepted while the push is held');
      assert.ok(!calls().includes('CompleteMultipartUpload') && !calls().includes('PutObject'), `nothing completed before the commit: ${calls().join(', ')}`);
      assert.deepEqual(await tierKeys(run.store), [], 'no S3 object while the push is open');
      run.release();
      await run.pushing;
      const beforeCommit = proxy.requests.length;
      assert.ok(!calls().includes('CompleteMultipartUpload'), 'the upload is not completed by the push');
      const record = await run.client.commit(run.target, run.descriptor, run.big.subpartitionBytes);
      assert.deepEqual(calls(beforeCommit).filter((c) => c !== 'other'), ['UploadPart', 'CompleteMultipartUpload'], 'the commit sends the tail part and completes the upload');
      assert.deepEqual(await tierKeys(run.store), [record.objectKey]);
    } finally {
      run.release();
      await run.client.close();
      await run.server.close();
    }
  });

  it('on-commit: nothing reaches S3 before the commit, even when the push holds more than a part; the commit copies the whole object', async () => {
    await using proxy = await startRecordingProxy(s3.endpoint);
    await using dir = await createTempDir('weft-ss-oc-late-');
    const run = await heldPush('on-commit', dir.path, proxy.url);
    const tierCalls = () => proxy.requests.map(s3Call).filter((c) => c !== 'other');
    const transfers = async (): Promise<string[]> =>
      (await (await fetch(`${run.server.url}/metrics`)).text()).split('\n').filter((l) => l.startsWith('weft_shuffle_server_tier_transfers{') && !l.endsWith(' 0'));
    try {
      await eventually(async () => {
        const [file] = await filesUnder(join(dir.path, 'objects'));
        return file !== undefined && (await stat(file)).size >= run.cut;
      }, 'the first 6 MiB of the push to reach the disk');
      run.release();
      await run.pushing;
      // a transfer started for the push would be running (a slot taken) or done (a request recorded)
      assert.deepEqual(await transfers(), [], 'no tier transfer running or waiting before the commit');
      assert.deepEqual(tierCalls(), [], 'no S3 call before the commit');
      const record = await run.client.commit(run.target, run.descriptor, run.big.subpartitionBytes);
      assert.deepEqual(tierCalls(), ['PutObject'], 'the commit copies the object in one PutObject');
      assert.deepEqual(await tierKeys(run.store), [record.objectKey]);
    } finally {
      run.release();
      await run.client.close();
      await run.server.close();
    }
  });
});
