// fileCommitSink on s3://, its markers at the edges (an independent review's findings F1–F6, each failed on
// 748f2c4): aborts S3 refuses, open handles a restore deals to another subtask, pre-commits that fail,
// S3:// in upper case, markers holding no handle, a transaction after its marker could not be written.
// Real s3rver; a proxy answers 403 to the requests a test picks.
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { GetObjectCommand, ListObjectsV2Command, PutObjectCommand } from '@aws-sdk/client-s3';
import { fileCommitSink, inProgressPrefix, type TransactionHandle, type TwoPhaseCommitSink } from '@weft/engine';
import { S3FileSystem } from '@weft/shuffle-remote';
import { createTempDir, type S3Server, s3Call, startRecordingProxy, startS3Server } from '@weft/testkit';
import { SqliteJobEventLog } from '@weft/job-store';
import { weft } from './helpers/kill-and-resume.js';

const BUCKET = 'review';
const bin = fileURLToPath(new URL('../bin/weft.js', import.meta.url));

/** A proxy in front of s3rver (or another proxy) that answers 403 to the requests `fail` picks. */
const startFaultProxy = (upstream: string, fail: (method: string, url: URL) => boolean) => startRecordingProxy(upstream, { refuse: fail });

describe('fileCommitSink on s3://: markers at the edges', () => {
  let s3: S3Server;
  let fs: S3FileSystem;
  let env: Record<string, string>;
  before(async () => {
    s3 = await startS3Server({ buckets: [BUCKET] });
    env = { AWS_ENDPOINT_URL_S3: s3.endpoint, AWS_REGION: s3.region, AWS_ACCESS_KEY_ID: s3.accessKeyId, AWS_SECRET_ACCESS_KEY: s3.secretAccessKey };
    fs = new S3FileSystem({}, env);
  });
  after(async () => {
    await fs?.close();
    await s3?.stop();
  });

  const keys = async (prefix: string): Promise<string[]> => ((await s3.client().send(new ListObjectsV2Command({ Bucket: BUCKET, Prefix: prefix }))).Contents ?? []).map((o) => o.Key as string).sort();
  const body = async (key: string): Promise<string> => (await (await s3.client().send(new GetObjectCommand({ Bucket: BUCKET, Key: key }))).Body?.transformToString()) ?? '';
  const sinkOf = (dir: string, subtask: number, attempt: number, parallelism: number, fileSystem: S3FileSystem = fs, jobId = 'review', operatorName = 'sinkTo'): TwoPhaseCommitSink<string> =>
    fileCommitSink<string>({ dir })({ jobId, operatorName, subtask, parallelism, attempt, cwd: process.cwd(), fileSystems: [fileSystem] });
  const BIG = 'x'.repeat(1023);
  /** Writes past minPartBytes (8 MiB): the upload exists, its marker is written, a part is up. */
  const fillPart = async (sink: TwoPhaseCommitSink<string>, h: TransactionHandle): Promise<void> => {
    for (let i = 0; i < 9 * 1024; i++) await sink.write(h, BIG);
  };

  // FINDING 1 — abort of a restored *open* handle from another instance does nothing on S3
  it('F1: abort(open handle recorded in the checkpoint), dealt to another subtask by a smaller parallelism, aborts its upload and removes its marker', async () => {
    await using proxy = await startRecordingProxy(s3.endpoint);
    const viaProxy = new S3FileSystem({}, { ...env, AWS_ENDPOINT_URL_S3: proxy.url });
    try {
      const dir = `s3://${BUCKET}/f1`;
      // p=2, subtask 1: the checkpoint records `open` (just begun); the attempt then fills a part and dies
      const dying = sinkOf(dir, 1, 0, 2, viaProxy);
      const open = await dying.beginTransaction();
      const recordedOpen = JSON.parse(JSON.stringify(open)) as TransactionHandle;
      await fillPart(dying, open);
      const [marker] = await keys('f1/.in-progress/');
      assert.ok(marker !== undefined, 'the marker was written');
      const { uploadId } = JSON.parse(await body(marker)) as { uploadId: string };
      // restore on p=1: subtask 0 gets subtask 1's state; the operator aborts the open handle, then abortLingering
      const restored = sinkOf(dir, 0, 1, 1, viaProxy);
      const from = proxy.requests.length;
      await restored.abort(recordedOpen);
      await restored.abortLingering?.({ keep: [] });
      await restored.close?.();
      const aborted = proxy.requests.slice(from).filter((r) => s3Call(r) === 'AbortMultipartUpload').map((r) => r.query.get('uploadId'));
      assert.deepEqual(aborted, [uploadId], 'the recorded-open transaction\'s upload is aborted (contract: abort leaves no upload)');
      assert.deepEqual(await keys('f1/.in-progress/'), [], 'and its marker removed');
    } finally {
      await viaProxy.close();
    }
  });

  // FINDING 2 — preCommit failing after the marker was written leaves marker + upload behind
  it('F2: a pre-commit whose last part fails leaves no marker and no upload once the attempt closes', async () => {
    await using recording = await startRecordingProxy(s3.endpoint);
    const faulty = await startFaultProxy(recording.url, (method, url) => method === 'PUT' && url.searchParams.has('partNumber'));
    const viaFault = new S3FileSystem({ maxAttempts: 1 }, { ...env, AWS_ENDPOINT_URL_S3: faulty.url });
    try {
      const dir = `s3://${BUCKET}/f2`;
      const sink = sinkOf(dir, 0, 0, 1, viaFault);
      const h = await sink.beginTransaction();
      await sink.write(h, 'small');
      await assert.rejects(sink.preCommit(h));
      // TwoPhaseCommitSinkOperator: a failed pre-commit leaves #open undefined, so close() aborts nothing; the sink's close runs
      await sink.close?.();
      const created = recording.requests.filter((r) => s3Call(r) === 'CreateMultipartUpload').length;
      const aborted = recording.requests.filter((r) => s3Call(r) === 'AbortMultipartUpload').length;
      assert.equal(created, 1);
      assert.deepEqual(await keys('f2/.in-progress/'), [], 'no marker left');
      assert.equal(aborted, 1, 'the upload aborted');
    } finally {
      await viaFault.close();
      await faulty.close();
    }
  });

  // FINDING 3 — an upper-case scheme: markers are listed back as s3://, the prefix never matches
  it('F3: abortLingering on an S3:// dir (upper-case scheme, accepted by the sink) aborts the lingering upload', async () => {
    const dir = `S3://${BUCKET}/f3`;
    const first = sinkOf(dir, 0, 0, 1);
    const h = await first.beginTransaction();
    await first.write(h, 'lingering');
    await first.preCommit(h);
    assert.equal((await keys('f3/.in-progress/')).length, 1, 'marker written');
    const restarted = sinkOf(dir, 0, 1, 1);
    assert.equal(await restarted.abortLingering?.({ keep: [] }), 1);
    assert.deepEqual(await keys('f3/.in-progress/'), []);
  });

  // FINDING 4 — a marker holding JSON that is no handle makes abortLingering throw (every restart fails)
  it('F4: a marker that holds no abort handle is removed alone (docs), not a rejection of abortLingering', async () => {
    const dir = `s3://${BUCKET}/f4`;
    const key = `f4/.in-progress/${inProgressPrefix('review', 'sinkTo')}part-00000-0-0123456789ab`;
    await s3.client().send(new PutObjectCommand({ Bucket: BUCKET, Key: key, Body: '{}' }));
    const restarted = sinkOf(dir, 0, 1, 1);
    assert.equal(await restarted.abortLingering?.({ keep: [] }), 1);
    assert.deepEqual(await keys('f4/.in-progress/'), []);
  });

  // FINDING 5 — an AbortMultipartUpload that fails (403/5xx/network) is swallowed and the marker removed anyway
  it('F5: a marker is kept while its upload could not be aborted (the marker is the only record of the upload)', async () => {
    const dir = `s3://${BUCKET}/f5`;
    const first = sinkOf(dir, 0, 0, 1);
    const h = await first.beginTransaction();
    await first.write(h, 'lingering');
    await first.preCommit(h);
    const [marker] = await keys('f5/.in-progress/');
    assert.ok(marker !== undefined);
    const faulty = await startFaultProxy(s3.endpoint, (method, url) => method === 'DELETE' && url.searchParams.has('uploadId'));
    const viaFault = new S3FileSystem({ maxAttempts: 1 }, { ...env, AWS_ENDPOINT_URL_S3: faulty.url });
    try {
      const restarted = sinkOf(dir, 0, 1, 1, viaFault);
      await restarted.abortLingering?.({ keep: [] }).catch(() => {});
      assert.deepEqual(await keys('f5/.in-progress/'), [marker], 'AccessDenied on the abort: the upload still exists, so its marker must stay (or abortLingering fail)');
    } finally {
      await viaFault.close();
      await faulty.close();
    }
  });

  it('F3b: weft gc on a run whose staging dir is S3:// (recorded as given) collects its marker', async () => {
    const tmp = await createTempDir('weft-gc-review-');
    try {
      const dir = `S3://${BUCKET}/f3b`;
      const sink = fileCommitSink<string>({ dir })({ jobId: 'gc-upper', operatorName: 'sinkTo', subtask: 0, parallelism: 1, attempt: 0, cwd: process.cwd(), fileSystems: [fs] });
      const h = await sink.beginTransaction();
      await sink.write(h, 'staged');
      await sink.preCommit(h);
      assert.equal((await keys('f3b/.in-progress/')).length, 1);
      const meta = join(tmp.path, 'meta.db');
      {
        await using store = new SqliteJobEventLog({ path: meta });
        const log = await store.open({ jobId: 'gc-upper', owner: 'elsewhere:1' });
        await log.append({ type: 'job-submitted', data: { name: 'x', args: [], tasksTotal: 1, twoPhaseStaging: [{ sink: 'sinkTo', staging: { kind: 'file-commit', dir } }] } });
        await log.append({ type: 'job-finished', data: {} });
        await log.close();
      }
      const gc = await weft(bin, ['gc', '--meta', `sqlite://${meta}`, '--store', pathToFileURL(join(tmp.path, 'store')).href, '--older-than', '0s', '--json'], tmp.path, { ...process.env, ...env });
      assert.equal(gc.code, 0, gc.stderr);
      console.log(gc.stdout);
      assert.deepEqual(await keys('f3b/.in-progress/'), [], 'the run\'s marker collected (its log is gone after this gc: nothing else will)');
    } finally {
      await tmp.remove();
    }
  });

  it('F6: a transactions writer whose onStarted failed refuses every later write and pre-commit; nothing becomes visible', async () => {
    const url = `s3://${BUCKET}/f6/object`;
    const writer = await fs.transactions.begin(url, { onStarted: async () => { throw new Error('marker write failed'); } });
    await assert.rejects(writer.write('y'.repeat(9 << 20)), /marker write failed/);
    await assert.rejects(writer.write('tail\n'), /marker write failed/, 'the bytes held when it failed are gone: no later write may pretend otherwise');
    await assert.rejects(writer.preCommit(), /marker write failed/);
    await writer.abort();
    assert.deepEqual(await keys('f6/'), []);
  });

  // gc: S3 unreachable / no credentials
  for (const [name, s3env] of [
    ['unreachable', { AWS_ENDPOINT_URL_S3: 'http://127.0.0.1:9', AWS_REGION: 'us-east-1', AWS_ACCESS_KEY_ID: 'x', AWS_SECRET_ACCESS_KEY: 'y' }],
    ['no credentials', { AWS_ENDPOINT_URL_S3: 'http://127.0.0.1:9', AWS_REGION: 'us-east-1', AWS_EC2_METADATA_DISABLED: 'true', AWS_ACCESS_KEY_ID: '', AWS_SECRET_ACCESS_KEY: '' }],
    ['no region', { AWS_ENDPOINT_URL_S3: 'http://127.0.0.1:9', AWS_REGION: '', AWS_DEFAULT_REGION: '', AWS_ACCESS_KEY_ID: 'x', AWS_SECRET_ACCESS_KEY: 'y' }],
  ] as const) {
    it(`gc, S3 ${name}: the run is skipped with one clear line, gc exits 0`, async () => {
      const tmp = await createTempDir('weft-gc-review-');
      try {
        const meta = join(tmp.path, 'meta.db');
        {
          await using store = new SqliteJobEventLog({ path: meta });
          const log = await store.open({ jobId: 'gc-down', owner: 'elsewhere:1' });
          await log.append({ type: 'job-submitted', data: { name: 'x', args: [], tasksTotal: 1, twoPhaseStaging: [{ sink: 'sinkTo', staging: { kind: 'file-commit', dir: `s3://${BUCKET}/gcdown` } }] } });
          await log.append({ type: 'job-finished', data: {} });
          await log.close();
        }
        const started = Date.now();
        const gc = await weft(bin, ['gc', '--meta', `sqlite://${meta}`, '--store', pathToFileURL(join(tmp.path, 'store')).href, '--older-than', '0s'], tmp.path, { ...process.env, ...s3env });
        const took = Date.now() - started;
        console.log(`[${name}] code=${gc.code} took=${took}ms\nstdout: ${gc.stdout}\nstderr: ${gc.stderr}`);
        assert.equal(gc.code, 0, gc.stderr);
        assert.match(gc.stderr, /weft gc: skipped gc-down: /u);
        assert.doesNotMatch(gc.stderr, /\n\s+at /u, 'no stack trace');
      } finally {
        await tmp.remove();
      }
    });
  }

  // --- what held ---
  it('held: subtask 1 vs 10 vs 100 vs 10000/100000, jobs and sinks sharing prefixes, trailing slash', async () => {
    const dir = `s3://${BUCKET}/h1`;
    const staged: string[] = [];
    for (const [subtask, jobId, op, d] of [[1, 'j', 'out', dir], [10, 'j', 'out', `${dir}/`], [100, 'j', 'out', `${dir}//`], [10000, 'j', 'out', dir], [100000, 'j', 'out', dir], [1, 'j1', 'out', dir], [1, 'j', 'out1', dir], [1, 'j', 'out/1', dir]] as const) {
      const sink = sinkOf(d, subtask, 0, 200000, fs, jobId, op);
      const h = await sink.beginTransaction();
      await sink.write(h, `${jobId}/${op}/${subtask}`);
      staged.push((await sink.preCommit(h) as { marker: string }).marker);
    }
    assert.equal((await keys('h1/.in-progress/')).length, 8);
    assert.equal(await sinkOf(dir, 1, 1, 200000, fs, 'j', 'out').abortLingering?.({ keep: [] }), 1);
    assert.equal(await sinkOf(dir, 10000, 1, 200000, fs, 'j', 'out').abortLingering?.({ keep: [] }), 1);
    assert.equal((await keys('h1/.in-progress/')).length, 6, 'only j/out subtask 1 and 10000');
    assert.deepEqual(await fs.list(dir), [], 'a reader of the dir sees no marker');
    // keep, JSON round-tripped as restored, for handles another subtask staged (rescale): untouched
    const keepMe = sinkOf(dir, 3, 0, 4, fs, 'j', 'out');
    const k = await keepMe.beginTransaction();
    await keepMe.write(k, 'k');
    const kept = JSON.parse(JSON.stringify(await keepMe.preCommit(k))) as TransactionHandle;
    assert.equal(await sinkOf(dir, 3, 1, 4, fs, 'j', 'out').abortLingering?.({ keep: [kept] }), 0);
    await sinkOf(dir, 0, 1, 2, fs, 'j', 'out').commit(kept);
    assert.equal((await keys('h1/.in-progress/')).length, 6);
  });

  it('held: the marker-write failure aborts the upload it was for and fails the pre-commit; nothing left', async () => {
    await using recording = await startRecordingProxy(s3.endpoint);
    const faulty = await startFaultProxy(recording.url, (method, url) => method === 'PUT' && url.pathname.includes('.in-progress'));
    const viaFault = new S3FileSystem({ maxAttempts: 1 }, { ...env, AWS_ENDPOINT_URL_S3: faulty.url });
    try {
      const sink = sinkOf(`s3://${BUCKET}/h2`, 0, 0, 1, viaFault);
      const small = await sink.beginTransaction();
      await sink.write(small, 'a');
      await assert.rejects(sink.preCommit(small));
      const big = await sink.beginTransaction();
      await assert.rejects(fillPart(sink, big));
      await assert.rejects(sink.preCommit(big));
      await sink.abort(big);
      await sink.close?.();
      const created = recording.requests.filter((r) => s3Call(r) === 'CreateMultipartUpload').map((r) => r.status);
      assert.equal(created.length, 2);
      assert.equal(recording.requests.filter((r) => s3Call(r) === 'UploadPart').length, 0, 'no part went up without a marker');
      assert.equal(recording.requests.filter((r) => s3Call(r) === 'AbortMultipartUpload').length, 2);
      assert.deepEqual(await keys('h2/'), []);
    } finally {
      await viaFault.close();
      await faulty.close();
    }
  });

  it('held: close after a part failed mid-transaction aborts the upload and removes its marker', async () => {
    await using recording = await startRecordingProxy(s3.endpoint);
    const faulty = await startFaultProxy(recording.url, (method, url) => method === 'PUT' && url.searchParams.get('partNumber') === '2');
    const viaFault = new S3FileSystem({ maxAttempts: 1 }, { ...env, AWS_ENDPOINT_URL_S3: faulty.url });
    try {
      const sink = sinkOf(`s3://${BUCKET}/h4`, 0, 0, 1, viaFault);
      const h = await sink.beginTransaction();
      await assert.rejects(async () => { for (let i = 0; i < 3; i++) await fillPart(sink, h); });
      await sink.close?.();
      assert.equal(recording.requests.filter((r) => s3Call(r) === 'AbortMultipartUpload').length, 1);
      assert.deepEqual(await keys('h4/'), []);
    } finally {
      await viaFault.close();
      await faulty.close();
    }
  });

  it('held: several parts, re-commit, wrote-nothing, close after a failed part, abort of own open tx', async () => {
    const dir = `s3://${BUCKET}/h3`;
    const sink = sinkOf(dir, 0, 0, 1);
    const big = await sink.beginTransaction();
    for (let i = 0; i < 3; i++) await fillPart(sink, big);
    await sink.write(big, 'tail');
    const h = await sink.preCommit(big);
    const empty = await sink.preCommit(await sink.beginTransaction());
    assert.equal((await keys('h3/.in-progress/')).length, 1);
    const master = sinkOf(dir, 0, -1, 1);
    await master.commit(JSON.parse(JSON.stringify(h)) as TransactionHandle);
    await master.commit(h);
    await master.commit(empty);
    const open = await sink.beginTransaction();
    await fillPart(sink, open);
    await sink.abort(open);
    const dangling = await sink.beginTransaction();
    await fillPart(sink, dangling);
    await sink.close?.();
    const left = await keys('h3/');
    assert.equal(left.length, 1, left.join(','));
    assert.equal((await body(left[0] as string)).split('\n').length, 3 * 9 * 1024 + 2);
  });
});
