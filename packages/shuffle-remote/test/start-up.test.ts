import { strict as assert } from 'node:assert';
import { writeFile } from 'node:fs/promises';
import { type Server, createServer } from 'node:http';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { isShuffleError, taskExecutorId } from '@weft/shuffle-api';
import { type RemoteShuffleOptions, S3BlobStore, createRemoteShuffleServiceFactory } from '@weft/shuffle-remote';
import { createTempDir, freePort } from '@weft/testkit';
import { resolveS3StoreOptionsForTest } from './helpers/internals.js';

/**
 * An HTTP endpoint that answers every request as S3 does for a bucket in another region: 301 with
 * `x-amz-bucket-region` (s3rver has one region, so it cannot).
 */
async function redirectingEndpoint(bucketRegion: string): Promise<Server & AsyncDisposable> {
  const server = createServer((request, response) => {
    request.resume();
    response.writeHead(301, { 'x-amz-bucket-region': bucketRegion, 'content-length': '0' }).end();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return Object.assign(server, {
    [Symbol.asyncDispose]: () => new Promise<void>((resolve) => server.close(() => resolve())),
  });
}

function endpointOf(server: Server): string {
  const address = server.address();
  if (address === null || typeof address === 'string') throw new Error('no address');
  return `http://127.0.0.1:${address.port}`;
}

/** Starts a master (and an environment) with `options`; returns the setting their start-up error names. */
async function startUpError(options: RemoteShuffleOptions): Promise<{ master: unknown; environment: unknown }> {
  const factory = createRemoteShuffleServiceFactory(options);
  const master = factory.createShuffleMaster();
  const environment = factory.createShuffleEnvironment({ taskExecutorId: taskExecutorId('t') });
  const settingOf = async (start: () => Promise<void>): Promise<unknown> => {
    try {
      await start();
    } catch (error) {
      assert.ok(isShuffleError(error, 'SHF_ERR_INVALID_CONFIG'), `expected SHF_ERR_INVALID_CONFIG, got ${String(error)}`);
      return error.context['setting'];
    }
    throw new Error('start() should have failed');
  };
  try {
    return { master: await settingOf(() => master.start()), environment: await settingOf(() => environment.start()) };
  } finally {
    await environment.close();
    await master.close();
  }
}

describe('start-up checks', () => {
  it('fails at start() naming meta when Redis cannot be reached', async () => {
    const port = await freePort();
    await using dir = await createTempDir();
    assert.deepEqual(await startUpError({ store: `file://${dir.path}`, meta: `redis://127.0.0.1:${port}/0` }), { master: 'meta', environment: 'meta' });
  });

  it('fails at start() naming store.endpoint (or the variable it came from) when the S3 endpoint does not answer', async () => {
    const port = await freePort();
    await using dir = await createTempDir();
    const options: RemoteShuffleOptions = {
      store: { type: 's3', bucket: 'weft-data', endpoint: `http://127.0.0.1:${port}`, accessKeyId: 'k', secretAccessKey: 's', maxAttempts: 1, connectTimeoutMs: 1000 },
      meta: `sqlite://${join(dir.path, 'meta.db')}`,
    };
    assert.deepEqual(await startUpError(options), { master: 'store.endpoint', environment: 'store.endpoint' });
    // an endpoint from the environment: the error names the variable
    const s3 = new S3BlobStore(
      resolveS3StoreOptionsForTest({ type: 's3', bucket: 'weft-data', maxAttempts: 1, connectTimeoutMs: 1000 }, { AWS_ENDPOINT_URL_S3: `http://127.0.0.1:${port}` }),
    );
    try {
      const error = await s3.start().then(
        () => undefined,
        (e: unknown) => e,
      );
      assert.ok(isShuffleError(error, 'SHF_ERR_INVALID_CONFIG'), String(error));
      assert.equal(error.context['setting'], 'AWS_ENDPOINT_URL_S3');
    } finally {
      await s3.close();
    }
  });

  it("fails at start() naming the region setting, not the endpoint, when the bucket is in another region (301), and says which", async () => {
    await using endpoint = await redirectingEndpoint('eu-west-3');
    await using dir = await createTempDir();
    const store = { type: 's3', bucket: 'weft-data', endpoint: endpointOf(endpoint), region: 'us-east-2', accessKeyId: 'k', secretAccessKey: 's', maxAttempts: 1 } as const;
    assert.deepEqual(await startUpError({ store, meta: `sqlite://${join(dir.path, 'meta.db')}` }), { master: 'store.region', environment: 'store.region' });
    // the region from the environment: the error names the variable
    const { region: _, ...fromEnv } = store;
    const s3 = new S3BlobStore(resolveS3StoreOptionsForTest(fromEnv, { AWS_REGION: 'us-east-2' }));
    try {
      const error = await s3.start().then(
        () => undefined,
        (e: unknown) => e,
      );
      assert.ok(isShuffleError(error, 'SHF_ERR_INVALID_CONFIG'), String(error));
      assert.equal(error.context['setting'], 'AWS_REGION');
      assert.match(error.message, /bucket weft-data is not in region us-east-2, it is in eu-west-3; set AWS_REGION/);
    } finally {
      await s3.close();
    }
  });

  it('fails at start() naming meta when the SQLite file cannot be created, and store.dir for an unusable directory', async () => {
    await using dir = await createTempDir();
    const file = join(dir.path, 'a-file');
    await writeFile(file, 'not a directory');
    assert.deepEqual(await startUpError({ store: `file://${join(dir.path, 'data')}`, meta: `sqlite://${join(file, 'meta.db')}` }), {
      master: 'meta',
      environment: 'meta',
    });
    assert.deepEqual(await startUpError({ store: `file://${file}`, meta: `sqlite://${join(dir.path, 'meta.db')}` }), {
      master: 'store.dir',
      environment: 'store.dir',
    });
  });

  it('refuses to work before start() and after close()', async () => {
    await using dir = await createTempDir();
    const factory = createRemoteShuffleServiceFactory({ store: `file://${join(dir.path, 'd')}`, meta: `sqlite://${join(dir.path, 'm.db')}` });
    const master = factory.createShuffleMaster();
    const early = await master.listPartitions('job' as never).catch((e: unknown) => e);
    assert.ok(isShuffleError(early, 'SHF_ERR_INVALID_ARGUMENT'));
    await master.start();
    await master.close();
    await master.close();
    const late = await master.listPartitions('job' as never).catch((e: unknown) => e);
    assert.ok(isShuffleError(late, 'SHF_ERR_CLOSED'));
  });
});
