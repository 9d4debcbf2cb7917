import assert from 'node:assert/strict';
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { readFile, readdir, writeFile } from 'node:fs/promises';
import { hostname } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { isShuffleError } from '@weft/shuffle-api';
import { rejectionOf } from '@weft/shuffle-api/testing';
import { startShuffleServer } from '@weft/shuffle-remote/server';
import { createTempDir } from '@weft/testkit';
import { DIRECTORY_LOCK_FILE, DirectoryLock } from '../src/server/directory-lock.js';
import { encodeObject, testDescriptor, text } from './helpers/server-objects.js';
import { TEST_SECRET } from './helpers/server-cluster.js';
import { startTestServer } from './helpers/test-server.js';

const FIXTURE = fileURLToPath(new URL('./fixtures/directory-lock-process.ts', import.meta.url));

function records(prefix: string, n: number): Uint8Array[] {
  return Array.from({ length: n }, (_, i) => text(`${prefix}-${i}`));
}

/** The pid of a process that ran on this host and has exited. */
function deadPid(): number {
  const child = spawnSync(process.execPath, ['-e', '']);
  assert.ok(child.pid !== undefined && child.pid > 0);
  return child.pid;
}

/** What a lock file left by `pid` on `host` holds. */
async function writeLockOf(dir: string, pid: number, host = hostname()): Promise<string> {
  const token = randomUUID();
  await writeFile(join(dir, DIRECTORY_LOCK_FILE), `${JSON.stringify({ pid, hostname: host, startedAtMs: Date.now() - 60_000, token })}\n`);
  return token;
}

async function lockFileHolder(dir: string): Promise<{ pid: number; hostname: string; token: string }> {
  return JSON.parse(await readFile(join(dir, DIRECTORY_LOCK_FILE), 'utf8')) as { pid: number; hostname: string; token: string };
}

/** A process taking the lock of `dir` at `startAtMs` (fixtures/directory-lock-process.ts); resolves with what it printed. */
function lockProcess(dir: string, startAtMs = 0): { child: ChildProcess; result: Promise<{ event: string; code?: string; message?: string }>; exited: Promise<unknown> } {
  const child = spawn(process.execPath, ['--conditions=source', '--import', 'tsx', FIXTURE, JSON.stringify({ dir, startAtMs })], { stdio: ['ignore', 'pipe', 'pipe'] });
  const exited = new Promise((resolve) => child.once('exit', resolve));
  let stderr = '';
  child.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
  const result = new Promise<{ event: string; code?: string; message?: string }>((resolve, reject) => {
    createInterface({ input: child.stdout! }).once('line', (line) => resolve(JSON.parse(line) as { event: string }));
    void exited.then(() => reject(new Error(`the lock process exited before it printed:\n${stderr}`)));
  });
  return { child, result, exited };
}

