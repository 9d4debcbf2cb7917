// `weft run --shuffle-servers`: a job's blocking exchanges pushed to a pool of two real `weft shuffle-server`
// processes found in a real Redis registry, all spawned through bin/weft.js as users run them.
import assert from 'node:assert/strict';
import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { readFile, readdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { after, before, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { type RedisServer, type TempDir, createTempDir, startRedis } from '@weft/testkit';

const bin = fileURLToPath(new URL('../bin/weft.js', import.meta.url));
const repo = fileURLToPath(new URL('../../..', import.meta.url));
const SECRET = 'shuffle-servers-run-secret-0123456789';

function weft(args: string[], env: Record<string, string>): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(process.execPath, [bin, ...args], { cwd: repo, env: { ...process.env, ...env }, maxBuffer: 16 * 1024 * 1024 }, (error, stdout, stderr) => {
      resolve({ code: error === null ? 0 : typeof error.code === 'number' ? error.code : null, stdout, stderr });
    });
  });
}

async function startServer(redisUrl: string, dir: string): Promise<ChildProcess> {
  const child = spawn(process.execPath, [bin, 'shuffle-server', '--port', '0', '--dir', dir, '--redis', redisUrl, '--heartbeat-ms', '200'], {
    env: { ...process.env, WEFT_SHUFFLE_SECRET: SECRET },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
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

function wordCounts(text: string): Map<string, number> {
  const counts = new Map<string, number>();
  for (const word of text.split(/\s+/)) if (word !== '') counts.set(word, (counts.get(word) ?? 0) + 1);
  return counts;
}

describe('weft run --shuffle-servers', () => {
  let redis: RedisServer;
  let dir: TempDir;
  const servers: ChildProcess[] = [];
  before(async () => {
    [redis, dir] = await Promise.all([startRedis({ persistent: false }), createTempDir('weft-run-servers-')]);
    servers.push(...(await Promise.all([startServer(redis.url, join(dir.path, 'a')), startServer(redis.url, join(dir.path, 'b'))])));
  });
  after(async () => {
    await Promise.allSettled(
      servers.map((child) => new Promise<void>((resolve) => (child.exitCode !== null ? resolve() : (child.once('exit', () => resolve()), child.kill('SIGTERM'))))),
    );
    await Promise.allSettled([redis?.close(), dir?.remove()]);
  });

  it('counts words exactly with its blocking exchanges pushed to two shuffle servers, spread over both', async () => {
    const lines = Array.from({ length: 20_000 }, (_, i) => `w${i % 977} x${(i * 7) % 131}  é${i % 13}\tend`);
    const input = join(dir.path, 'input.txt');
    await writeFile(input, `${lines.join('\n')}\n`);
    const output = join(dir.path, 'counts.tsv');
    const run = await weft(['run', 'examples/word-count.ts', '--parallelism', '3', '--workers', '2', '--shuffle-servers', redis.url, '--', '--input', input, '--output', output], {
      WEFT_SHUFFLE_SECRET: SECRET,
    });
    assert.equal(run.code, 0, run.stderr);
    const got = new Map(
      (await readFile(output, 'utf8'))
        .split('\n')
        .filter((l) => l !== '')
        .map((l) => {
          const [word, n] = l.split('\t');
          return [word!, Number(n)] as const;
        }),
    );
    assert.deepEqual(new Map([...got].sort()), new Map([...wordCounts(lines.join('\n'))].sort()));
    // both servers stored partitions of the job
    for (const server of ['a', 'b']) {
      const stored = (await readdir(join(dir.path, server), { recursive: true, withFileTypes: true })).filter((e) => e.isFile());
      assert.ok(stored.length > 0, `server ${server} stored no partition file`);
    }
  });

  it('fails the job at once (exit 1, no stack, no restarts) naming the Redis URL when the pool has no live server', async () => {
    const empty = redis.url.replace(/\/0$/, '/7'); // same Redis, a database no server registered in
    const run = await weft(['run', 'examples/terasort.ts', '--parallelism', '2', '--shuffle-servers', empty, '--restart-strategy', 'fixed-delay', '--restart-attempts', '5', '--', '--records', '1000'], {
      WEFT_SHUFFLE_SECRET: SECRET,
    });
    assert.equal(run.code, 1, run.stderr);
    assert.ok(run.stderr.includes(`no live shuffle server is registered in ${empty}`), run.stderr);
    assert.doesNotMatch(run.stderr, /internal error|\n\s+at /, 'a clear message, no stack trace');
    assert.doesNotMatch(run.stderr, /restart/i, 'no failover was tried');
  });

  it('pushes every partition to as many servers as it can with --shuffle-replicas above the pool size, and says so in its summary', async () => {
    const lines = Array.from({ length: 5_000 }, (_, i) => `r${i % 211} s${(i * 3) % 57}`);
    const input = join(dir.path, 'replicas-input.txt');
    await writeFile(input, `${lines.join('\n')}\n`);
    const output = join(dir.path, 'replicas-counts.tsv');
    const args = ['run', 'examples/word-count.ts', '--parallelism', '2', '--workers', '2', '--shuffle-servers', redis.url, '--shuffle-replicas', '3'];
    const run = await weft([...args, '--', '--input', input, '--output', output], { WEFT_SHUFFLE_SECRET: SECRET });
    assert.equal(run.code, 0, run.stderr);
    assert.match(run.stdout, /^ {2}shuffle replicas: 3 requested, 2 used \(2 live servers\); some copies share a host/m);
    const got = (await readFile(output, 'utf8')).split('\n').filter((l) => l !== '').length;
    assert.equal(got, wordCounts(lines.join('\n')).size);
    const json = await weft([...args, '--json', '--', '--input', input, '--output', output], { WEFT_SHUFFLE_SECRET: SECRET });
    assert.equal(json.code, 0, json.stderr);
    assert.deepEqual((JSON.parse(json.stdout) as { shuffleReplicas: unknown }).shuffleReplicas, { requested: 3, used: 2, liveServers: 2, sameHost: true });
  });

  it('exits 2 when --meta is combined with --shuffle-servers, or the secret is missing', async () => {
    const both = await weft(['run', 'examples/word-count.ts', '--shuffle-servers', redis.url, '--meta', 'sqlite:///tmp/x.db'], { WEFT_SHUFFLE_SECRET: SECRET });
    assert.equal(both.code, 2);
    assert.match(both.stderr, /--meta cannot be combined with --shuffle-servers/);
    const noSecret = await weft(['run', 'examples/word-count.ts', '--shuffle-servers', redis.url], { WEFT_SHUFFLE_SECRET: '' });
    assert.equal(noSecret.code, 2, noSecret.stderr);
    assert.match(noSecret.stderr, /WEFT_SHUFFLE_SECRET|secret/i);
  });
});
