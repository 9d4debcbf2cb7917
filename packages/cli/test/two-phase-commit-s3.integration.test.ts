// fileCommitSink on s3:// against s3rver: a multipart upload per transaction, completed at commit. A
// streaming job whose tasks throw at seeded points commits exactly the objects' lines a fault-free run
// commits; a completed upload committed again changes nothing; an aborted one is never visible; a restarted
// subtask aborts its earlier attempts' uploads that no completed checkpoint keeps (found by their markers:
// s3rver has no ListMultipartUploads, and answers AbortMultipartUpload with 405 — a recording proxy shows
// the requests made), and nothing of another subtask or job.
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { GetObjectCommand, ListObjectsV2Command } from '@aws-sdk/client-s3';
import { defineJob, type FaultInjectorFactory, fileCommitSink, InMemoryCheckpointStorage, runJob, type TransactionHandle, type TwoPhaseCommitSink, type TwoPhaseCommitSinkContext } from '@weft/engine';
import { createMemoryShuffleServiceFactory } from '@weft/shuffle-memory';
import { S3FileSystem } from '@weft/shuffle-remote';
import { createTempDir, type S3Server, s3Call, seededRandom, startRecordingProxy, startS3Server } from '@weft/testkit';
import { SqliteJobEventLog } from '@weft/job-store';
import { weft } from './helpers/kill-and-resume.js';

const BUCKET = 'two-phase';
const bin = fileURLToPath(new URL('../bin/weft.js', import.meta.url));
const lineOf = (seq: number): string => `line ${seq}`;

const throwsAt = (faults: readonly { task: string; attempt: number; atRecord: number }[]): FaultInjectorFactory => () => ({
  taskFault: ({ executionVertexId, attempt }) => {
    const fault = faults.find((f) => f.task === executionVertexId && f.attempt === attempt);
    return fault === undefined ? undefined : { kind: 'throw', atRecord: fault.atRecord };
  },
});