describe('DirectoryLock: a shuffle server directory has one owner', () => {
  it('refuses a second lock of a directory while the first holds it, naming the directory and the holder, and leaves the first lock in place', async () => {
    await using dir = await createTempDir('weft-dir-lock-');
    await using first = await DirectoryLock.acquire(dir.path);
    const refused = await rejectionOf(DirectoryLock.acquire(dir.path));
    assert.ok(isShuffleError(refused, 'SHF_ERR_DIR_LOCKED'), String(refused));
    assert.equal(refused.retryable, false);
    assert.equal(refused.context['dir'], dir.path);
    assert.equal(refused.context['holderPid'], process.pid);
    assert.equal(refused.context['holderHostname'], hostname());
    assert.match(refused.message, new RegExp(`the directory ${dir.path} is held by another shuffle server \\(pid ${process.pid} on host `));
    assert.match(refused.message, /stop that server, or, if that process is really gone, remove .*\.lock and start again/);
    assert.equal((await lockFileHolder(dir.path)).token, first.holder.token, 'the refused start-up did not touch the lock');
    assert.deepEqual((await readdir(dir.path)).sort(), ['.lock'], 'no temporary file is left behind');
  });

  it('refuses a lock held by another live process on this host, and takes it over once that process is killed with SIGKILL', async () => {
    await using dir = await createTempDir('weft-dir-lock-');
    const holder = lockProcess(dir.path);
    try {
      assert.equal((await holder.result).event, 'locked');
      const refused = await rejectionOf(DirectoryLock.acquire(dir.path));
      assert.ok(isShuffleError(refused, 'SHF_ERR_DIR_LOCKED'), String(refused));
      assert.equal(refused.context['holderPid'], holder.child.pid);
      holder.child.kill('SIGKILL');
      await holder.exited;
      await using lock = await DirectoryLock.acquire(dir.path);
      assert.deepEqual(await lockFileHolder(dir.path), { ...lock.holder, startedAtMs: lock.holder.startedAtMs });
    } finally {
      holder.child.kill('SIGKILL');
      await holder.exited;
    }
  });

  it('takes over a lock left on this host by a pid that no longer runs', async () => {
    await using dir = await createTempDir('weft-dir-lock-');
    const pid = deadPid();
    await writeLockOf(dir.path, pid);
    await using lock = await DirectoryLock.acquire(dir.path);
    const now = await lockFileHolder(dir.path);
    assert.equal(now.pid, process.pid);
    assert.equal(now.token, lock.holder.token);
  });

  it('takes over a lock of a killed process its parent has not collected yet (a zombie, on Linux)', { skip: process.platform !== 'linux' }, async () => {
    await using dir = await createTempDir('weft-dir-lock-');
    // sh starts a child that exits at once, then becomes `sleep`, which never waits for it: a zombie
    const parent = spawn('sh', ['-c', 'sleep 0 & echo $!; exec sleep 30'], { stdio: ['ignore', 'pipe', 'ignore'] });
    const exited = new Promise((resolve) => parent.once('exit', resolve));
    try {
      const pid = Number(await new Promise<string>((resolve) => createInterface({ input: parent.stdout! }).once('line', resolve)));
      const state = async (): Promise<string> => {
        const stat = await readFile(`/proc/${pid}/stat`, 'utf8');
        return stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3);
      };
      for (let i = 0; (await state()) !== 'Z'; i++) {
        assert.ok(i < 200, `process ${pid} never became a zombie`);
        await new Promise((resolve) => setTimeout(resolve, 10));
      }
      process.kill(pid, 0); // still answers, as a live process would
      await writeLockOf(dir.path, pid);
      await using lock = await DirectoryLock.acquire(dir.path);
      assert.equal((await lockFileHolder(dir.path)).token, lock.holder.token);
    } finally {
      parent.kill('SIGKILL');
      await exited;
    }
  });

  it("takes over a lock naming this process's own pid under a token it does not hold (a restarted container's process gets the same pid)", async () => {
    await using dir = await createTempDir('weft-dir-lock-');
    await writeLockOf(dir.path, process.pid);
    await using lock = await DirectoryLock.acquire(dir.path);
    assert.equal((await lockFileHolder(dir.path)).token, lock.holder.token);
  });

  it('never takes over a lock naming another host, however dead its pid looks here', async () => {
    await using dir = await createTempDir('weft-dir-lock-');
    const token = await writeLockOf(dir.path, deadPid(), 'another-host.example');
    const refused = await rejectionOf(DirectoryLock.acquire(dir.path));
    assert.ok(isShuffleError(refused, 'SHF_ERR_DIR_LOCKED'), String(refused));
    assert.equal(refused.context['holderHostname'], 'another-host.example');
    assert.equal((await lockFileHolder(dir.path)).token, token);
  });

  it('refuses a lock file it cannot read rather than guess it is stale', async () => {
    await using dir = await createTempDir('weft-dir-lock-');
    await writeFile(join(dir.path, DIRECTORY_LOCK_FILE), 'not json');
    const refused = await rejectionOf(DirectoryLock.acquire(dir.path));
    assert.ok(isShuffleError(refused, 'SHF_ERR_DIR_LOCKED'), String(refused));
    assert.match(refused.message, /names no readable holder/);
    assert.equal(await readFile(join(dir.path, DIRECTORY_LOCK_FILE), 'utf8'), 'not json');
  });

  it('removes the lock file on release (idempotent), so the directory can be locked again', async () => {
    await using dir = await createTempDir('weft-dir-lock-');
    const first = await DirectoryLock.acquire(dir.path);
    await Promise.all([first.release(), first.release()]);
    assert.deepEqual(await readdir(dir.path), []);
    await using second = await DirectoryLock.acquire(dir.path);
    await first.release();
    assert.equal((await lockFileHolder(dir.path)).token, second.holder.token, 'a late release of an old lock leaves the new one alone');
  });

  it('lets exactly one of several starters racing in this process for one stale lock win', async () => {
    await using dir = await createTempDir('weft-dir-lock-');
    await writeLockOf(dir.path, deadPid());
    const outcomes = await Promise.allSettled(Array.from({ length: 8 }, () => DirectoryLock.acquire(dir.path)));
    const won = outcomes.flatMap((o) => (o.status === 'fulfilled' ? [o.value] : []));
    try {
      assert.equal(won.length, 1, `winners: ${won.length}`);
      for (const o of outcomes) if (o.status === 'rejected') assert.ok(isShuffleError(o.reason, 'SHF_ERR_DIR_LOCKED'), String(o.reason));
      assert.equal((await lockFileHolder(dir.path)).token, won[0]!.holder.token);
    } finally {
      await Promise.all(won.map((lock) => lock.release()));
    }
  });

  it('lets exactly one of four processes starting at the same moment on one stale lock win', async () => {
    await using dir = await createTempDir('weft-dir-lock-');
    await writeLockOf(dir.path, deadPid());
    const startAtMs = Date.now() + 3_000; // after every process has loaded
    const racers = Array.from({ length: 4 }, () => lockProcess(dir.path, startAtMs));
    try {
      const results = await Promise.all(racers.map((r) => r.result));
      assert.equal(results.filter((r) => r.event === 'locked').length, 1, JSON.stringify(results));
      for (const r of results) if (r.event !== 'locked') assert.equal(r.code, 'SHF_ERR_DIR_LOCKED', JSON.stringify(r));
      const winner = racers[results.findIndex((r) => r.event === 'locked')]!;
      assert.equal((await lockFileHolder(dir.path)).pid, winner.child.pid);
    } finally {
      for (const r of racers) r.child.kill('SIGKILL');
      await Promise.all(racers.map((r) => r.exited));
    }
  });
});

