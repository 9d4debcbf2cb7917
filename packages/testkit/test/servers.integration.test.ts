import { strict as assert } from 'node:assert';
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { connect } from 'node:net';
import { fileURLToPath } from 'node:url';
import { describe, it } from 'node:test';
import { GetObjectCommand, PutObjectCommand } from '@aws-sdk/client-s3';
import { startRedis, startS3Server } from '@weft/testkit';

/** Sends one inline Redis command and returns the raw reply. */
function redisCommand(port: number, command: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1');
    let reply = '';
    socket.once('error', reject);
    socket.on('data', (d) => {
      reply += d.toString();
      if (reply.endsWith('\r\n')) {
        socket.end();
        resolve(reply);
      }
    });
    socket.write(`${command}\r\n`);
  });
}

function refused(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1');
    socket.once('connect', () => {
      socket.destroy();
      resolve(false);
    });
    socket.once('error', () => resolve(true));
  });
}

describe('startRedis', () => {
  it('starts a real redis-server that keeps its data across stop/start and across a SIGKILL', async () => {
    let port: number;
    let dir: string;
    {
      await using redis = await startRedis();
      ({ port, dir } = redis);
      assert.equal(redis.url, `redis://127.0.0.1:${port}/0`);
      assert.equal(await redisCommand(port, 'PING'), '+PONG\r\n');
      assert.equal(await redisCommand(port, 'SET weft kept'), '+OK\r\n');
      await redis.restart();
      assert.equal(await redisCommand(port, 'GET weft'), '$4\r\nkept\r\n');
      assert.equal(await redisCommand(port, 'SET after-restart yes'), '+OK\r\n');
      await redis.kill();
      assert.equal(redis.running, false);
      assert.ok(await refused(port), 'a killed server refuses connections');
      await redis.start();
      assert.equal(await redisCommand(port, 'GET after-restart'), '$3\r\nyes\r\n', 'appendfsync always: a kill loses nothing');
    }
    assert.ok(await refused(port), 'disposing stops the server');
    assert.equal(existsSync(dir), false, 'disposing removes its directory');
  });

  it('fails with a clear message when redis-server is not installed', () => {
    const script = `import { startRedis } from '@weft/testkit'; startRedis().then(() => process.exit(0), (e) => { console.log(e.message); process.exit(3); });`;
    const result = spawnSync(process.execPath, ['--conditions=source', '--import', 'tsx', '--input-type=module', '-e', script], {
      env: { ...process.env, PATH: '/nonexistent' },
      encoding: 'utf8',
      cwd: fileURLToPath(new URL('..', import.meta.url)),
    });
    assert.equal(result.status, 3, result.stderr);
    assert.match(result.stdout, /redis-server is not installed.*apt-get install redis-server/s);
  });
});

describe('startS3Server', () => {
  it('starts a real s3rver with buckets, serves objects with its credentials, and stops on dispose', async () => {
    let port: number;
    let dir: string;
    {
      await using s3 = await startS3Server({ buckets: ['first-bucket'] });
      ({ port, dir } = s3);
      assert.equal(s3.endpoint, `http://127.0.0.1:${port}`);
      assert.deepEqual([s3.accessKeyId, s3.secretAccessKey, s3.region], ['S3RVER', 'S3RVER', 'us-east-1']);
      await s3.createBucket('second-bucket');
      for (const bucket of ['first-bucket', 'second-bucket']) {
        await s3.client().send(new PutObjectCommand({ Bucket: bucket, Key: 'a/b.txt', Body: `hello ${bucket}` }));
        const got = await s3.client().send(new GetObjectCommand({ Bucket: bucket, Key: 'a/b.txt' }));
        assert.equal(await got.Body!.transformToString(), `hello ${bucket}`);
      }
    }
    assert.ok(await refused(port), 'disposing stops the server');
    assert.equal(existsSync(dir), false, 'disposing removes its directory');
  });
});
