// @aws-sdk/client-s3 and ioredis are loaded on first use, not when the package is imported: a process on
// the embedded default (a directory and SQLite) never pays for them. Each case runs in a fresh Node
// process and reads the CommonJS module cache, where both land however they are loaded.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';

const packageDir = fileURLToPath(new URL('..', import.meta.url));

/** Runs `body` (an ES module body with `loaded(name)` in scope) in a fresh process; its stdout, parsed. */
function inFreshProcess(body: string): Promise<Record<string, boolean>> {
  const script = `
    import { createRequire } from 'node:module';
    const cache = createRequire(import.meta.url).cache;
    const loaded = (name) => Object.keys(cache).some((path) => path.includes('/node_modules/' + name + '/'));
    ${body}`;
  return new Promise((resolve, reject) => {
    execFile(process.execPath, ['--conditions=source', '--import', 'tsx', '--input-type=module', '-e', script], { cwd: packageDir }, (error, stdout, stderr) => {
      if (error !== null) reject(new Error(`${error.message}\n${stderr}`));
      else resolve(JSON.parse(stdout) as Record<string, boolean>);
    });
  });
}

describe('lazily loaded dependencies', () => {
  it('imports the package (stores, metadata, server, client) without loading @aws-sdk/client-s3 or ioredis', async () => {
    const seen = await inFreshProcess(`
      await import('@weft/shuffle-remote');
      await import('@weft/shuffle-remote/server');
      await import('@weft/shuffle-remote/client');
      await import('@weft/shuffle-remote/redis');
      process.stdout.write(JSON.stringify({ s3: loaded('@aws-sdk/client-s3'), redis: loaded('ioredis') }));`);
    assert.deepEqual(seen, { s3: false, redis: false });
  });

  it('loads @aws-sdk/client-s3 when an S3 store is made, and ioredis when a Redis client is', async () => {
    const seen = await inFreshProcess(`
      const { createBlobStore } = await import('@weft/shuffle-remote');
      const { createRedisClient, parseRedisUrl } = await import('@weft/shuffle-remote/redis');
      createBlobStore({ type: 's3', bucket: 'weft-bucket', prefix: 'p/', endpoint: 'http://127.0.0.1:1', region: 'us-east-1' }, {});
      const s3 = loaded('@aws-sdk/client-s3');
      const before = loaded('ioredis');
      const logger = { debug() {}, info() {}, warn() {}, error() {}, child() { return logger; } };
      createRedisClient(parseRedisUrl('redis://127.0.0.1:1'), { connectTimeoutMs: 10, commandTimeoutMs: 10, logger, reconnect: () => false }).disconnect();
      process.stdout.write(JSON.stringify({ s3, before, redis: loaded('ioredis') }));`);
    assert.deepEqual(seen, { s3: true, before: false, redis: true });
  });
});
