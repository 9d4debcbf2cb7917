import { strict as assert } from 'node:assert';
import { after, before, describe, it } from 'node:test';
import { readdir } from 'node:fs/promises';
import { GetObjectCommand, HeadObjectCommand, ListObjectsV2Command } from '@aws-sdk/client-s3';
import { type ShuffleDescriptor, isShuffleError, taskExecutorId } from '@weft/shuffle-api';
import { FOOTER_BYTES, type RemoteShuffleOptions, S3BlobStore, createRemoteShuffleServiceFactory, decodeFooter } from '@weft/shuffle-remote';
import { type RedisServer, type S3Server, createTempDir, startRedis, startS3Server } from '@weft/testkit';
import { s3StoreOn } from './helpers/s3-store-on.js';
import { type ShuffleFixture, readPartition, rejection, shuffleFixture, writePartition } from './helpers/shuffle-fixture.js';

let s3: S3Server;
let redis: RedisServer;
before(async () => {
  [s3, redis] = await Promise.all([startS3Server({ buckets: ['store-test'] }), startRedis()]);
});
after(async () => {
  await Promise.allSettled([s3?.stop(), redis?.close()]);
});

function options(prefix: string, extra: Partial<RemoteShuffleOptions> = {}): RemoteShuffleOptions {
  return {
    store: s3StoreOn(s3, 'store-test', prefix),
    meta: { type: 'redis', url: redis.url, keyPrefix: `s3-store-test:${prefix}:` },
    producerMemoryBytes: 12 * 1024 * 1024,
    ...extra,
  };
}

/** 40 MiB of incompressible-ish records through a 12 MiB budget, checking the budget holds; `during` runs after each region's worth. */
async function writeBig(fx: ShuffleFixture, descriptor: ShuffleDescriptor, during?: () => Promise<unknown>): Promise<void> {
  const writer = await fx.env.createResultPartitionWriter({ descriptor });
  let peak = 0;
  const record = new Uint8Array(4096);
  for (let i = 0; i < 10_240; i++) {
    for (let k = 0; k < record.length; k += 4) new DataView(record.buffer).setUint32(k, Math.imul(i + 1, k + 2654435761) >>> 0, true);
    if (!writer.emitRecord(record, i % 4)) await writer.ready();
    peak = Math.max(peak, writer.metrics.bufferedBytes);
    if (i % 1024 === 0) await during?.();
  }
  await writer.finish();
  await writer.close();
  assert.ok(peak <= writer.metrics.memoryLimitBytes + 4100, `held ${peak} of ${writer.metrics.memoryLimitBytes}`);
}

async function countRecords(fx: ShuffleFixture, descriptor: ShuffleDescriptor, s: number): Promise<number> {
  const gate = await fx.env.createInputGate({ jobId: descriptor.jobId, inputs: [descriptor], subpartitions: { start: s, end: s } });
  let records = 0;
  try {
    for (let batch = await gate.readBatch(); batch !== null; batch = await gate.readBatch()) if (batch.kind === 'records') records += batch.records.length;
  } finally {
    await gate.close();
  }
  return records;
}

/** The number of regions an object's footer gives. */
async function regionsOf(key: string): Promise<number> {
  const size = (await s3.client().send(new HeadObjectCommand({ Bucket: 'store-test', Key: key }))).ContentLength!;
  const response = await s3.client().send(new GetObjectCommand({ Bucket: 'store-test', Key: key, Range: `bytes=${size - FOOTER_BYTES}-${size - 1}` }));
  const footer = decodeFooter(await response.Body!.transformToByteArray());
  assert.ok(footer !== undefined, `${key} ends with a footer`);
  return footer.numberOfRegions;
}

async function keysUnder(prefix: string): Promise<string[]> {
  const page = await s3.client().send(new ListObjectsV2Command({ Bucket: 'store-test', Prefix: prefix }));
  return (page.Contents ?? []).map((o) => o.Key!).sort();
}