describe('fileCommitSink on s3://', () => {
  let s3: S3Server;
  let fs: S3FileSystem;
  before(async () => {
    s3 = await startS3Server({ buckets: [BUCKET] });
    fs = new S3FileSystem({}, { AWS_ENDPOINT_URL_S3: s3.endpoint, AWS_REGION: s3.region, AWS_ACCESS_KEY_ID: s3.accessKeyId, AWS_SECRET_ACCESS_KEY: s3.secretAccessKey });
  });
  after(async () => {
    await fs?.close();
    await s3?.stop();
  });

  const keys = async (prefix: string): Promise<string[]> => ((await s3.client().send(new ListObjectsV2Command({ Bucket: BUCKET, Prefix: prefix }))).Contents ?? []).map((o) => o.Key as string).sort();
  /** Keys a reader sees: none with a path segment starting with `.` (the sink's markers). */
  const visible = async (prefix: string): Promise<string[]> => (await keys(prefix)).filter((k) => !k.split('/').some((segment) => segment.startsWith('.')));
  const lines = async (prefix: string): Promise<string[]> => {
    const out: string[] = [];
    for (const key of await keys(prefix)) {
      const body = await (await s3.client().send(new GetObjectCommand({ Bucket: BUCKET, Key: key }))).Body?.transformToString();
      out.push(...(body ?? '').split('\n').filter((l) => l !== ''));
    }
    return out.sort();
  };

  it('commits an upload once however often it is committed; an aborted one is never visible', async () => {
    const context: TwoPhaseCommitSinkContext = { jobId: 'unit', operatorName: 'sinkTo', subtask: 0, parallelism: 1, attempt: 0, cwd: process.cwd(), fileSystems: [fs] };
    const sink = fileCommitSink<string>({ dir: `s3://${BUCKET}/unit` })(context);
    const kept = await sink.beginTransaction();
    for (const v of ['a', 'b']) await sink.write(kept, v);
    const handle = await sink.preCommit(kept);
    const dropped = await sink.beginTransaction();
    await sink.write(dropped, 'x');
    const droppedHandle = await sink.preCommit(dropped);
    assert.deepEqual(await visible('unit/'), [], 'nothing is visible before the commit');
    assert.equal((await keys('unit/.in-progress/')).length, 2, 'a marker per upload');
    await sink.commit(handle);
    await sink.commit(JSON.parse(JSON.stringify(handle)));
    await sink.abort(droppedHandle);
    await sink.close?.();
    assert.deepEqual(await lines('unit/'), ['a', 'b']);
    assert.equal((await keys('unit/')).length, 1, 'the committed object alone: both markers removed');
  });

  it('abortLingering aborts the uploads its subtask\'s earlier attempts left that the restored checkpoint does not keep, and nothing else', async () => {
    await using proxy = await startRecordingProxy(s3.endpoint);
    const viaProxy = new S3FileSystem({}, { AWS_ENDPOINT_URL_S3: proxy.url, AWS_REGION: s3.region, AWS_ACCESS_KEY_ID: s3.accessKeyId, AWS_SECRET_ACCESS_KEY: s3.secretAccessKey });
    try {
      const dir = `s3://${BUCKET}/lingering`;
      const sinkOf = (subtask: number, attempt: number, jobId = 'lingering'): TwoPhaseCommitSink<string> =>
        fileCommitSink<string>({ dir })({ jobId, operatorName: 'sinkTo', subtask, parallelism: 2, attempt, cwd: process.cwd(), fileSystems: [viaProxy] });
      const staged = async (sink: TwoPhaseCommitSink<string>, lines: readonly string[]): Promise<TransactionHandle> => {
        const handle = await sink.beginTransaction();
        for (const line of lines) await sink.write(handle, line);
        return sink.preCommit(handle);
      };
      const first = sinkOf(0, 0);
      const kept = await staged(first, ['k1', 'k2']); // pre-committed for the checkpoint the restart restores
      const lingering = await staged(first, ['l1']); // pre-committed for a checkpoint that never completed
      const open = await first.beginTransaction(); // its attempt dies with a part of it uploaded (past minPartBytes, 8 MiB)
      const line = 'x'.repeat(1023);
      for (let i = 0; i < 9 * 1024; i++) await first.write(open, line);
      const otherSubtask = sinkOf(1, 0);
      const otherSubtaskHandle = await staged(otherSubtask, ['s1']);
      const otherJob = sinkOf(0, 0, 'another-job');
      const otherJobHandle = await staged(otherJob, ['j1']);

      const markers = await keys('lingering/.in-progress/');
      assert.equal(markers.length, 5, `a marker per transaction holding an upload: ${markers.join(', ')}`);
      const uploadOf = new Map<string, string>();
      for (const key of markers) {
        const body = JSON.parse((await (await s3.client().send(new GetObjectCommand({ Bucket: BUCKET, Key: key }))).Body?.transformToString()) ?? 'null') as { url: string; uploadId: string };
        uploadOf.set(body.url, body.uploadId);
      }
      const urlOf = (h: TransactionHandle | string): string => (typeof h === 'string' ? h : (h as unknown as { url: string }).url);
      assert.equal(uploadOf.size, 5);

      const restarted = sinkOf(0, 1);
      const from = proxy.requests.length;
      assert.equal(await restarted.abortLingering?.({ keep: [kept] }), 2);
      const aborted = proxy.requests.slice(from).filter((r) => s3Call(r) === 'AbortMultipartUpload').map((r) => r.query.get('uploadId'));
      assert.deepEqual(aborted.sort(), [uploadOf.get(urlOf(lingering)), uploadOf.get(urlOf(open))].sort(), 'the lingering and the open upload, each aborted once');
      const markerOf = (h: TransactionHandle): string => (h as unknown as { marker: string }).marker.replace(`s3://${BUCKET}/`, '');
      assert.deepEqual(await keys('lingering/.in-progress/'), [markerOf(kept), markerOf(otherSubtaskHandle), markerOf(otherJobHandle)].sort(), 'the kept, the other subtask\'s and the other job\'s markers stay');
      assert.equal(await restarted.abortLingering?.({ keep: [kept] }), 0, 'idempotent');

      await restarted.commit(kept);
      await otherSubtask.abort(otherSubtaskHandle);
      await otherJob.abort(otherJobHandle);
      await Promise.all([first, restarted, otherSubtask, otherJob].map((sink) => sink.close?.()));
      assert.deepEqual(await keys('lingering/'), [urlOf(kept).replace(`s3://${BUCKET}/`, '')], 'the committed object alone: every marker removed, nothing aborted visible');
      assert.deepEqual(await lines('lingering/'), ['k1', 'k2']);
    } finally {
      await viaProxy.close();
    }
  });

  it('weft gc aborts the uploads a succeeded run left staged on s3:// (found by their markers), and nothing of another job', async () => {
    await using proxy = await startRecordingProxy(s3.endpoint);
    const env = { ...process.env, AWS_ENDPOINT_URL_S3: proxy.url, AWS_REGION: s3.region, AWS_ACCESS_KEY_ID: s3.accessKeyId, AWS_SECRET_ACCESS_KEY: s3.secretAccessKey };
    const viaProxy = new S3FileSystem({}, env);
    const tmp = await createTempDir('weft-gc-s3-');
    try {
      const dir = `s3://${BUCKET}/gc`;
      // as an attempt SIGKILLed after a pre-commit, then restarted on a smaller parallelism, leaves it
      const stage = async (jobId: string): Promise<string> => {
        const sink = fileCommitSink<string>({ dir })({ jobId, operatorName: 'sinkTo', subtask: 3, parallelism: 4, attempt: 0, cwd: process.cwd(), fileSystems: [viaProxy] });
        const handle = await sink.beginTransaction();
        await sink.write(handle, 'staged');
        return (await sink.preCommit(handle) as unknown as { marker: string }).marker;
      };
      const ours = await stage('gc-s3');
      const otherJob = await stage('gc-s3-other');
      const ourUpload = (JSON.parse((await (await s3.client().send(new GetObjectCommand({ Bucket: BUCKET, Key: ours.replace(`s3://${BUCKET}/`, '') }))).Body?.transformToString()) ?? 'null') as { uploadId: string }).uploadId;
      const meta = join(tmp.path, 'meta.db');
      {
        await using store = new SqliteJobEventLog({ path: meta });
        const log = await store.open({ jobId: 'gc-s3', owner: 'elsewhere:1' });
        await log.append({ type: 'job-submitted', data: { name: 'two-phase', args: [], tasksTotal: 1, twoPhaseStaging: [{ sink: 'sinkTo', staging: { kind: 'file-commit', dir } }] } });
        await log.append({ type: 'job-finished', data: {} });
        await log.close();
      }
      const from = proxy.requests.length;
      const gc = await weft(bin, ['gc', '--meta', `sqlite://${meta}`, '--store', pathToFileURL(join(tmp.path, 'store')).href, '--older-than', '0s', '--json'], tmp.path, env);
      assert.equal(gc.code, 0, gc.stderr);
      const removed = (JSON.parse(gc.stdout) as { removed: { jobId: string; twoPhaseStaged: string[] }[] }).removed.find((r) => r.jobId === 'gc-s3');
      assert.deepEqual(removed?.twoPhaseStaged, [ours]);
      assert.deepEqual(proxy.requests.slice(from).filter((r) => s3Call(r) === 'AbortMultipartUpload').map((r) => r.query.get('uploadId')), [ourUpload], 'the run\'s upload aborted, once');
      assert.deepEqual(await keys('gc/'), [otherJob.replace(`s3://${BUCKET}/`, '')], 'its marker removed, another job\'s kept');
    } finally {
      await viaProxy.close();
      await tmp.remove();
    }
  });

  it('a streaming job restored after throws at seeded points commits exactly the lines of a fault-free run', async () => {
    // 8,000 lines at 20,000/s: each source task reaches its fault 250-350 ms in, with a 25 ms checkpoint
    // interval, so checkpoints completed before it even on a loaded machine (the restore is what is tested)
    const count = 8000;
    const job = (prefix: string) =>
      defineJob((ctx) => {
        ctx.generate(lineOf, { count, splits: 8, ratePerSecond: 20_000 }).sinkTo(fileCommitSink<string>({ dir: `s3://${BUCKET}/${prefix}` }));
      }, { name: 's3-lines' });
    const memory = createMemoryShuffleServiceFactory({ buffersPerPartition: 8 });
    const runOn = (prefix: string, faults?: FaultInjectorFactory) =>
      runJob({ job: job(prefix), parallelism: 2, fileSystems: [fs], shuffle: { pipelined: memory, blocking: memory }, checkpointing: { intervalMs: 25, storage: new InMemoryCheckpointStorage() }, restartStrategy: { type: 'fixed-delay', attempts: 3, delayMs: 0 }, ...(faults === undefined ? {} : { faults }) });
    const clean = await runOn('clean');
    assert.equal(clean.status, 'succeeded', clean.error?.message);
    const random = seededRandom(1500);
    const faulty = await runOn('faulty', throwsAt([
      { task: 'generate#0', attempt: 0, atRecord: 2500 + Math.floor(random() * 1000) },
      { task: 'generate#1', attempt: 0, atRecord: 2500 + Math.floor(random() * 1000) },
    ]));
    assert.equal(faulty.status, 'succeeded', faulty.error?.message);
    assert.ok(faulty.failures >= 2 && (faulty.checkpoints?.tasksRestored ?? 0) > 0, `failures ${faulty.failures}, checkpoints ${JSON.stringify(faulty.checkpoints)}`);
    const expected = Array.from({ length: count }, (_, seq) => lineOf(seq)).sort();
    assert.deepEqual(await lines('clean/'), expected);
    assert.deepEqual(await lines('faulty/'), expected);
  });
});
