// `weft run --meta redis+sentinel://…`: partition metadata and the job event log in a Sentinel-managed Redis
// (a primary, a replica, three Sentinels). The primary is SIGKILLed mid-job; a Sentinel promotes the replica,
// the killed node comes back as its replica, and the job finishes (or, if it failed, the same command
// resumes it) with a clean run's bytes and a log that lost nothing. And a shuffle-server pool registered
// in the same Redis through `--redis redis+sentinel://…` serves a job run with `--shuffle-servers` on it.
import assert from 'node:assert/strict';
import { type ChildProcess, spawn } from 'node:child_process';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { createJobEventLog } from '@weft/job-store';
import { createTempDir, freePort, type RedisSentinelGroup, startRedisSentinelGroup, type TempDir } from '@weft/testkit';
import { finishedInLog, weft, type WeftOutcome } from './helpers/kill-and-resume.js';

const bin = fileURLToPath(new URL('../bin/weft.js', import.meta.url));
const terasort = fileURLToPath(new URL('../../../examples/terasort.ts', import.meta.url));

describe('weft run on a Sentinel-managed Redis', () => {
  let group: RedisSentinelGroup;
  let dir: TempDir;
  before(async () => {
    [group, dir] = await Promise.all([startRedisSentinelGroup({ replicas: 1, sentinels: 3 }), createTempDir('weft-sentinel-run-')]);
  });
  after(async () => {
    await Promise.allSettled([group?.close(), dir?.remove()]);
  });

  it('finishes a terasort whose Redis primary is SIGKILLed mid-job: clean bytes, every logged event kept, every task finished once in the log', async (t) => {
    const records = ['--records', '300000'];
    const common = ['--parallelism', '2', '--workers', '2', '--json'];
    const clean = await weft(bin, ['run', terasort, ...common, '--meta', `sqlite://${join(dir.path, 'clean.db')}`, '--store', pathToFileURL(join(dir.path, 'clean-store')).href, '--', ...records, '--output', join(dir.path, 'clean.txt')], dir.path);
    assert.equal(clean.code, 0, clean.stderr);

    const jobId = 'ts-sentinel';
    const args = ['run', terasort, '--job-id', jobId, ...common, '--meta', group.url, '--store', pathToFileURL(join(dir.path, 'store')).href, '--', ...records, '--output', join(dir.path, 'out.txt')];
    await using log = await createJobEventLog(group.url, { retryTimeoutMs: 60_000 });
    const child = spawn(process.execPath, [bin, ...args], { cwd: dir.path, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    const ended = new Promise<WeftOutcome>((resolve) => child.once('exit', (code) => resolve({ code, stdout, stderr })));
    let done = false;
    void ended.then(() => (done = true));
    while ((await finishedInLog(log, jobId).catch(() => new Set<string>())).size < 1) {
      assert.ok(!done, `the job ended before any task finished: nothing to fail over mid-job\n${stderr}`);
      await new Promise((r) => setTimeout(r, 20));
    }
    assert.ok(!done, 'the job ended before the primary could be killed');
    const old = await group.primary();
    await old.kill();
    await group.waitForFailover(old);
    await old.start(); // the Sentinels turn it into a replica of the promoted one
    await group.waitForReplicas(1);
    let outcome = await ended;
    let resumed = false;
    if (outcome.code !== 0) {
      resumed = true; // allowed: the same command resumes the run from its log
      outcome = await weft(bin, args, dir.path);
    }
    t.diagnostic(resumed ? 'the run failed across the failover; the same command resumed it' : 'the run rode over the failover');
    assert.equal(outcome.code, 0, `${resumed ? 'the resumed run' : 'the run'} failed:\n${outcome.stderr}`);
    assert.ok((await readFile(join(dir.path, 'out.txt'))).equals(await readFile(join(dir.path, 'clean.txt'))), 'the output equals a clean run’s, byte for byte');

    const events = await log.readRun(jobId);
    const seqs = events.map((e) => e.seq);
    assert.deepEqual(seqs, seqs.map((_, i) => i + 1), 'the log lost or repeated an event');
    assert.equal(events.at(-1)?.type, 'job-finished');
    const submitted = events.find((e) => e.type === 'job-submitted')?.data as { tasksTotal: number };
    assert.equal((await finishedInLog(log, jobId)).size, submitted.tasksTotal, 'every task is logged finished');
  });

  it('runs a word count on shuffle servers that register and commit in the Sentinel-managed Redis (--redis and --shuffle-servers redis+sentinel://)', async () => {
    const secret = 'sentinel-shuffle-servers-secret-0123456789';
    const env = { ...process.env, WEFT_SHUFFLE_SECRET: secret };
    const servers: ChildProcess[] = [];
    try {
      for (const index of [0, 1]) {
        const port = await freePort();
        const child = spawn(process.execPath, [bin, 'shuffle-server', '--port', String(port), '--dir', join(dir.path, `server-${index}`), '--redis', group.url, '--heartbeat-ms', '200'], { env, stdio: ['ignore', 'pipe', 'pipe'] });
        servers.push(child);
        let output = '';
        await new Promise<void>((resolve, reject) => {
          const onData = (d: Buffer): void => {
            output += d.toString();
            if (output.includes('listening on')) resolve();
          };
          child.stdout?.on('data', onData);
          child.stderr?.on('data', onData);
          child.once('exit', (code) => reject(new Error(`shuffle server exited ${code}:\n${output}`)));
        });
      }
      const lines = Array.from({ length: 5_000 }, (_, i) => `w${i % 97} x${(i * 7) % 31}`);
      const input = join(dir.path, 'words.txt');
      await writeFile(input, `${lines.join('\n')}\n`);
      const output = join(dir.path, 'counts.tsv');
      const run = await weft(bin, ['run', 'examples/word-count.ts', '--parallelism', '2', '--workers', '2', '--shuffle-servers', group.url, '--', '--input', input, '--output', output], fileURLToPath(new URL('../../..', import.meta.url)), env);
      assert.equal(run.code, 0, run.stderr);
      const expected = new Map<string, number>();
      for (const word of lines.join(' ').split(/\s+/)) if (word !== '') expected.set(word, (expected.get(word) ?? 0) + 1);
      const got = new Map((await readFile(output, 'utf8')).split('\n').filter((l) => l !== '').map((l) => [l.split('\t')[0]!, Number(l.split('\t')[1])] as const));
      assert.deepEqual(new Map([...got].sort()), new Map([...expected].sort()));
    } finally {
      for (const child of servers) child.kill('SIGTERM');
      await Promise.all(servers.map((child) => (child.exitCode !== null || child.signalCode !== null ? undefined : new Promise((r) => child.once('exit', r)))));
    }
  });
});
