// `weft run --job-id` on S3 (s3rver) + Redis: the job event log in the --meta Redis, partitions in S3; a
// SIGKILLed terasort resumed by the same command gives a clean run's bytes and reuses what the log finished.
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { createJobEventLog } from '@weft/job-store';
import { createTempDir, type RedisServer, type S3Server, startRedis, startS3Server, type TempDir } from '@weft/testkit';
import { finishedInLog, killOnceFinished, weft } from './helpers/kill-and-resume.js';

const bin = fileURLToPath(new URL('../bin/weft.js', import.meta.url));
const terasort = fileURLToPath(new URL('../../../examples/terasort.ts', import.meta.url));

describe('weft run --job-id on S3 + Redis', () => {
  let s3: S3Server;
  let redis: RedisServer;
  let dir: TempDir;
  let env: NodeJS.ProcessEnv = {};
  before(async () => {
    [s3, redis, dir] = await Promise.all([startS3Server({ buckets: ['weft-resume'] }), startRedis({ persistent: false }), createTempDir('weft-resume-s3-')]);
    env = { ...process.env, AWS_ENDPOINT_URL_S3: s3.endpoint, AWS_REGION: s3.region, AWS_ACCESS_KEY_ID: s3.accessKeyId, AWS_SECRET_ACCESS_KEY: s3.secretAccessKey };
  });
  after(async () => {
    await Promise.allSettled([s3?.[Symbol.asyncDispose](), redis?.close(), dir?.remove()]);
  });

  it('resumes a SIGKILLed terasort: byte-for-byte the clean output, every task the log says finished reused', async () => {
    const meta = `redis://${redis.host}:${redis.port}/0`;
    const common = ['--meta', meta, '--store', 's3://weft-resume/shuffle', '--parallelism', '2', '--workers', '2', '--json'];
    const records = ['--records', '200000'];
    const clean = await weft(bin, ['run', terasort, ...common, '--', ...records, '--output', join(dir.path, 'clean.txt')], dir.path, env);
    assert.equal(clean.code, 0, clean.stderr);
    const args = ['run', terasort, '--job-id', 'ts-s3', ...common, '--', ...records, '--output', join(dir.path, 'resumed.txt')];
    await using log = await createJobEventLog(meta);
    await killOnceFinished({ bin, args, cwd: dir.path, env, log, jobId: 'ts-s3', atLeast: 2 });
    const logged = await finishedInLog(log, 'ts-s3');
    const resumed = await weft(bin, args, dir.path, env);
    assert.equal(resumed.code, 0, resumed.stderr);
    const summary = JSON.parse(resumed.stdout) as { resumed: boolean; tasksReused: number; attempts: number; tasks: number };
    assert.deepEqual([summary.resumed, summary.tasksReused], [true, logged.size], resumed.stderr);
    assert.ok(summary.tasksReused > 0);
    assert.equal(summary.attempts, summary.tasks - summary.tasksReused);
    assert.ok((await readFile(join(dir.path, 'resumed.txt'))).equals(await readFile(join(dir.path, 'clean.txt'))), 'the resumed output equals a clean run’s, byte for byte');
  });
});
