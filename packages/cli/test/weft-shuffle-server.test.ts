// Spawns `weft shuffle-server` through the bin shim (no build), as an operator would run it.
import assert from 'node:assert/strict';
import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { readFile, readdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { after, before, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { executionAttemptId, executionVertexId, intermediateResultId, isShuffleError, jobId, resultPartitionId, taskExecutorId } from '@weft/shuffle-api';
import { rejectionOf } from '@weft/shuffle-api/testing';
import { type BlobWriter, PartitionFileWriter } from '@weft/shuffle-remote';
import { ShuffleServerClient, createJobToken, createShuffleServerServiceFactory, resolveShuffleServerClientOptions } from '@weft/shuffle-remote/client';
import { type RedisServer, type S3Server, type TempDir, createTempDir, startRedis, startS3Server } from '@weft/testkit';

const bin = fileURLToPath(new URL('../bin/weft.js', import.meta.url));
const SECRET = 'cli-test-secret-0123456789';

/** Runs `weft <args>` to its exit; one still running after `timeoutMs` is stopped (SIGTERM) and reports code null. */
function weft(args: string[], env: Record<string, string> = {}, timeoutMs = 120_000): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    // WEFT_STORE from the caller's environment would become a tier: tests give it when they mean it
    execFile(process.execPath, [bin, ...args], { env: { ...process.env, WEFT_STORE: '', ...env }, timeout: timeoutMs }, (error, stdout, stderr) => {
      resolve({ code: error === null ? 0 : typeof error.code === 'number' ? error.code : null, stdout, stderr });
    });
  });
}

/** A valid partition data object (one subpartition, one record), encoded by the shuffle's own format writer. */
async function partitionObject(): Promise<Uint8Array> {
  const chunks: Uint8Array[] = [];
  let written = 0;
  const blob: BlobWriter = {
    key: 'memory',
    bufferedBytes: 0,
    maxRetainedBytes: 0,
    uploadId: undefined,
    get bytesWritten() {
      return written;
    },
    async append(parts) {
      for (const part of parts) {
        chunks.push(part.slice());
        written += part.length;
      }
    },
    complete: async () => written,
    abort: async () => undefined,
  };
  const writer = new PartitionFileWriter({ blob, numberOfSubpartitions: 1, compression: 'none' });
  const record = new TextEncoder().encode('hello from the cli test');
  const framed = new Uint8Array(4 + record.length);
  new DataView(framed.buffer).setUint32(0, record.length, true);
  framed.set(record, 4);
  await writer.writeRegion({ subpartitions: [[{ kind: 1, bytes: framed }]], rawBytes: framed.length, blocks: 1 });
  await writer.finish();
  return Buffer.concat(chunks);
}