describe('shuffle server: its --dir is locked for its lifetime', () => {
  it('refuses a second server on a directory in use with SHF_ERR_DIR_LOCKED before touching it: the first keeps serving its uncommitted pushes and server id', async () => {
    await using first = await startTestServer();
    const JOB = 'lock-job';
    const token = first.token(JOB);
    const pushed = await encodeObject([[records('pending', 3)]]);
    const at = { url: first.server.url, token, jobId: JOB, partitionId: 'p#0', attempt: 0 };
    await first.client.push({ ...at, body: [pushed.bytes], length: pushed.bytes.length });
    const before = await first.objectFiles();
    assert.equal(before.length, 1);

    const refused = await rejectionOf(startShuffleServer({ dir: first.dir.path, secret: TEST_SECRET }));
    assert.ok(isShuffleError(refused, 'SHF_ERR_DIR_LOCKED'), String(refused));
    assert.equal(refused.context['holderPid'], process.pid);
    assert.deepEqual(await first.objectFiles(), before, "the refused server's start-up did not delete the first one's push as garbage");
    // the first still serves: it commits the push it holds
    const record = await first.client.commit(at, testDescriptor({ jobId: JOB, partitionId: 'p#0', attempt: 0, subpartitions: 1, token }), pushed.subpartitionBytes);
    assert.equal(record.attempt, 0);
    assert.equal((await (await fetch(`${first.server.url}/healthz`)).json() as { serverId: string }).serverId, first.server.serverId);
  });

  it('gives the directory back on close, and on a failed start, so the next server starts on it', async () => {
    await using dir = await createTempDir('weft-dir-lock-server-');
    const first = await startShuffleServer({ dir: dir.path, secret: TEST_SECRET });
    const serverId = first.serverId;
    assert.equal((await lockFileHolder(dir.path)).pid, process.pid, 'a running server holds the lock');
    await first.close();
    assert.ok(!(await readdir(dir.path)).includes('.lock'), 'close removes the lock file');
    const failed = await rejectionOf(startShuffleServer({ dir: dir.path, secret: TEST_SECRET, tls: { certFile: join(dir.path, 'missing.pem'), keyFile: join(dir.path, 'missing.key') } }));
    assert.ok(isShuffleError(failed, 'SHF_ERR_INVALID_CONFIG'), String(failed));
    assert.ok(!(await readdir(dir.path)).includes('.lock'), 'a start that failed gives the lock back');
    const again = await startShuffleServer({ dir: dir.path, secret: TEST_SECRET });
    try {
      assert.equal(again.serverId, serverId);
    } finally {
      await again.close();
    }
  });
});
