import { strict as assert } from 'node:assert';
import { describe, it } from 'node:test';
import { isShuffleError } from '@weft/shuffle-api';
import { createRemoteShuffleServiceFactory, parseMetaUrl, parseStoreUrl, resolveRemoteShuffleOptions } from '@weft/shuffle-remote';
import { resolveS3StoreOptionsForTest } from './helpers/internals.js';

function configError(fn: () => unknown): { setting: unknown; message: string } {
  try {
    fn();
  } catch (error) {
    assert.ok(isShuffleError(error, 'SHF_ERR_INVALID_CONFIG'), `expected SHF_ERR_INVALID_CONFIG, got ${String(error)}`);
    return { setting: error.context['setting'], message: error.message };
  }
  throw new Error('expected SHF_ERR_INVALID_CONFIG, but nothing was thrown');
}

describe('--store and --meta URLs', () => {
  it('parses file:///abs/dir and s3://bucket/prefix store URLs', () => {
    assert.deepEqual(parseStoreUrl('file:///var/lib/weft/data'), { type: 'file', dir: '/var/lib/weft/data' });
    assert.deepEqual(parseStoreUrl('s3://my-bucket/shuffle/run-1'), { type: 's3', bucket: 'my-bucket', prefix: 'shuffle/run-1' });
    assert.deepEqual(parseStoreUrl('s3://my-bucket'), { type: 's3', bucket: 'my-bucket' });
  });

  it('parses sqlite:///abs/file.db and redis://host:port/db metadata URLs', () => {
    assert.deepEqual(parseMetaUrl('sqlite:///var/lib/weft/meta.db'), { type: 'sqlite', path: '/var/lib/weft/meta.db' });
    assert.deepEqual(parseMetaUrl('redis://10.0.0.5:6380/2'), { type: 'redis', url: 'redis://10.0.0.5:6380/2' });
  });

  it('refuses malformed store URLs naming the setting', () => {
    for (const [url, setting] of [
      ['not a url', 'store'],
      ['file://relative/dir', 'store'],
      ['ftp://host/dir', 'store'],
      ['s3:///prefix-without-bucket', 'store.bucket'],
    ] as const) {
      assert.equal(configError(() => parseStoreUrl(url)).setting, setting, url);
    }
  });

  it('refuses malformed metadata URLs naming the setting', () => {
    for (const url of ['sqlite://relative.db', 'sqlite:///dir/', 'mysql://host/db', 'redis://host:6379/notanumber', '']) {
      assert.equal(configError(() => parseMetaUrl(url)).setting, 'meta', url);
    }
  });

  it('takes S3 endpoint, region and credentials from the standard AWS variables, the S3 endpoint first', () => {
    const resolved = resolveS3StoreOptionsForTest(
      { type: 's3', bucket: 'data', prefix: 'p' },
      {
        AWS_ENDPOINT_URL: 'http://generic:9000',
        AWS_ENDPOINT_URL_S3: 'http://s3-only:9000/',
        AWS_REGION: 'eu-west-3',
        AWS_ACCESS_KEY_ID: 'AKID',
        AWS_SECRET_ACCESS_KEY: 'SECRET',
      },
    );
    assert.equal(resolved.endpoint, 'http://s3-only:9000');
    assert.equal(resolved.region, 'eu-west-3');
    assert.deepEqual(resolved.credentials, { accessKeyId: 'AKID', secretAccessKey: 'SECRET' });
    assert.equal(resolved.prefix, 'p/');
    assert.equal(resolved.forcePathStyle, true);
    assert.equal(resolveS3StoreOptionsForTest({ type: 's3', bucket: 'data' }, { AWS_ENDPOINT_URL: 'https://generic' }).endpoint, 'https://generic');
  });

  it('refuses a bad endpoint, a missing bucket and half a credential pair naming the setting', () => {
    assert.equal(configError(() => resolveS3StoreOptionsForTest({ type: 's3', bucket: 'data', endpoint: 'localhost:9000' }, {})).setting, 'store.endpoint');
    assert.equal(configError(() => resolveS3StoreOptionsForTest({ type: 's3', bucket: 'data' }, { AWS_ENDPOINT_URL_S3: 'nope' })).setting, 'AWS_ENDPOINT_URL_S3');
    assert.equal(configError(() => resolveS3StoreOptionsForTest({ type: 's3', bucket: '' }, {})).setting, 'store.bucket');
    assert.equal(configError(() => resolveS3StoreOptionsForTest({ type: 's3', bucket: 'data' }, { AWS_ACCESS_KEY_ID: 'only-id' })).setting, 'store.secretAccessKey');
  });
});

