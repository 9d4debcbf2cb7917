// `weft run --shuffle-replicas 2`: a job's blocking partitions on two real `weft shuffle-server` processes
// of different "hosts" (127.0.0.2, 127.0.0.3); one server SIGKILLed while the job runs costs no task.
import assert from 'node:assert/strict';
import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { readFile, readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { after, before, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { type RedisServer, type TempDir, createTempDir, startRedis } from '@weft/testkit';

const bin = fileURLToPath(new URL('../bin/weft.js', import.meta.url));
// servers run without the bin shim, so a SIGKILL reaches the server itself (the shim forwards only SIGINT/TERM/HUP)
const main = fileURLToPath(new URL('../src/main.ts', import.meta.url));
const repo = fileURLToPath(new URL('../../..', import.meta.url));
const SECRET = 'shuffle-replicas-run-secret-0123456789';
const env = { ...process.env, WEFT_SHUFFLE_SECRET: SECRET };

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

function weft(args: string[]): { child: ChildProcess; done: Promise<Run> } {
  let child!: ChildProcess;
  const done = new Promise<Run>((resolve) => {
    child = execFile(process.execPath, [bin, ...args], { cwd: repo, env, maxBuffer: 64 * 1024 * 1024 }, (error, stdout, stderr) => {
      resolve({ code: error === null ? 0 : typeof error.code === 'number' ? error.code : null, stdout, stderr });
    });
  });
  return { child, done };
}

async function startServer(redisUrl: string, dir: string, host: string): Promise<ChildProcess> {
  const child = spawn(process.execPath, ['--conditions=source', '--import', 'tsx', main, 'shuffle-server', '--port', '0', '--host', host, '--dir', dir, '--redis', redisUrl, '--heartbeat-ms', '200'], { env, stdio: ['ignore', 'pipe', 'pipe'] });
  let stderr = '';
  child.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
  await new Promise<void>((resolve, reject) => {
    createInterface({ input: child.stdout! }).on('line', (line) => {
      if (/^listening on https?:\/\//.test(line)) resolve();
    });
    child.once('exit', (code) => reject(new Error(`weft shuffle-server exited (${code}) before listening:\n${stderr}`)));
  });
  return child;
}

async function dataObjects(dir: string): Promise<number> {
  const entries = await readdir(dir, { recursive: true, withFileTypes: true }).catch(() => []);
  return entries.filter((e) => e.isFile() && e.name.endsWith('.wsm')).length;
}

describe('weft run --shuffle-replicas 2', () => {
  let redis: RedisServer;
  let dir: TempDir;
  const servers: ChildProcess[] = [];
  before(async () => {
    [redis, dir] = await Promise.all([startRedis({ persistent: false }), createTempDir('weft-run-replicas-')]);
    servers.push(await startServer(redis.url, join(dir.path, 'a'), '127.0.0.2'), await startServer(redis.url, join(dir.path, 'b'), '127.0.0.3'));
  });
  after(async () => {
    await Promise.allSettled(
      servers.map((child) => new Promise<void>((resolve) => (child.exitCode !== null || child.signalCode !== null ? resolve() : (child.once('exit', () => resolve()), child.kill('SIGTERM'))))),
    );
    await Promise.allSettled([redis?.close(), dir?.remove()]);
  });

  it('sorts exactly, re-running no task, when one of the two servers is SIGKILLed while the job runs', async () => {
    const job = (output: string) => ['run', 'examples/terasort.ts', '--parallelism', '3', '--workers', '2', '--shuffle-servers', redis.url, '--shuffle-replicas', '2', '--json', '--', '--records', '200000', '--output', output];
    const clean = await weft(job(join(dir.path, 'clean.txt'))).done;
    assert.equal(clean.code, 0, clean.stderr);
    assert.deepEqual((JSON.parse(clean.stdout) as { shuffleReplicas: unknown }).shuffleReplicas, { requested: 2, used: 2, liveServers: 2, sameHost: false });

    const faulty = weft(job(join(dir.path, 'faulty.txt')));
    // once the job has pushed a partition to server a, kill it (the job may be anywhere past that point)
    while ((await dataObjects(join(dir.path, 'a'))) === 0 && faulty.child.exitCode === null) await new Promise((resolve) => setTimeout(resolve, 20));
    const running = faulty.child.exitCode === null;
    servers[0]!.kill('SIGKILL');
    const run = await faulty.done;
    assert.ok(running, 'the server died while the job ran');
    assert.equal(run.code, 0, run.stderr);
    const summary = JSON.parse(run.stdout) as { restarts: number; failures: number; attempts: number; tasks: number };
    assert.equal(summary.failures, 0, `no task failed: ${run.stderr}`);
    assert.equal(summary.restarts, 0);
    assert.equal(summary.attempts, summary.tasks, 'one attempt per task');
    assert.ok((await readFile(join(dir.path, 'faulty.txt'))).equals(await readFile(join(dir.path, 'clean.txt'))), 'the output is byte for byte the clean run\'s');
  });
});
