// ctx.readRedisStream on two real worker processes (`weft run --workers 2 --checkpoint-interval`) against a
// real redis-server: each worker rebuilds the Redis stream connector from its reference
// (StreamConnector.reference) and its source subtask reads as its own consumer of the group. The entries
// are XADDed here while the job runs (the independent count: n = 0 … N-1, one entry each); a fault-free
// run counts each exactly once, a run whose source's worker is SIGKILLed mid-run (--inject-faults
// kill-worker) counts each at least once (at-least-once: acknowledged on checkpoint) — and XPENDING is
// empty at the end of both. A connector without a reference is refused on workers before the job runs.
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { runCli } from '@weft/cli';
import { isEngineError, runJob, type StreamConnector } from '@weft/engine';
import { RedisStreamConnector } from '@weft/job-store';
import { noopLogger } from '@weft/shuffle-api';
import { createMemoryShuffleServiceFactory } from '@weft/shuffle-memory';
import { connectRedis } from '@weft/shuffle-remote/redis';
import { type RedisServer, startRedis } from '@weft/testkit';

const job = fileURLToPath(new URL('./fixtures/redis-stream-count-job.ts', import.meta.url));
const GROUP = 'weft-events';
/** Entries written per run, 400 every 50 ms once the sources opened the group: about 1.5 s of input. */
const ENTRIES = 12_000;

interface Summary {
  status: string;
  failures: number;
  executorsLost: { taskExecutorId: string }[];
  checkpoints: { mode: string; completed: number; tasksRestored: number };
  collected: { counts?: [string, number][] };
}

/** Broken code fails a test instead of hanging it (not a timing assertion: a healthy run takes seconds). */
const GUARD_MS = 120_000;

describe('weft run --workers 2: a Redis Stream source on worker processes', () => {
  let dir = '';
  let stores: string[] = [];
  let redis: RedisServer;
  let client: Awaited<ReturnType<typeof connectRedis>>;
  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'weft-redis-stream-workers-'));
    stores = ['--store', pathToFileURL(join(dir, 'store')).href, '--meta', `sqlite://${join(dir, 'meta.db')}`];
    redis = await startRedis({ persistent: false });
    client = await connectRedis({ url: redis.url, connectTimeoutMs: 5000, commandTimeoutMs: 5000, setting: 'test', logger: noopLogger });
  });
  after(async () => {
    await client?.quit();
    await redis?.close();
    await rm(dir, { recursive: true, force: true });
  });

  const groupExists = async (stream: string): Promise<boolean> => {
    try {
      return ((await client.call('XINFO', 'GROUPS', stream)) as unknown[]).length > 0;
    } catch {
      return false;
    }
  };
  const pending = async (stream: string): Promise<number> => Number(((await client.xpending(stream, GROUP)) as [number])[0]);

  /** Writes n = 0 … ENTRIES-1 once the sources created their group, then one end marker per subtask. */
  async function feed(stream: string, running: Promise<unknown>): Promise<void> {
    let done = false;
    void running.finally(() => (done = true));
    while (!(await groupExists(stream))) {
      if (done) return;
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    for (let from = 0; from < ENTRIES; from += 400) {
      const pipeline = client.pipeline();
      for (let n = from; n < Math.min(ENTRIES, from + 400); n++) pipeline.xadd(stream, '*', 'n', String(n));
      await pipeline.exec();
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    await client.xadd(stream, '*', 'end', '1');
    await client.xadd(stream, '*', 'end', '1');
  }

  /** A run restarts at most 3 times, so a source that cannot work fails it rather than restarting until the test's guard. */
  async function weft(stream: string, args: string[]): Promise<{ code: number; summary: Summary | undefined; stderr: string }> {
    let stdout = '';
    let stderr = '';
    const running = runCli(['run', job, ...stores, '--workers', '2', '--parallelism', '2', '--checkpoint-interval', '100ms', '--restart-attempts', '3', '--restart-delay', '100', '--json', ...args, '--', '--url', redis.url, '--stream', stream], {
      stdout: { write: (t: string) => ((stdout += t), true) },
      stderr: { write: (t: string) => ((stderr += t), true) },
      cwd: dir,
      env: {},
    });
    await feed(stream, running);
    const code = await running;
    return { code, summary: stdout === '' ? undefined : (JSON.parse(stdout) as Summary), stderr };
  }

  /** The collected counts: keys 0 … ENTRIES-1 only, each once. */
  function countsOf(summary: Summary): Map<number, number> {
    const counts = new Map<number, number>();
    for (const [key, count] of summary.collected.counts ?? []) {
      const n = Number(key);
      assert.ok(Number.isInteger(n) && n >= 0 && n < ENTRIES && String(n) === key, `a key no entry has: ${JSON.stringify(key)}`);
      assert.equal(counts.has(n), false, `${key} collected twice`);
      counts.set(n, count);
    }
    return counts;
  }

  it('counts every entry exactly once on two workers without faults, one consumer per subtask, none pending at the end', { timeout: GUARD_MS }, async () => {
    const stream = 'workers:clean';
    const { code, summary, stderr } = await weft(stream, []);
    assert.equal(code, 0, stderr);
    assert.ok(summary !== undefined);
    assert.equal(summary.executorsLost.length, 0);
    assert.ok(summary.checkpoints.completed > 0, `checkpoints: ${JSON.stringify(summary.checkpoints)}`);
    assert.deepEqual(countsOf(summary), new Map(Array.from({ length: ENTRIES }, (_, n) => [n, 1])));
    assert.equal(await pending(stream), 0);
    const consumers = ((await client.call('XINFO', 'CONSUMERS', stream, GROUP)) as unknown[][]).map((c) => c[1]).sort();
    assert.deepEqual(consumers, ['events-0', 'events-1']);
  });

  it('a source worker SIGKILLed mid-run: restarted from the latest checkpoint, every entry counted at least once, none pending at the end', { timeout: GUARD_MS }, async () => {
    const stream = 'workers:killed';
    const { code, summary, stderr } = await weft(stream, ['--inject-faults', 'kill-worker:events#1@2500']);
    assert.equal(code, 0, stderr);
    assert.ok(summary !== undefined);
    assert.equal(summary.executorsLost.length, 1, 'the worker running events#1 was killed');
    assert.ok(summary.checkpoints.completed > 0 && summary.checkpoints.tasksRestored > 0, `checkpoints: ${JSON.stringify(summary.checkpoints)}`);
    const counts = countsOf(summary);
    const missing = Array.from({ length: ENTRIES }, (_, n) => n).filter((n) => (counts.get(n) ?? 0) < 1);
    assert.deepEqual(missing, [], 'entries lost');
    assert.equal(await pending(stream), 0);
  });

  it('refuses on workers, before the job runs, a stream source whose connector has no reference', async () => {
    const unrebuildable: StreamConnector = { schemes: ['redis'], open: (request) => new RedisStreamConnector().open(request) };
    const memory = createMemoryShuffleServiceFactory();
    await assert.rejects(
      runJob({ job, args: ['--url', redis.url, '--stream', 'workers:refused'], executor: 'workers', workers: 2, shuffle: { pipelined: memory, blocking: memory }, streamConnectors: [unrebuildable] }),
      (error: unknown) => isEngineError(error, 'WEFT_ERR_INVALID_ARGUMENT') && error.context['field'] === 'streamConnectors[0]' && /source "events" \(ctx\.readRedisStream\) reads through a stream connector without a reference/.test(error.message),
    );
    assert.equal(await groupExists('workers:refused'), false, 'nothing ran');
  });
});