describe('S3 store', () => {
  it('fails at start() naming store.bucket when the bucket does not exist', async () => {
    const factory = createRemoteShuffleServiceFactory({ ...options('x/'), store: { ...(options('x/').store as object), bucket: 'no-such-bucket' } as never });
    const master = factory.createShuffleMaster();
    try {
      const error = await rejection(master.start());
      assert.ok(isShuffleError(error, 'SHF_ERR_INVALID_CONFIG'), String(error));
      assert.equal(error.context['setting'], 'store.bucket');
    } finally {
      await master.close();
    }
  });

  it('uploads a partition larger than its memory budget as one PutObject from a spill file that is never visible on disk', async () => {
    await using spillDir = await createTempDir('weft-spill-');
    const prefix = 'spill/';
    await using fx = await shuffleFixture(options(prefix, { store: { ...s3StoreOn(s3, 'store-test', prefix), spillDir: spillDir.path } }));
    const descriptor = await fx.register({ job: 'big', subpartitions: 4 });
    const spillFiles: number[] = [];
    await writeBig(fx, descriptor, async () => spillFiles.push((await readdir(spillDir.path)).length));
    assert.deepEqual([...new Set(spillFiles)], [0], 'the spill file is unlinked as soon as it is created');
    assert.deepEqual(await readdir(spillDir.path), []);
    const keys = await keysUnder(prefix);
    assert.equal(keys.length, 1);
    assert.equal(await regionsOf(keys[0]!), 1, 'merged: one region, each subpartition one contiguous range');
    assert.equal((await fx.master.listPartitions(descriptor.jobId))[0]?.subpartitionBytes.length, 4);
    assert.equal(await countRecords(fx, descriptor, 2), 2560);
  });

  it('streams a partition larger than its memory budget as multipart-upload parts with upload "multipart", and reads ranges of it back', async () => {
    const prefix = 'multipart/';
    await using fx = await shuffleFixture(options(prefix, { store: { ...s3StoreOn(s3, 'store-test', prefix), upload: 'multipart' } }));
    const descriptor = await fx.register({ job: 'big', subpartitions: 4 });
    await writeBig(fx, descriptor);
    const keys = await keysUnder(prefix);
    assert.equal(keys.length, 1);
    assert.ok((await regionsOf(keys[0]!)) > 1, 'regions went up as they were spilled');
    assert.equal(await countRecords(fx, descriptor, 2), 2560);
  });

  it('uploads a spilled partition larger than maxPutBytes as a multipart upload from the spill file', async () => {
    const prefix = 'spill-parts/';
    await using fx = await shuffleFixture(options(prefix, { store: { ...s3StoreOn(s3, 'store-test', prefix), maxPutBytes: 16 * 1024 * 1024 } }));
    const descriptor = await fx.register({ job: 'big', subpartitions: 4 });
    await writeBig(fx, descriptor);
    const keys = await keysUnder(prefix);
    assert.equal(keys.length, 1);
    assert.equal(await regionsOf(keys[0]!), 1);
    for (const s of [0, 3]) assert.equal(await countRecords(fx, descriptor, s), 2560);
  });

  it('refuses hostile ids before anything reaches the bucket', async () => {
    await using fx = await shuffleFixture(options('ids/'));
    const good = await fx.register({ job: 'ids', subpartitions: 1 });
    for (const id of ['../escape', 'a/b', 'nul\u0000', '..']) {
      const bad: ShuffleDescriptor[] = [
        { ...good, jobId: id as never },
        { ...good, partition: { ...good.partition, partitionId: id as never } },
      ];
      for (const descriptor of bad) {
        const error = await rejection(fx.env.createResultPartitionWriter({ descriptor }));
        assert.ok(isShuffleError(error, 'SHF_ERR_INVALID_ARGUMENT'), String(error));
      }
    }
    assert.deepEqual(await keysUnder('ids/'), [], 'nothing reached the bucket');
    const store = new S3BlobStore({
      bucket: 'store-test',
      prefix: 'ids/',
      endpoint: s3.endpoint,
      region: s3.region,
      credentials: { accessKeyId: s3.accessKeyId, secretAccessKey: s3.secretAccessKey },
      forcePathStyle: true,
      minPartBytes: 5 * 1024 * 1024,
      connectTimeoutMs: 1000,
      requestTimeoutMs: 5000,
      maxAttempts: 1,
      upload: 'spill',
      spillDir: undefined,
      maxPutBytes: 5 * 1024 ** 3,
    });
    try {
      for (const key of ['../other-prefix/x', 'a/../../b', '/abs']) {
        assert.ok(isShuffleError(await rejection(store.createWriter(key)), 'SHF_ERR_INVALID_ARGUMENT'));
        assert.ok(isShuffleError(await rejection(store.delete(key)), 'SHF_ERR_INVALID_ARGUMENT'));
      }
    } finally {
      await store.close();
    }
    assert.deepEqual((await keysUnder('ids/')).length, 0);
  });

  it('rejects an upload whose body fails (its writer aborted mid-upload) with that failure, once, and nothing crashes', async () => {
    const store = new S3BlobStore({
      bucket: 'store-test',
      prefix: 'body-fails/',
      endpoint: s3.endpoint,
      region: s3.region,
      credentials: { accessKeyId: s3.accessKeyId, secretAccessKey: s3.secretAccessKey },
      forcePathStyle: true,
      minPartBytes: 5 * 1024 * 1024,
      connectTimeoutMs: 1000,
      requestTimeoutMs: 5000,
      maxAttempts: 3,
      upload: 'spill',
      spillDir: undefined,
      maxPutBytes: 5 * 1024 ** 3,
    });
    await store.start();
    let bodies = 0;
    const aborted = new Error('its writer was aborted');
    async function* body(): AsyncIterable<Uint8Array> {
      bodies++;
      yield new Uint8Array(64 * 1024);
      await new Promise((r) => setTimeout(r, 20));
      throw aborted;
    }
    try {
      // an 'error' nobody listens to would end this process (the executor crash this guards against)
      const error = await rejection(store.putStream('body-fails/x', 1024 * 1024, body));
      assert.equal(error, aborted, String(error));
      assert.equal(bodies, 1, 'a failed body is not retried');
      const part = await rejection(store.uploadPartStream('body-fails/y', 'no-upload', 1, 1024 * 1024, body));
      assert.equal(part, aborted, String(part));
    } finally {
      await store.close();
    }
    // (s3rver keeps the bytes a short body sent, where S3 refuses an IncompleteBody; either way the object
    // is an attempt's own, never visible to readers until its commit in the metadata store)
  });

  it('keeps a small partition in one PutObject and reads it from another environment', async () => {
    await using fx = await shuffleFixture(options('small/'));
    const descriptor = await fx.register({ job: 'small', subpartitions: 2 });
    await writePartition(fx.env, descriptor, 50);
    const other = createRemoteShuffleServiceFactory(options('small/')).createShuffleEnvironment({ taskExecutorId: taskExecutorId('other') });
    try {
      assert.equal((await readPartition(other, descriptor)).flat().length, 100);
    } finally {
      await other.close();
    }
  });
});