describe('remote shuffle options', () => {
  it('refuses each malformed option when the factory is created, naming it', () => {
    const cases: [Record<string, unknown>, string][] = [
      [{ producerMemoryBytes: 1024 }, 'producerMemoryBytes'],
      [{ producerMemoryBytes: '64MiB' }, 'producerMemoryBytes'],
      [{ compression: 'zstd' }, 'compression'],
      [{ bufferSizeBytes: 1 }, 'bufferSizeBytes'],
      [{ attemptLeaseMs: 0 }, 'attemptLeaseMs'],
      [{ store: 42 }, 'store'],
      [{ store: { type: 'gcs' } }, 'store.type'],
      [{ store: { type: 's3', bucket: 'bucket-1', endpoint: 'http//broken' } }, 'store.endpoint'],
      [{ store: { type: 's3', prefix: 'x' } }, 'store.bucket'],
      // streaming multipart parts needs room for two of them; the default spill upload does not
      [{ store: { type: 's3', bucket: 'bucket-ok', upload: 'multipart' }, producerMemoryBytes: 8 * 1024 * 1024 }, 'producerMemoryBytes'],
      [{ store: { type: 's3', bucket: 'bucket-ok', upload: 'stream' } }, 'store.upload'],
      [{ store: { type: 's3', bucket: 'bucket-ok', spillDir: 'tmp' } }, 'store.spillDir'],
      [{ store: { type: 's3', bucket: 'bucket-ok', maxPutBytes: 0 } }, 'store.maxPutBytes'],
      [{ meta: { type: 'redis', url: 'http://not-redis' } }, 'meta.url'],
      [{ meta: { type: 'sqlite', path: 'relative.db' } }, 'meta.path'],
    ];
    for (const [options, setting] of cases) {
      assert.equal(configError(() => createRemoteShuffleServiceFactory(options as never)).setting, setting, JSON.stringify(options));
    }
    assert.equal(createRemoteShuffleServiceFactory({ store: 's3://bucket-ok/p', producerMemoryBytes: 8 * 1024 * 1024 }).options.producerMemoryBytes, 8 * 1024 * 1024);
  });

  it('refuses option keys it does not know, naming them (a misspelt endpoint would otherwise fall back to AWS)', () => {
    const s3 = { type: 's3', bucket: 'weft-test', endpiont: 'http://127.0.0.1:9000' };
    assert.equal(configError(() => createRemoteShuffleServiceFactory({ store: s3 } as never)).setting, 'store.endpiont');
    assert.equal(configError(() => createRemoteShuffleServiceFactory({ store: { type: 'file', dir: '/tmp/x', sync: true } } as never)).setting, 'store.sync');
    assert.equal(configError(() => createRemoteShuffleServiceFactory({ meta: { type: 'redis', url: 'redis://h:1/0', keyPrefx: 'a:' } } as never)).setting, 'meta.keyPrefx');
    assert.equal(configError(() => createRemoteShuffleServiceFactory({ meta: { type: 'sqlite', path: '/tmp/m.db', timeout: 1 } } as never)).setting, 'meta.timeout');
    assert.equal(configError(() => createRemoteShuffleServiceFactory({ attemptLeaseMS: 1000 } as never)).setting, 'options.attemptLeaseMS');
    // every documented key is accepted
    const all = resolveRemoteShuffleOptions({
      store: { type: 's3', bucket: 'weft-test', prefix: 'p', endpoint: 'http://127.0.0.1:9000', region: 'r', accessKeyId: 'a', secretAccessKey: 's', forcePathStyle: true, upload: 'spill' },
      meta: { type: 'redis', url: 'redis://127.0.0.1:6379/0', keyPrefix: 'k:', connectTimeoutMs: 100, commandTimeoutMs: 100 },
      producerMemoryBytes: 64 * 1024 * 1024,
      bufferSizeBytes: 32 * 1024,
      maxRecordBytes: 1024 * 1024,
      compression: 'none',
      readBufferBytes: 1024 * 1024,
      attemptLeaseMs: 1000,
      sweepIntervalMs: 0,
      commitPollMaxMs: 100,
      metaRetryAttempts: 1,
      metaRetryInitialDelayMs: 1,
      metaRetryMaxDelayMs: 10,
    });
    assert.equal(all.attemptLeaseMs, 1000);
  });

  it('gives a reference whose JSON options rebuild an equal factory in another process', () => {
    const factory = createRemoteShuffleServiceFactory({ store: 'file:///tmp/weft-ref/data', meta: 'sqlite:///tmp/weft-ref/meta.db', compression: 'none' });
    assert.equal(factory.reference.module, '@weft/shuffle-remote');
    assert.equal(factory.reference.exportName, 'createRemoteShuffleServiceFactory');
    const copied = JSON.parse(JSON.stringify(factory.reference.options));
    assert.deepEqual(createRemoteShuffleServiceFactory(copied).options, factory.options);
    assert.deepEqual(factory.options.store, { type: 'file', dir: '/tmp/weft-ref/data' });
    assert.equal(factory.options.compression, 'none');
  });

  it('defaults to a local directory and an SQLite file under ./.weft, without LZ4', () => {
    const options = resolveRemoteShuffleOptions({}, '/srv/job');
    assert.deepEqual(options.store, { type: 'file', dir: '/srv/job/.weft/shuffle' });
    assert.deepEqual(options.meta, { type: 'sqlite', path: '/srv/job/.weft/shuffle-meta.db' });
    assert.equal(options.compression, 'none');
    assert.equal(options.producerMemoryBytes, 64 * 1024 * 1024);
  });

  it('turns LZ4 on by default for S3 only, and keeps an explicit choice for either store', () => {
    assert.equal(resolveRemoteShuffleOptions({ store: 'file:///tmp/weft-c' }).compression, 'none');
    assert.equal(resolveRemoteShuffleOptions({ store: 's3://bucket/prefix' }).compression, 'lz4');
    assert.equal(resolveRemoteShuffleOptions({ store: 'file:///tmp/weft-c', compression: 'lz4' }).compression, 'lz4');
    assert.equal(resolveRemoteShuffleOptions({ store: 's3://bucket/prefix', compression: 'none' }).compression, 'none');
  });
});
