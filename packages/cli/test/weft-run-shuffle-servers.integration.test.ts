// `weft run --shuffle-servers`: a job's blocking exchanges pushed to a pool of two real `weft shuffle-server`
// processes found in a real Redis registry, all spawned through bin/weft.js as users run them.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { readFile, readdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { type ShuffleServerPool, type TempDir, createTempDir, startShuffleServerPool } from '@weft/testkit';

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

function wordCounts(text: string): Map<string, number> {
  const counts = new Map<string, number>();
  for (const word of text.split(/\s+/)) if (word !== '') counts.set(word, (counts.get(word) ?? 0) + 1);
  return counts;
}

describe('weft run --shuffle-servers', () => {
  let pool: ShuffleServerPool;
  let dir: TempDir;
  before(async () => {
    // both on 127.0.0.1 (one host), started through bin/weft.js as users run them
    [pool, dir] = await Promise.all([startShuffleServerPool({ count: 2, hosts: ['127.0.0.1', '127.0.0.1'], secret: SECRET, weftCommand: [bin] }), createTempDir('weft-run-servers-')]);
  });
  after(async () => {
    await Promise.allSettled([pool?.close(), dir?.remove()]);
  });

  it('counts words exactly with its blocking exchanges pushed to two shuffle servers, spread over both', async () => {
    const lines = Array.from({ length: 20_000 }, (_, i) => `w${i % 977} x${(i * 7) % 131}  é${i % 13}\tend`);
    const input = join(dir.path, 'input.txt');
    await writeFile(input, `${lines.join('\n')}\n`);
    const output = join(dir.path, 'counts.tsv');
    const run = await weft(['run', 'examples/word-count.ts', '--parallelism', '3', '--workers', '2', '--shuffle-servers', pool.redisUrl, '--', '--input', input, '--output', output], {
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
    for (const server of pool.servers) {
      const stored = (await readdir(server.dir, { recursive: true, withFileTypes: true })).filter((e) => e.isFile());
      assert.ok(stored.length > 0, `server ${server.index} stored no partition file`);
    }
  });

  it('fails the job at once (exit 1, no stack, no restarts) naming the Redis URL when the pool has no live server', async () => {
    const empty = pool.redisUrl.replace(/\/0$/, '/7'); // same Redis, a database no server registered in
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
    const args = ['run', 'examples/word-count.ts', '--parallelism', '2', '--workers', '2', '--shuffle-servers', pool.redisUrl, '--shuffle-replicas', '3'];
    const run = await weft([...args, '--', '--input', input, '--output', output], { WEFT_SHUFFLE_SECRET: SECRET });
    assert.equal(run.code, 0, run.stderr);
    assert.match(run.stdout, /^ {2}shuffle replicas: 3 requested, 2 used \(2 live servers\); some copies share a host/m);
    assert.match(run.stderr, /^weft run: warning: --shuffle-replicas 3 asks for more copies than the pool can hold \(2 live shuffle servers\): 2 kept of each partition$/m);
    const got = (await readFile(output, 'utf8')).split('\n').filter((l) => l !== '').length;
    assert.equal(got, wordCounts(lines.join('\n')).size);
    const json = await weft([...args, '--json', '--', '--input', input, '--output', output], { WEFT_SHUFFLE_SECRET: SECRET });
    assert.equal(json.code, 0, json.stderr);
    assert.deepEqual((JSON.parse(json.stdout) as { shuffleReplicas: unknown }).shuffleReplicas, { requested: 3, used: 2, liveServers: 2, sameHost: true });
  });

  it('exits 2 when --meta is combined with --shuffle-servers, or the secret is missing', async () => {
    const both = await weft(['run', 'examples/word-count.ts', '--shuffle-servers', pool.redisUrl, '--meta', 'sqlite:///tmp/x.db'], { WEFT_SHUFFLE_SECRET: SECRET });
    assert.equal(both.code, 2);
    assert.match(both.stderr, /--meta cannot be combined with --shuffle-servers/);
    const noSecret = await weft(['run', 'examples/word-count.ts', '--shuffle-servers', pool.redisUrl], { WEFT_SHUFFLE_SECRET: '' });
    assert.equal(noSecret.code, 2, noSecret.stderr);
    assert.match(noSecret.stderr, /WEFT_SHUFFLE_SECRET|secret/i);
  });
});
