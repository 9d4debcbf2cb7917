// The same word-count job on S3 + Redis (a real s3rver and redis-server from @weft/testkit), chosen by
// two flags or by the WEFT_STORE / WEFT_META environment variables instead of the embedded default. Both
// servers sit behind recording proxies: the test checks the partitions went to S3 under the chosen prefix
// and their metadata to the chosen Redis database, and that no local store was created — so it fails if
// the flags or variables are ignored.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { type RedisServer, type S3Server, startRedis, startS3Server } from '@weft/testkit';
import { writeCorpus } from '../lib/corpus.js';
import { type RecordingProxy, startRecordingProxy } from './support/recording-proxy.js';
import { countWordsByScanning } from './support/word-reference.js';

const root = fileURLToPath(new URL('../..', import.meta.url));
const bin = join(root, 'packages', 'cli', 'bin', 'weft.js');

function weft(args: string[], cwd: string, env: Record<string, string>): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(process.execPath, [bin, ...args], { cwd, maxBuffer: 64 * 1024 * 1024, env: { ...process.env, ...env } }, (error, stdout, stderr) => {
      resolve({ code: error === null ? 0 : typeof error.code === 'number' ? error.code : null, stdout, stderr });
    });
  });
}

/** `weft run --json`'s summary: the job's id and how it ended. */
function summary(stdout: string): { jobId: string; status: string } {
  return JSON.parse(stdout) as { jobId: string; status: string };
}

describe('word count on S3 + Redis', () => {
  let s3: S3Server;
  let redis: RedisServer;
  // Every byte the job sends to S3 and to Redis goes through these, so the test sees where it went.
  let s3Proxy: RecordingProxy;
  let redisProxy: RecordingProxy;
  let dir = '';
  let aws: Record<string, string> = {};
  before(async () => {
    [s3, redis] = await Promise.all([startS3Server({ buckets: ['weft-examples'] }), startRedis()]);
    [s3Proxy, redisProxy] = await Promise.all([startRecordingProxy({ host: '127.0.0.1', port: s3.port }), startRecordingProxy({ host: redis.host, port: redis.port })]);
    dir = await mkdtemp(join(tmpdir(), 'weft-s3-redis-'));
    aws = { AWS_ENDPOINT_URL_S3: `http://127.0.0.1:${s3Proxy.port}`, AWS_REGION: s3.region, AWS_ACCESS_KEY_ID: s3.accessKeyId, AWS_SECRET_ACCESS_KEY: s3.secretAccessKey };
    writeCorpus(join(dir, 'corpus.txt'), 512 * 1024);
  });
  after(async () => {
    await Promise.allSettled([s3Proxy?.close(), redisProxy?.close()]);
    await Promise.allSettled([s3?.[Symbol.asyncDispose](), redis?.[Symbol.asyncDispose]()]);
    await rm(dir, { recursive: true, force: true });
  });

  /** The job wrote its partitions to S3 under `prefix` and kept their metadata in Redis database `db`, and nothing locally. */
  function assertUsedS3AndRedis(jobId: string, prefix: string, db: number): void {
    const requests = s3Proxy.sent();
    assert.match(requests, new RegExp(`^(PUT|POST) /weft-examples/${prefix}/\\S+ HTTP/1\\.1\r$`, 'm'), 'partition data was uploaded to S3 under the --store prefix');
    assert.doesNotMatch(requests, /^(PUT|POST) \/(?!weft-examples\/)/m, 'no upload outside the bucket');
    const commands = redisProxy.sent();
    assert.ok(commands.includes(`weft:job:${jobId}:partitions`), `the job's partitions were registered in Redis (job ${jobId})`);
    assert.ok(commands.includes(`weft:partition:${jobId}:`), 'and committed there');
    if (db === 0) assert.doesNotMatch(commands, /\r\nselect\r\n/i, 'database 0: no SELECT');
    else assert.match(commands, new RegExp(`\\r\\nselect\\r\\n\\$${String(db).length}\\r\\n${db}\\r\\n`, 'i'), `database ${db} selected`);
    assert.equal(existsSync(join(dir, '.weft')), false, 'the embedded default (./.weft/shuffle, ./.weft/shuffle-meta.db) was never created');
  }

  it('runs with --store s3://… --meta redis://… on workers, counts exactly, and keeps nothing local', async () => {
    s3Proxy.clear();
    redisProxy.clear();
    const meta = `redis://127.0.0.1:${redisProxy.port}/0`;
    const run = await weft(['run', join(root, 'examples', 'word-count.ts'), '--parallelism', '2', '--workers', '2', '--store', 's3://weft-examples/flags', '--meta', meta, '--json', '--', '--input', 'corpus.txt', '--output', 'flags.tsv'], dir, aws);
    assert.equal(run.code, 0, run.stderr);
    const { jobId, status } = summary(run.stdout);
    assert.equal(status, 'succeeded');
    const counts = new Map((await readFile(join(dir, 'flags.tsv'), 'utf8')).trim().split('\n').map((l) => [l.slice(0, l.lastIndexOf('\t')), Number(l.slice(l.lastIndexOf('\t') + 1))] as const));
    assert.deepEqual(counts, countWordsByScanning(await readFile(join(dir, 'corpus.txt'), 'utf8')));
    assertUsedS3AndRedis(jobId, 'flags', 0);
  });

  it('runs with WEFT_STORE and WEFT_META instead of flags', async () => {
    s3Proxy.clear();
    redisProxy.clear();
    const run = await weft(['run', join(root, 'examples', 'word-count.ts'), '--parallelism', '2', '--executor', 'inprocess', '--json', '--', '--input', 'corpus.txt', '--output', 'env.tsv'], dir, {
      ...aws,
      WEFT_STORE: 's3://weft-examples/env',
      WEFT_META: `redis://127.0.0.1:${redisProxy.port}/1`,
    });
    assert.equal(run.code, 0, run.stderr);
    const { jobId, status } = summary(run.stdout);
    assert.equal(status, 'succeeded');
    assert.deepEqual(await readFile(join(dir, 'env.tsv'), 'utf8').then((t) => t.trim().split('\n').sort()), await readFile(join(dir, 'flags.tsv'), 'utf8').then((t) => t.trim().split('\n').sort()));
    assertUsedS3AndRedis(jobId, 'env', 1);
    assert.doesNotMatch(s3Proxy.sent(), /^(PUT|POST) \/weft-examples\/flags\//m, 'nothing went to the other prefix');
  });
});
