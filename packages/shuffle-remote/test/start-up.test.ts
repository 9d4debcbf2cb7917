import { strict as assert } from 'node:assert';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { isShuffleError, taskExecutorId } from '@weft/shuffle-api';
import { type RemoteShuffleOptions, createRemoteShuffleServiceFactory } from '@weft/shuffle-remote';
import { createTempDir, freePort } from '@weft/testkit';

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

  it('fails at start() naming store.endpoint when the S3 endpoint does not answer', async () => {
    const port = await freePort();
    await using dir = await createTempDir();
    const options: RemoteShuffleOptions = {
      store: { type: 's3', bucket: 'weft-data', endpoint: `http://127.0.0.1:${port}`, accessKeyId: 'k', secretAccessKey: 's', maxAttempts: 1, connectTimeoutMs: 1000 },
      meta: `sqlite://${join(dir.path, 'meta.db')}`,
    };
    assert.deepEqual(await startUpError(options), { master: 'store.endpoint', environment: 'store.endpoint' });
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
