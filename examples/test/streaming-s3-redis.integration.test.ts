// The streaming word count checkpointing to S3 + Redis (a real s3rver and redis-server from
// @weft/testkit): snapshots go to the --store bucket, completed checkpoints to the --meta Redis; a run at
// parallelism 3 fails at a seeded throw (no restart), and a new `weft run` process restores its latest
// checkpoint from there at parallelism 2, writing exactly the counts a naive count gives.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { type RedisServer, type S3Server, startRedis, startS3Server } from '@weft/testkit';
import { streamWord } from '../lib/stream-words.js';
import { type RecordingProxy, startRecordingProxy } from './support/recording-proxy.js';

const root = fileURLToPath(new URL('../..', import.meta.url));
const bin = join(root, 'packages', 'cli', 'bin', 'weft.js');
const job = join(root, 'examples', 'streaming-word-count.ts');
const RECORDS = 24_000;

function weft(args: string[], cwd: string, env: Record<string, string>): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(process.execPath, [bin, ...args], { cwd, env: { ...process.env, ...env } }, (error, stdout, stderr) => {
      resolve({ code: error === null ? 0 : typeof error.code === 'number' ? error.code : null, stdout, stderr });
    });
  });
}

describe('streaming word count checkpointed to S3 + Redis', () => {
  let s3: S3Server;
  let redis: RedisServer;
  let s3Proxy: RecordingProxy;
  let dir = '';
  let aws: Record<string, string> = {};
  before(async () => {
    [s3, redis] = await Promise.all([startS3Server({ buckets: ['weft-streaming'] }), startRedis()]);
    s3Proxy = await startRecordingProxy({ host: '127.0.0.1', port: s3.port });
    dir = await mkdtemp(join(tmpdir(), 'weft-streaming-s3-'));
    aws = { AWS_ENDPOINT_URL_S3: `http://127.0.0.1:${s3Proxy.port}`, AWS_REGION: s3.region, AWS_ACCESS_KEY_ID: s3.accessKeyId, AWS_SECRET_ACCESS_KEY: s3.secretAccessKey };
  });
  after(async () => {
    await Promise.allSettled([s3Proxy?.close()]);
    await Promise.allSettled([s3?.[Symbol.asyncDispose](), redis?.[Symbol.asyncDispose]()]);
    await rm(dir, { recursive: true, force: true });
  });

  it('restores at parallelism 2, in a new process, the checkpoint a failed run at 3 left in S3 and Redis', async () => {
    const stores = ['--store', 's3://weft-streaming/ckpt', '--meta', `redis://${redis.host}:${redis.port}/3`];
    const output = join(dir, 'counts.tsv');
    // slow enough that S3 writes (tens of ms each) complete a checkpoint before the throw
    const args = ['--', '--records', String(RECORDS), '--rate', '12000', '--output', output];
    const failed = await weft(['run', job, ...stores, '--job-id', 's3wc', '--parallelism', '3', '--checkpoint-interval', '25ms', '--inject-faults', 'throw:words#1@5000', '--restart-strategy', 'none', '--json', ...args], dir, aws);
    assert.equal(failed.code, 1, failed.stderr);
    const before = JSON.parse(failed.stdout) as { checkpoints: { completed: number } };
    assert.ok(before.checkpoints.completed >= 1, `the failed run completed a checkpoint first: ${JSON.stringify(before.checkpoints)}`);
    assert.match(s3Proxy.sent(), /PUT \/weft-streaming\/ckpt\/checkpoints\/s3wc\/chk-\d+\/count%25230\/count\.keyed\S* HTTP\/1\.1\r\n/, 'keyed snapshots were uploaded under the --store prefix');
    const restored = await weft(['run', job, ...stores, '--job-id', 's3wc', '--parallelism', '2', '--checkpoint-interval', '25ms', '--from-checkpoint', 'latest', '--json', ...args], dir, aws);
    assert.equal(restored.code, 0, restored.stderr);
    const { checkpoints } = JSON.parse(restored.stdout) as { checkpoints: { restoredFrom?: number; tasksRestored: number } };
    assert.ok((checkpoints.restoredFrom ?? 0) >= 1 && checkpoints.tasksRestored === 4, JSON.stringify(checkpoints));
    const counts = new Map<string, number>();
    for (let seq = 0; seq < RECORDS; seq++) counts.set(streamWord(seq), (counts.get(streamWord(seq)) ?? 0) + 1);
    const lines = (await readFile(output, 'utf8')).split('\n').filter((l) => l !== '').sort();
    assert.deepEqual(lines, [...counts].map(([w, n]) => `${w}\t${n}`).sort());
  });
});
