// A streaming job's checkpoints on S3 (s3rver) + Redis, real `weft` processes: a succeeded run leaves no
// object under checkpoints/<job>/ and no record in Redis; a failed one keeps its latest, `weft gc` removes
// an orphaned chk-<id>/ below it and leaves it, and `--from-checkpoint latest` restores it to counts equal
// to a naive count computed here, after which nothing of the job id is left.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { createJobEventLog } from '@weft/job-store';
import { type BlobStore, createBlobStore, parseStoreUrl } from '@weft/shuffle-remote';
import { createTempDir, type RedisServer, type S3Server, startRedis, startS3Server, type TempDir } from '@weft/testkit';
import { streamWord } from '../../../examples/lib/stream-words.js';
import { weft } from './helpers/kill-and-resume.js';

const bin = fileURLToPath(new URL('../bin/weft.js', import.meta.url));
const job = fileURLToPath(new URL('../../../examples/streaming-word-count.ts', import.meta.url));
const RECORDS = 12_000;

interface Summary {
  status: string;
  checkpoints: { latestCompletedId?: number; restoredFrom?: number; discarded?: { checkpoints: number } };
  collected: { counts?: [string, number][] };
}

describe('weft run --checkpoint-interval on S3 + Redis: checkpoints at the end of the run, and weft gc', () => {
  let s3: S3Server;
  let redis: RedisServer;
  let dir: TempDir;
  let env: NodeJS.ProcessEnv = {};
  let store: BlobStore;
  let meta = '';
  const storeUrl = 's3://weft-retention/run';
  before(async () => {
    [s3, redis, dir] = await Promise.all([startS3Server({ buckets: ['weft-retention'] }), startRedis({ persistent: false }), createTempDir('weft-retention-s3-')]);
    env = { ...process.env, AWS_ENDPOINT_URL_S3: s3.endpoint, AWS_REGION: s3.region, AWS_ACCESS_KEY_ID: s3.accessKeyId, AWS_SECRET_ACCESS_KEY: s3.secretAccessKey };
    meta = `redis://${redis.host}:${redis.port}/0`;
    store = createBlobStore(parseStoreUrl(storeUrl), env);
    await store.start();
  });
  after(async () => {
    await store?.close();
    await Promise.allSettled([s3?.[Symbol.asyncDispose](), redis?.close(), dir?.remove()]);
  });

  async function run(jobId: string, extra: string[]): Promise<{ code: number | null; stderr: string; summary: Summary }> {
    const outcome = await weft(bin, ['run', job, '--job-id', jobId, '--meta', meta, '--store', storeUrl, '--parallelism', '2', '--checkpoint-interval', '100ms', '--json', ...extra, '--', '--records', String(RECORDS), '--rate', '8000'], dir.path, env);
    return { code: outcome.code, stderr: outcome.stderr, summary: JSON.parse(outcome.stdout) as Summary };
  }
  async function recorded(jobId: string): Promise<number[]> {
    await using log = await createJobEventLog(meta);
    return (await log.checkpointStore!(jobId, 0).completed()).map((c) => c.checkpointId);
  }
  const chkDirs = async (jobId: string): Promise<string[]> => [...new Set((await store.listKeys(`checkpoints/${jobId}/`)).map((k) => k.split('/')[2] as string))].sort();
  function naiveCounts(): Map<string, number> {
    const counts = new Map<string, number>();
    for (let seq = 0; seq < RECORDS; seq++) counts.set(streamWord(seq), (counts.get(streamWord(seq)) ?? 0) + 1);
    return counts;
  }

  it('a succeeded run leaves nothing; a failed one keeps its latest, which gc leaves and a restore uses', async () => {
    const ok = await run('ok', []);
    assert.equal(ok.code, 0, ok.stderr);
    assert.equal(ok.summary.checkpoints.discarded?.checkpoints, 1, JSON.stringify(ok.summary.checkpoints));
    assert.deepEqual(await store.listKeys('checkpoints/ok/'), []);
    assert.deepEqual(await recorded('ok'), []);

    const failed = await run('failing', ['--restart-strategy', 'none', '--inject-faults', 'throw:count#1@4000']);
    assert.equal(failed.code, 1, failed.stderr);
    const latest = failed.summary.checkpoints.latestCompletedId;
    assert.ok(latest !== undefined && latest >= 2, JSON.stringify(failed.summary.checkpoints));
    assert.deepEqual(await recorded('failing'), [latest]);
    assert.deepEqual(await chkDirs('failing'), [`chk-${latest}`]);
    const orphan = await store.createWriter(`checkpoints/failing/chk-${latest - 1}/count%230/count.keyed`);
    await orphan.append([new TextEncoder().encode('left by an aborted checkpoint')]);
    await orphan.complete();

    const gc = await weft(bin, ['gc', '--meta', meta, '--store', storeUrl, '--json'], dir.path, env);
    assert.equal(gc.code, 0, gc.stderr);
    assert.deepEqual((JSON.parse(gc.stdout) as { checkpoints: unknown[] }).checkpoints, [{ jobId: 'failing', status: 'failed', retention: 'retain-on-cancellation', reason: 'orphaned', checkpoints: 0, objects: 1 }]);
    assert.deepEqual(await chkDirs('failing'), [`chk-${latest}`]);

    const restored = await run('failing', ['--from-checkpoint', 'latest']);
    assert.equal(restored.code, 0, restored.stderr);
    assert.equal(restored.summary.checkpoints.restoredFrom, latest);
    assert.deepEqual(new Map(restored.summary.collected.counts ?? []), naiveCounts());
    assert.deepEqual(await store.listKeys('checkpoints/failing/'), []);
    assert.deepEqual(await recorded('failing'), []);
  });
});