/** Spawns `weft shuffle-server` and resolves with its URL once it prints "listening on". */
async function startCli(args: string[], env: Record<string, string>): Promise<{ url: string; child: ChildProcess; exited: Promise<number | null> }> {
  const child = spawn(process.execPath, [bin, 'shuffle-server', ...args], { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  let stderr = '';
  child.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
  try {
    const url = await new Promise<string>((resolve, reject) => {
      createInterface({ input: child.stdout! }).on('line', (line) => {
        const match = /^listening on (https?:\/\/\S+)$/.exec(line);
        if (match) resolve(match[1]!);
      });
      void exited.then((code) => reject(new Error(`weft shuffle-server exited (${code}) before listening:\n${stderr}`)));
    });
    return { url, child, exited };
  } catch (error) {
    if (child.exitCode === null) child.kill('SIGKILL');
    throw error;
  }
}

describe('weft shuffle-server (spawned through bin/weft.js)', () => {
  let redis: RedisServer;
  let s3: S3Server;
  let dir: TempDir;
  before(async () => {
    [redis, s3, dir] = await Promise.all([startRedis({ persistent: false }), startS3Server({ buckets: ['cli-tier'] }), createTempDir('weft-cli-shuffle-server-')]);
  });
  after(async () => {
    await Promise.allSettled([redis?.close(), s3?.stop(), dir?.remove()]);
  });

  it('prints its usage with --help', async () => {
    const run = await weft(['shuffle-server', '--help']);
    assert.equal(run.code, 0);
    assert.match(run.stdout, /Usage: weft shuffle-server --port <n> --dir <path> \[--redis <url>\] \[--store <s3 url>\]/);
  });

  it('exits 2 naming what to fix: no secret, an unreachable Redis, a bad --store, a missing --dir', async () => {
    const noSecret = await weft(['shuffle-server', '--port', '0', '--dir', dir.path], { WEFT_SHUFFLE_SECRET: '' });
    assert.equal(noSecret.code, 2);
    assert.match(noSecret.stderr, /WEFT_SHUFFLE_SECRET/);
    const secretFile = join(dir.path, 'secret');
    await writeFile(secretFile, `${SECRET}\n`);
    const unreachable = await weft(['shuffle-server', '--port', '0', '--dir', dir.path, '--secret-file', secretFile, '--redis', 'redis://127.0.0.1:1/0']);
    assert.equal(unreachable.code, 2);
    assert.match(unreachable.stderr, /--redis: .*cannot reach Redis/);
    const badStore = await weft(['shuffle-server', '--port', '0', '--dir', dir.path, '--store', 'ftp://nowhere'], { WEFT_SHUFFLE_SECRET: SECRET });
    assert.equal(badStore.code, 2);
    assert.match(badStore.stderr, /--store/);
    const noDir = await weft(['shuffle-server', '--port', '0'], { WEFT_SHUFFLE_SECRET: SECRET });
    assert.equal(noDir.code, 2);
    assert.match(noDir.stderr, /missing --dir/);
  });

  it('serves once it prints "listening on", and on SIGTERM finishes the push in flight, deregisters and exits 0', async () => {
    const child = spawn(process.execPath, [bin, 'shuffle-server', '--port', '0', '--dir', join(dir.path, 'data'), '--redis', redis.url, '--heartbeat-ms', '100'], {
      env: { ...process.env, WEFT_STORE: '', WEFT_SHUFFLE_SECRET: SECRET },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
    let stderr = '';
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    const factory = createShuffleServerServiceFactory({ redis: redis.url, secret: SECRET, placementRefreshMs: 0, retryAttempts: 1 });
    const master = factory.createShuffleMaster();
    const client = new ShuffleServerClient(resolveShuffleServerClientOptions({ redis: redis.url, retryAttempts: 1 }));
    let release: () => void = () => undefined;
    try {
      const url = await new Promise<string>((resolve, reject) => {
        createInterface({ input: child.stdout }).on('line', (line) => {
          const match = /^listening on (https?:\/\/\S+)$/.exec(line);
          if (match) resolve(match[1]!);
        });
        void exited.then((code) => reject(new Error(`weft shuffle-server exited (${code}) before listening:\n${stderr}`)));
      });
      assert.match(url, /^http:\/\/127\.0\.0\.1:\d+$/);
      const health = await fetch(`${url}/healthz`);
      assert.equal(health.status, 200);
      // registered: the master places a partition on it
      await master.start();
      const register = () =>
        master.registerPartitionWithProducer({
          jobId: jobId('cli-job'),
          partition: { resultId: intermediateResultId('e'), partitionId: resultPartitionId('e', 0), partitionIndex: 0, partitionType: 'BLOCKING', numberOfSubpartitions: 1 },
          producer: { producerId: executionAttemptId(executionVertexId('v', 0), 0), attempt: 0, taskExecutorId: taskExecutorId('t') },
        });
      assert.equal(((await register()).details as { url: string }).url, url);

      // a push whose body we hold back: in flight when SIGTERM arrives
      const object = await partitionObject();
      const held = new Promise<void>((resolve) => (release = resolve));
      async function* body(): AsyncIterable<Uint8Array> {
        yield object.subarray(0, 10);
        await held;
        yield object.subarray(10);
      }
      const token = createJobToken(Buffer.from(SECRET), 'cli-job');
      const push = client.push({ url, token, jobId: 'cli-job', partitionId: 'e#0', attempt: 0, body: body() });
      await waitFor(async () => /weft_shuffle_server_active_streams 1/.test(await (await fetch(`${url}/metrics`)).text()), 'the push to be in flight');
      child.kill('SIGTERM');
      // draining: still registered but no longer placed on
      await waitFor(() => register().then(() => false, (error: unknown) => isShuffleError(error, 'SHF_ERR_STORAGE_UNAVAILABLE')), 'the server to stop taking partitions');
      assert.equal(child.exitCode, null, 'the server must wait for the push in flight');
      release();
      assert.equal((await push).objectBytes, object.length, 'the push in flight completes');
      assert.equal(await exited, 0);
      const afterExit = await rejectionOf(register());
      assert.ok(isShuffleError(afterExit, 'SHF_ERR_STORAGE_UNAVAILABLE'));
      assert.match(afterExit.message, /no live shuffle server/);
    } finally {
      release();
      await Promise.allSettled([client.close(), master.close()]);
      if (child.exitCode === null) child.kill('SIGKILL');
      await exited;
    }
  });

  it('refuses a second server on a --dir in use (exit 2, SHF_ERR_DIR_LOCKED naming the directory and the holder, no stack) while the first keeps serving, and after kill -9 of the first a new server starts on it', async () => {
    const shared = join(dir.path, 'shared');
    const env = { WEFT_SHUFFLE_SECRET: SECRET, WEFT_STORE: '' };
    const first = await startCli(['--port', '0', '--host', '127.0.0.1', '--dir', shared], env);
    let third: Awaited<ReturnType<typeof startCli>> | undefined;
    try {
      const firstId = ((await (await fetch(`${first.url}/healthz`)).json()) as { serverId: string }).serverId;
      // a second server on the same directory (another address, as two servers on one machine): it must not start
      const second = await weft(['shuffle-server', '--port', '0', '--host', '127.0.0.2', '--dir', shared], env, 30_000);
      assert.equal(second.code, 2, second.stderr);
      assert.equal(second.stdout, '', 'the second server never listened');
      const lines = second.stderr.trimEnd().split('\n');
      assert.equal(lines.length, 1, `one line, no usage and no stack:\n${second.stderr}`);
      // the server's own process (bin/weft.js may run it as a child of the shim), as its lock file names it
      const lock = JSON.parse(await readFile(join(shared, '.lock'), 'utf8')) as { pid: number };
      assert.match(lines[0]!, /^weft shuffle-server: SHF_ERR_DIR_LOCKED: /);
      assert.ok(lines[0]!.includes(`the directory ${shared} is held by another shuffle server (pid ${lock.pid} on host `), lines[0]);
      assert.ok(lines[0]!.includes(`remove ${join(shared, '.lock')}`), lines[0]);
      assert.doesNotMatch(second.stderr, /\n\s+at /);
      const health = await fetch(`${first.url}/healthz`);
      assert.equal(health.status, 200, 'the first server keeps serving');
      assert.equal(((await health.json()) as { serverId: string }).serverId, firstId);

      // a killed server leaves its lock file behind: stale on this host, the next server takes it over
      process.kill(lock.pid, 'SIGKILL');
      await first.exited;
      assert.ok((await readdir(shared)).includes('.lock'));
      third = await startCli(['--port', '0', '--dir', shared], env);
      assert.equal(((await (await fetch(`${third.url}/healthz`)).json()) as { serverId: string }).serverId, firstId, 'the same directory, the same server id');
      third.child.kill('SIGTERM');
      assert.equal(await third.exited, 0);
      assert.ok(!(await readdir(shared)).includes('.lock'), 'a graceful shutdown removes the lock file');
    } finally {
      for (const server of [first, third]) if (server !== undefined && server.child.exitCode === null && server.child.signalCode === null) server.child.kill('SIGKILL');
      await Promise.all([first.exited, third?.exited]);
    }
  });

  it('takes its S3 tier from WEFT_STORE when --store is not given, and refuses a WEFT_STORE that is not s3:// with exit 2 naming it', async () => {
    const notS3 = await weft(['shuffle-server', '--port', '0', '--dir', join(dir.path, 'env-file')], { WEFT_SHUFFLE_SECRET: SECRET, WEFT_STORE: `file://${dir.path}/store` });
    assert.equal(notS3.code, 2);
    assert.match(notS3.stderr, /WEFT_STORE: the shuffle server's tier must be an S3 store/);
    const badBucket = await weft(['shuffle-server', '--port', '0', '--dir', join(dir.path, 'env-bucket')], {
      WEFT_SHUFFLE_SECRET: SECRET,
      WEFT_STORE: 's3://no-such-bucket/x',
      AWS_ENDPOINT_URL: s3.endpoint,
      AWS_REGION: s3.region,
      AWS_ACCESS_KEY_ID: s3.accessKeyId,
      AWS_SECRET_ACCESS_KEY: s3.secretAccessKey,
    });
    assert.equal(badBucket.code, 2);
    assert.match(badBucket.stderr, /WEFT_STORE: .*no-such-bucket/, 'a tier problem names WEFT_STORE when the tier came from it');
    const noTier = await weft(['shuffle-server', '--port', '0', '--dir', join(dir.path, 'env-none'), '--offload'], { WEFT_SHUFFLE_SECRET: SECRET });
    assert.equal(noTier.code, 2);
    assert.match(noTier.stderr, /--offload needs an S3 tier: --store <s3 url> \(or WEFT_STORE\)/);

    const env = {
      WEFT_SHUFFLE_SECRET: SECRET,
      WEFT_STORE: 's3://cli-tier/from-env',
      AWS_ENDPOINT_URL: s3.endpoint,
      AWS_REGION: s3.region,
      AWS_ACCESS_KEY_ID: s3.accessKeyId,
      AWS_SECRET_ACCESS_KEY: s3.secretAccessKey,
    };
    const { url, child, exited } = await startCli(['--port', '0', '--dir', join(dir.path, 'env-tier')], env);
    const client = new ShuffleServerClient(resolveShuffleServerClientOptions({ servers: [url], retryAttempts: 1 }));
    try {
      const object = await partitionObject();
      const token = createJobToken(Buffer.from(SECRET), 'env-job');
      const target = { url, token, jobId: 'env-job', partitionId: 'e#0', attempt: 0 };
      await client.push({ ...target, body: [object], length: object.length });
      const descriptor = {
        shuffleServiceId: 'shuffle-server',
        jobId: jobId('env-job'),
        partition: { resultId: intermediateResultId('e'), partitionId: resultPartitionId('e', 0), partitionIndex: 0, partitionType: 'BLOCKING' as const, numberOfSubpartitions: 1 },
        producer: { producerId: executionAttemptId(executionVertexId('v', 0), 0), attempt: 0, taskExecutorId: taskExecutorId('t') },
        details: { serverId: 'cli', url, token },
      };
      const record = await client.commit(target, descriptor, [27]);
      assert.equal(record.tiered, true, 'the partition is tiered: WEFT_STORE was read');
      const stored = (await readdir(join(s3.dir, 'cli-tier'), { recursive: true })).filter((f) => f.endsWith('._S3rver_object'));
      assert.equal(stored.length, 1, `one S3 object under the WEFT_STORE bucket, found ${JSON.stringify(stored)}`);
      assert.ok(stored[0]!.startsWith('from-env/'), stored[0]);
    } finally {
      await client.close();
      child.kill('SIGTERM');
    }
    assert.equal(await exited, 0);
  });
});

async function waitFor(check: () => Promise<boolean>, what: string): Promise<void> {
  const until = Date.now() + 20_000;
  for (let delay = 10; !(await check()); delay = Math.min(delay * 2, 200)) {
    if (Date.now() > until) throw new Error(`gave up waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, delay));
  }
}
