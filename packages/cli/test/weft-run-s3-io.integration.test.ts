// Job inputs and outputs on S3 (a real s3rver): `--input s3://…` and `--output s3://…` give the bytes of
// the same run on local paths; an object larger than a split is read in byte ranges, each subtask its
// own lines; a publish that fails leaves no output object; a SIGKILLed run with an S3 sink resumes.
import assert from 'node:assert/strict';
import { mkdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { GetObjectCommand, ListObjectsV2Command, PutObjectCommand } from '@aws-sdk/client-s3';
import { defineJob, type ExternalFileSystem, runJob } from '@weft/engine';
import { createJobEventLog } from '@weft/job-store';
import { createMemoryShuffleServiceFactory } from '@weft/shuffle-memory';
import { S3FileSystem } from '@weft/shuffle-remote';
import { createTempDir, type S3Server, startS3Server, type TempDir } from '@weft/testkit';
import { writeCorpus } from '../../../examples/lib/corpus.js';
import { writeTerasortInput } from '../../../examples/lib/terasort-data.js';
import { finishedInLog, killOnceFinished, weft } from './helpers/kill-and-resume.js';

const bin = fileURLToPath(new URL('../bin/weft.js', import.meta.url));
const wordCount = fileURLToPath(new URL('../../../examples/word-count.ts', import.meta.url));
const terasort = fileURLToPath(new URL('../../../examples/terasort.ts', import.meta.url));
const BUCKET = 'weft-io';

/** `fs` as an ExternalFileSystem, with some methods replaced (to record or to fail them). */
function wrap(fs: S3FileSystem, overrides: Partial<ExternalFileSystem>): ExternalFileSystem {
  return {
    scheme: fs.scheme,
    list: (url) => fs.list(url),
    read: (url, position, length) => fs.read(url, position, length),
    createWriter: (url) => fs.createWriter(url),
    exists: (url) => fs.exists(url),
    listUnder: (url) => fs.listUnder(url),
    stage: (request) => fs.stage(request),
    delete: (url) => fs.delete(url),
    deleteUnder: (url) => fs.deleteUnder(url),
    close: () => fs.close(),
    ...overrides,
  };
}

describe('weft run with s3:// inputs and outputs', () => {
  let s3: S3Server;
  let dir: TempDir;
  let env: NodeJS.ProcessEnv = {};
  let awsEnv: Record<string, string> = {};
  before(async () => {
    [s3, dir] = await Promise.all([startS3Server({ buckets: [BUCKET] }), createTempDir('weft-s3-io-')]);
    awsEnv = { AWS_ENDPOINT_URL_S3: s3.endpoint, AWS_REGION: s3.region, AWS_ACCESS_KEY_ID: s3.accessKeyId, AWS_SECRET_ACCESS_KEY: s3.secretAccessKey };
    env = { ...process.env, ...awsEnv };
  });
  after(async () => {
    await Promise.allSettled([s3?.stop(), dir?.remove()]);
  });

  const put = (key: string, body: string | Buffer) => s3.client().send(new PutObjectCommand({ Bucket: BUCKET, Key: key, Body: body }));
  const get = async (key: string): Promise<Buffer | undefined> => {
    try {
      return Buffer.from(await (await s3.client().send(new GetObjectCommand({ Bucket: BUCKET, Key: key }))).Body!.transformToByteArray());
    } catch {
      return undefined;
    }
  };
  const keys = async (prefix: string): Promise<string[]> => ((await s3.client().send(new ListObjectsV2Command({ Bucket: BUCKET, Prefix: prefix }))).Contents ?? []).map((o) => o.Key!).sort();
  const fileSystem = (): S3FileSystem => new S3FileSystem({}, awsEnv);
  const memory = createMemoryShuffleServiceFactory();

  it('word count over an S3 prefix writes to S3 the bytes the local run writes, and they count every word', async () => {
    const local = join(dir.path, 'wc-in');
    await mkdir(local);
    writeCorpus(join(local, 'a.txt'), 700 * 1024);
    writeCorpus(join(local, 'b.txt'), 300 * 1024 + 7);
    for (const name of ['a.txt', 'b.txt']) await put(`wc/in/${name}`, await readFile(join(local, name)));
    const common = ['run', wordCount, '--parallelism', '3', '--workers', '2', '--json', '--'];
    const [onDisk, onS3] = await Promise.all([
      weft(bin, [...common, '--input', 'wc-in', '--output', 'wc-local.tsv'], dir.path, env),
      weft(bin, [...common, '--input', `s3://${BUCKET}/wc/in`, '--output', `s3://${BUCKET}/wc/counts.tsv`], dir.path, env),
    ]);
    assert.equal(onDisk.code, 0, onDisk.stderr);
    assert.equal(onS3.code, 0, onS3.stderr);
    const expected = await readFile(join(dir.path, 'wc-local.tsv'));
    const published = (await get('wc/counts.tsv')) ?? Buffer.alloc(0);
    assert.ok(published.equals(expected), 'the S3 output equals the local output, byte for byte');
    // an independent reference: every word of both files, counted by scanning
    const reference = new Map<string, number>();
    for (const name of ['a.txt', 'b.txt']) for (const word of (await readFile(join(local, name), 'utf8')).split(/\s+/)) if (word !== '') reference.set(word, (reference.get(word) ?? 0) + 1);
    const counted = new Map(published.toString('utf8').trimEnd().split('\n').map((l) => [l.slice(0, l.lastIndexOf('\t')), Number(l.slice(l.lastIndexOf('\t') + 1))] as const));
    assert.deepEqual(counted, reference);
    assert.deepEqual(await keys('wc/'), ['wc/counts.tsv', 'wc/in/a.txt', 'wc/in/b.txt'], 'no attempt object is left');
  });

  it('terasort from an S3 object writes to S3 the bytes the local run writes, every record in key order', async () => {
    writeTerasortInput(join(dir.path, 'records.txt'), 30_000);
    const input = await readFile(join(dir.path, 'records.txt'));
    await put('ts/records.txt', input);
    const common = ['run', terasort, '--parallelism', '3', '--workers', '2', '--json', '--'];
    const [onDisk, onS3] = await Promise.all([
      weft(bin, [...common, '--input', 'records.txt', '--output', 'ts-local.txt'], dir.path, env),
      weft(bin, [...common, '--input', `s3://${BUCKET}/ts/records.txt`, '--output', `s3://${BUCKET}/ts/sorted.txt`], dir.path, env),
    ]);
    assert.equal(onDisk.code, 0, onDisk.stderr);
    assert.equal(onS3.code, 0, onS3.stderr);
    const published = (await get('ts/sorted.txt')) ?? Buffer.alloc(0);
    assert.ok(published.equals(await readFile(join(dir.path, 'ts-local.txt'))), 'the S3 output equals the local output, byte for byte');
    const lines = published.toString('utf8').trimEnd().split('\n');
    assert.deepEqual([...lines].sort(), input.toString('utf8').trimEnd().split('\n').sort(), 'every record once');
    for (let i = 1; i < lines.length; i++) assert.ok(lines[i - 1]!.slice(0, 10) <= lines[i]!.slice(0, 10), `key order at line ${i}`);
  });

  it('reads an object larger than a split in byte ranges: each subtask its own lines, from its own offset', async () => {
    // lines of uneven length, some longer than a read, so split points fall inside lines
    const lines = Array.from({ length: 9000 }, (_, i) => `${i}:${'x'.repeat((i * 7919) % 997)}${i % 1000 === 0 ? 'y'.repeat(1_300_000) : ''}`);
    const text = `${lines.join('\n')}\n`;
    await put('split/big.txt', text);
    const size = Buffer.byteLength(text);
    await using fs = fileSystem();
    const reads: { position: number; length: number }[] = [];
    const recording = wrap(fs, {
      read: (url, position, length) => {
        reads.push({ position, length });
        return fs.read(url, position, length);
      },
    });
    const result = await runJob({
      job: defineJob((ctx) => ctx.readTextFile(`s3://${BUCKET}/split/big.txt`).collect('lines')),
      parallelism: 4,
      executor: 'inprocess',
      shuffle: { pipelined: memory, blocking: memory },
      fileSystems: [recording],
    });
    assert.equal(result.status, 'succeeded', result.error?.message);
    assert.deepEqual(result.collected['lines'], lines, 'every line once, in order: a split owns the lines that start in it');
    for (let i = 1; i < 4; i++) {
      const from = Math.floor((i * size) / 4);
      assert.ok(reads.some((r) => r.position === from - 1), `subtask ${i} starts reading at its split (byte ${from - 1}, to find the first line it owns)`);
    }
    assert.ok(reads.every((r) => r.length <= 64 * 1024 * 1024), 'no read of the whole object');
    assert.ok(fs.stats.rangedReads >= 8, `several ranged GETs (${fs.stats.rangedReads})`);
    assert.ok(fs.stats.bytesRead < size * 1.5, `the object was read about once (${fs.stats.bytesRead} of ${size} bytes)`);
  });

  it('a publish that fails leaves no output object: the sink committed first is rolled back to what the key held', async () => {
    await put('fail/in.txt', 'a\nb\nc\n');
    await put('fail/a.txt', 'old a\n');
    await using fs = fileSystem();
    let commits = 0;
    const failing = wrap(fs, {
      stage: async (request) => {
        const staged = await fs.stage(request);
        return {
          ...staged,
          commit: async () => {
            if (++commits === 2) throw new Error('injected: the second commit fails');
            await staged.commit();
          },
        };
      },
    });
    const result = await runJob({
      job: defineJob((ctx) => {
        const lines = ctx.readTextFile(`s3://${BUCKET}/fail/in.txt`);
        lines.writeText(`s3://${BUCKET}/fail/a.txt`, { name: 'write-a' });
        lines.map((l) => l.toUpperCase()).writeText(`s3://${BUCKET}/fail/b.txt`, { name: 'write-b' });
      }),
      parallelism: 2,
      executor: 'inprocess',
      shuffle: { pipelined: memory, blocking: memory },
      fileSystems: [failing],
    });
    assert.equal(result.status, 'failed');
    assert.equal((result.error?.cause as { code?: string } | undefined)?.code, 'WEFT_ERR_SINK_FAILED');
    assert.equal(commits, 2, 'one sink was committed before the other failed');
    assert.equal((await get('fail/a.txt'))?.toString(), 'old a\n', 'a.txt holds what it held before');
    assert.equal(await get('fail/b.txt'), undefined, 'b.txt was never published');
    assert.deepEqual(await keys('fail/'), ['fail/a.txt', 'fail/in.txt'], 'no attempt object, staged copy or kept copy is left');
  });

  it('resumes a SIGKILLed terasort with an S3 sink: the clean bytes, every task the log finished reused', async () => {
    const meta = `sqlite://${join(dir.path, 'resume-meta.db')}`;
    const common = ['--meta', meta, '--parallelism', '2', '--workers', '2', '--json'];
    const records = ['--records', '200000'];
    const clean = await weft(bin, ['run', terasort, ...common, '--', ...records, '--output', `s3://${BUCKET}/resume/clean.txt`], dir.path, env);
    assert.equal(clean.code, 0, clean.stderr);
    const args = ['run', terasort, '--job-id', 'ts-s3-sink', ...common, '--', ...records, '--output', `s3://${BUCKET}/resume/sorted.txt`];
    await using log = await createJobEventLog(meta);
    await killOnceFinished({ bin, args, cwd: dir.path, env, log, jobId: 'ts-s3-sink', atLeast: 2 });
    const logged = await finishedInLog(log, 'ts-s3-sink');
    assert.equal(await get('resume/sorted.txt'), undefined, 'the killed run published nothing');
    const resumed = await weft(bin, args, dir.path, env);
    assert.equal(resumed.code, 0, resumed.stderr);
    const summary = JSON.parse(resumed.stdout) as { resumed: boolean; tasksReused: number; attempts: number; tasks: number };
    assert.deepEqual([summary.resumed, summary.tasksReused], [true, logged.size], resumed.stderr);
    assert.ok(summary.tasksReused > 0);
    assert.equal(summary.attempts, summary.tasks - summary.tasksReused);
    assert.ok((await get('resume/sorted.txt'))?.equals((await get('resume/clean.txt'))!), 'the resumed output equals a clean run’s, byte for byte');
    assert.deepEqual(await keys('resume/'), ['resume/clean.txt', 'resume/sorted.txt'], 'no attempt object is left');
  });

  it('a job master killed once every task finished, before publishing, resumes and publishes the S3 sink from the kept attempt objects', async () => {
    const meta = `sqlite://${join(dir.path, 'publish-meta.db')}`;
    const common = ['--meta', meta, '--parallelism', '2', '--workers', '2', '--json'];
    const job = ['--', '--records', '20000', '--output', `s3://${BUCKET}/publish/sorted.txt`];
    const plan = JSON.parse((await weft(bin, ['run', terasort, '--plan-only', '--json', ...common.slice(2), ...job], dir.path, env)).stdout) as { vertices: { parallelism: number }[] };
    const tasks = plan.vertices.reduce((sum, v) => sum + v.parallelism, 0);
    const args = ['run', terasort, '--job-id', 'ts-publish', ...common, '--inject-faults', `kill-job-master:task-finished@${tasks}`, ...job];
    const killed = await weft(bin, args, dir.path, env);
    assert.notEqual(killed.code, 0, 'the job master was killed');
    assert.equal(await get('publish/sorted.txt'), undefined, 'nothing was published');
    assert.ok((await keys('publish/')).some((k) => k.includes('/.sorted.txt.weft-ts-publish/part-')), 'the finished attempts\' objects are kept');
    const resumed = await weft(bin, args, dir.path, env);
    assert.equal(resumed.code, 0, resumed.stderr);
    const summary = JSON.parse(resumed.stdout) as { resumed: boolean; tasksReused: number; attempts: number; tasks: number };
    assert.deepEqual([summary.resumed, summary.tasksReused, summary.attempts], [true, tasks, 0], 'every task reused, the sink published from its kept parts');
    const lines = ((await get('publish/sorted.txt')) ?? Buffer.alloc(0)).toString('utf8').trimEnd().split('\n');
    assert.equal(lines.length, 20_000);
    for (let i = 1; i < lines.length; i++) assert.ok(lines[i - 1]!.slice(0, 10) <= lines[i]!.slice(0, 10), `key order at line ${i}`);
    assert.deepEqual(await keys('publish/'), ['publish/sorted.txt'], 'no attempt object is left');
  });

  it('refuses, before any task runs (exit 2), an s3:// input that does not exist and an s3:// output naming no object', async () => {
    const missing = await weft(bin, ['run', wordCount, '--executor', 'inprocess', '--', '--input', `s3://${BUCKET}/no/such/input`, '--output', 'x.tsv'], dir.path, env);
    assert.equal(missing.code, 2, missing.stderr);
    assert.match(missing.stderr, /cannot read s3:\/\/weft-io\/no\/such\/input/);
    await put('bad/in.txt', 'a b\n');
    const noKey = await weft(bin, ['run', wordCount, '--executor', 'inprocess', '--', '--input', `s3://${BUCKET}/bad/in.txt`, '--output', `s3://${BUCKET}/bad/`], dir.path, env);
    assert.equal(noKey.code, 2, noKey.stderr);
    assert.match(noKey.stderr, /names no object/);
    assert.deepEqual(await keys('bad/'), ['bad/in.txt'], 'nothing was written');
  });
});
