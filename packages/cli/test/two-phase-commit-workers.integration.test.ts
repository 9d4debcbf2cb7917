// Two-phase-commit sinks on two real worker processes (`weft run --workers 2 --checkpoint-interval`): each
// worker's sink subtasks pre-commit on the checkpoint barrier and commit when the job master tells them the
// checkpoint completed (over IPC); the job master commits the last transactions at the job's end. The
// worker running lines#1 is SIGKILLed mid-run (--inject-faults kill-worker): the restored attempts commit
// again what the restored checkpoint pre-committed and abort what it recorded open. What is committed —
// the part files of fileCommitSink({ dir }) (a local dir), the entries of redisStreamSink (a real
// redis-server) — equals the naive expected lines, each exactly once.
import assert from 'node:assert/strict';
import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { runCli } from '@weft/cli';
import { noopLogger } from '@weft/shuffle-api';
import { connectRedis } from '@weft/shuffle-remote/redis';
import { type RedisServer, startRedis } from '@weft/testkit';
import { lineOf } from './fixtures/two-phase-commit-workers-job.js';

const job = fileURLToPath(new URL('./fixtures/two-phase-commit-workers-job.ts', import.meta.url));
/** 12 000 lines at 8 000 a second over both subtasks: lines#1 reaches its fault (record 2 500) about 0.6 s in, after checkpoints every 100 ms. */
const COUNT = 12_000;
const ARGS = ['--count', String(COUNT), '--rate', '8000'];
const EXPECTED = Array.from({ length: COUNT }, (_, seq) => lineOf(seq).toUpperCase()).sort();

interface Summary {
  status: string;
  executorsLost: { taskExecutorId: string }[];
  checkpoints: { completed: number; tasksRestored: number };
}

/** Broken code fails a test instead of hanging it (not a timing assertion: a healthy run takes seconds). */
const GUARD_MS = 120_000;

describe('weft run --workers 2: two-phase-commit sinks on worker processes, a worker SIGKILLed', () => {
  let dir = '';
  let stores: string[] = [];
  let server: RedisServer;
  let redis: Awaited<ReturnType<typeof connectRedis>>;
  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'weft-2pc-workers-'));
    stores = ['--store', pathToFileURL(join(dir, 'store')).href, '--meta', `sqlite://${join(dir, 'meta.db')}`];
    server = await startRedis({ persistent: false });
    redis = await connectRedis({ url: server.url, connectTimeoutMs: 5000, commandTimeoutMs: 5000, setting: 'test', logger: noopLogger });
  });
  after(async () => {
    await redis?.quit();
    await server?.close();
    await rm(dir, { recursive: true, force: true });
  });

  /** At most 3 restarts, so a sink that cannot work fails the run rather than restarting until the guard. */
  async function weft(jobArgs: string[]): Promise<{ code: number; summary: Summary | undefined; stderr: string }> {
    let stdout = '';
    let stderr = '';
    const args = ['run', job, ...stores, '--workers', '2', '--parallelism', '2', '--checkpoint-interval', '100ms', '--restart-attempts', '3', '--restart-delay', '100', '--json', '--inject-faults', 'kill-worker:lines#1@2500', '--', ...ARGS, ...jobArgs];
    const code = await runCli(args, { stdout: { write: (t: string) => ((stdout += t), true) }, stderr: { write: (t: string) => ((stderr += t), true) }, cwd: dir, env: {} });
    return { code, summary: stdout === '' ? undefined : (JSON.parse(stdout) as Summary), stderr };
  }

  function assertRestored(result: { code: number; summary: Summary | undefined; stderr: string }): void {
    assert.equal(result.code, 0, result.stderr);
    assert.ok(result.summary !== undefined);
    assert.equal(result.summary.executorsLost.length, 1, 'the worker running lines#1 was killed');
    assert.ok(result.summary.checkpoints.completed > 0 && result.summary.checkpoints.tasksRestored > 0, `checkpoints: ${JSON.stringify(result.summary.checkpoints)}`);
  }

  it('fileCommitSink({ dir }): the committed part files hold each expected line exactly once, nothing left in progress', { timeout: GUARD_MS }, async () => {
    const out = join(dir, 'out');
    assertRestored(await weft(['--sink', 'file', '--dir', out]));
    const names = (await readdir(out)).filter((n) => !n.startsWith('.'));
    assert.ok(names.length > 2, `parts committed at checkpoints, not only at the end: ${names.length}`);
    const lines: string[] = [];
    for (const name of names) lines.push(...(await readFile(join(out, name), 'utf8')).split('\n').filter((l) => l !== ''));
    assert.deepEqual(lines.sort(), EXPECTED);
    assert.deepEqual(await readdir(join(out, '.in-progress')).catch(() => []), [], 'no transaction left in progress');
  });

  it('redisStreamSink: the stream holds each expected line exactly once, nothing staged at the end', { timeout: GUARD_MS }, async () => {
    const stream = 'workers:lines';
    assertRestored(await weft(['--sink', 'redis', '--url', server.url, '--stream', stream]));
    const entries = (await redis.xrange(stream, '-', '+')).map(([, fields]) => fields[1] as string);
    assert.deepEqual(entries.sort(), EXPECTED);
    assert.deepEqual(await redis.keys(`${stream}:weft-2pc:txn:*`), [], 'no transaction left staged');
  });
});
