// The same word-count job on S3 + Redis (a real s3rver and redis-server from @weft/testkit), chosen by
// two flags or by the WEFT_STORE / WEFT_META environment variables instead of the embedded default.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { type RedisServer, type S3Server, startRedis, startS3Server } from '@weft/testkit';
import { writeCorpus } from '../lib/corpus.js';
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

describe('word count on S3 + Redis', () => {
  let s3: S3Server;
  let redis: RedisServer;
  let dir = '';
  let aws: Record<string, string> = {};
  before(async () => {
    [s3, redis] = await Promise.all([startS3Server({ buckets: ['weft-examples'] }), startRedis()]);
    dir = await mkdtemp(join(tmpdir(), 'weft-s3-redis-'));
    aws = { AWS_ENDPOINT_URL_S3: s3.endpoint, AWS_REGION: s3.region, AWS_ACCESS_KEY_ID: s3.accessKeyId, AWS_SECRET_ACCESS_KEY: s3.secretAccessKey };
    writeCorpus(join(dir, 'corpus.txt'), 512 * 1024);
  });
  after(async () => {
    await Promise.allSettled([s3?.[Symbol.asyncDispose](), redis?.[Symbol.asyncDispose]()]);
    await rm(dir, { recursive: true, force: true });
  });

  it('runs with --store s3://… --meta redis://… and counts exactly', async () => {
    const run = await weft(['run', join(root, 'examples', 'word-count.ts'), '--parallelism', '2', '--workers', '2', '--store', 's3://weft-examples/flags', '--meta', redis.url, '--json', '--', '--input', 'corpus.txt', '--output', 'flags.tsv'], dir, aws);
    assert.equal(run.code, 0, run.stderr);
    assert.equal(JSON.parse(run.stdout).status, 'succeeded');
    const counts = new Map((await readFile(join(dir, 'flags.tsv'), 'utf8')).trim().split('\n').map((l) => [l.slice(0, l.lastIndexOf('\t')), Number(l.slice(l.lastIndexOf('\t') + 1))] as const));
    assert.deepEqual(counts, countWordsByScanning(await readFile(join(dir, 'corpus.txt'), 'utf8')));
  });

  it('runs with WEFT_STORE and WEFT_META instead of flags', async () => {
    const run = await weft(['run', join(root, 'examples', 'word-count.ts'), '--parallelism', '2', '--executor', 'inprocess', '--', '--input', 'corpus.txt', '--output', 'env.tsv'], dir, {
      ...aws,
      WEFT_STORE: 's3://weft-examples/env',
      WEFT_META: redis.url.replace(/\/\d+$/, '/1'),
    });
    assert.equal(run.code, 0, run.stderr);
    assert.deepEqual(await readFile(join(dir, 'env.tsv'), 'utf8').then((t) => t.trim().split('\n').sort()), await readFile(join(dir, 'flags.tsv'), 'utf8').then((t) => t.trim().split('\n').sort()));
  });
});
