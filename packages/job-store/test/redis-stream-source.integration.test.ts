// ctx.readRedisStream against a real redis-server, in process over the in-memory pipelined shuffle, with
// checkpoints: entries XADDed while the job runs all arrive, one consumer per subtask, every entry
// acknowledged once the final checkpoint completed (nothing left in XPENDING); a source that throws is
// restarted from the latest completed checkpoint and re-reads exactly the entries no completed checkpoint
// acknowledged (at-least-once: duplicates only after that checkpoint, none lost); a restore with fewer
// subtasks claims the pending entries of the consumers that are gone; a surplus end marker is acknowledged
// only once it is back in the stream (a failure before that leaves it to the restore); an unreachable
// Redis, or no connector for the URL, fails the source with WEFT_ERR_SOURCE_UNAVAILABLE.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { Redis } from 'ioredis';
import {
  type CheckpointingOptions,
  defineJob,
  type FaultInjectorFactory,
  InMemoryCheckpointStorage,
  InMemoryCheckpointStore,
  isEngineError,
  type JobResult,
  runJob,
  type StreamConnector,
  type StreamReader,
  type StreamReaderRequest,
} from '@weft/engine';
import { RedisStreamConnector } from '@weft/job-store';
import { createMemoryShuffleServiceFactory } from '@weft/shuffle-memory';
import { freePort, type RedisServer, startRedis } from '@weft/testkit';

/** What the job saw: the ids each source attempt emitted, in order (`<subtask>@<attempt>`). */
type Seen = Map<string, string[]>;

const total = (seen: Seen): number => [...seen.values()].reduce((n, ids) => n + ids.length, 0);

function streamCountJob(url: string, stream: string, seen: Seen) {
  return defineJob((ctx) => {
    ctx
      .readRedisStream(url, stream, { endField: 'end', blockMs: 50, batchSize: 40 })
      .map((entry, context) => {
        const key = `${context.subtask}@${context.attempt}`;
        seen.set(key, [...(seen.get(key) ?? []), entry.id]);
        return entry.fields['n'] as string;
      })
      .keyBy((n) => n)
      .count()
      .collect('counts');
  }, { name: 'redis-stream-count' });
}

function run(request: { url: string; stream: string; seen: Seen; parallelism: number; checkpointing: CheckpointingOptions; faults?: FaultInjectorFactory; restarts?: number; connectors?: StreamConnector[]; jobId?: string }): Promise<JobResult> {
  const memory = createMemoryShuffleServiceFactory({ buffersPerPartition: 8 });
  return runJob({
    job: streamCountJob(request.url, request.stream, request.seen),
    parallelism: request.parallelism,
    shuffle: { pipelined: memory, blocking: memory },
    checkpointing: request.checkpointing,
    streamConnectors: request.connectors ?? [new RedisStreamConnector()],
    restartStrategy: request.restarts === 0 ? { type: 'none' } : { type: 'fixed-delay', attempts: request.restarts ?? 2, delayMs: 0 },
    ...(request.jobId === undefined ? {} : { jobId: request.jobId }),
    ...(request.faults === undefined ? {} : { faults: request.faults }),
  });
}

function countsOf(result: JobResult): Map<string, number> {
  assert.equal(result.status, 'succeeded', result.error?.message);
  return new Map((result.collected['counts'] ?? []) as [string, number][]);
}

async function until(condition: () => boolean | Promise<boolean>): Promise<void> {
  while (!(await condition())) await new Promise((resolve) => setTimeout(resolve, 5));
}

/**
 * The real connector, whose readers' first `append` (a surplus end marker put back) waits until a
 * checkpoint acknowledged one of `markers` (the subtask's own), then fails: the task fails between reading
 * the markers and putting the surplus back. `failedAt`: which markers were acknowledged at that moment.
 */
class FailFirstAppend implements StreamConnector {
  readonly schemes = ['redis'];
  readonly #inner = new RedisStreamConnector();
  readonly #acked = new Set<string>();
  #appends = 0;
  failedAt: Set<string> | undefined;

  constructor(private readonly markers: () => readonly string[]) {}

  async open(request: StreamReaderRequest): Promise<StreamReader> {
    const reader = await this.#inner.open(request);
    return {
      readPending: (count) => reader.readPending(count),
      readNew: (count, blockMs) => reader.readNew(count, blockMs),
      claimFrom: (isOrphan) => reader.claimFrom(isOrphan),
      close: () => reader.close(),
      ack: async (ids) => {
        await reader.ack(ids);
        for (const id of ids) this.#acked.add(id);
      },
      append: async (fields) => {
        if (this.#appends++ > 0) return reader.append(fields);
        await until(() => this.markers().some((id) => this.#acked.has(id)));
        this.failedAt = new Set(this.markers().filter((id) => this.#acked.has(id)));
        throw new Error('injected: the task fails before the surplus marker is back in the stream');
      },
    };
  }
}

/** Broken code fails a test instead of hanging it (not a timing assertion: a healthy run takes a few seconds at most). */
const GUARD_MS = 60_000;

describe('ctx.readRedisStream', () => {
  let redis: RedisServer;
  let client: Redis;
  before(async () => {
    redis = await startRedis({ persistent: false });
    client = new Redis(redis.url);
  });
  after(async () => {
    client?.disconnect();
    await redis?.close();
  });

  const add = async (stream: string, from: number, to: number): Promise<void> => {
    const pipeline = client.pipeline();
    for (let n = from; n < to; n++) pipeline.xadd(stream, '*', 'n', String(n));
    await pipeline.exec();
  };
  const pendingCount = async (stream: string, group: string): Promise<number> => Number(((await client.xpending(stream, group)) as [number])[0]);

  it('reads entries added while it runs, one consumer per subtask, and leaves none pending after the final checkpoint', { timeout: GUARD_MS }, async () => {
    const stream = 'sources:while-running';
    await add(stream, 0, 300);
    const seen: Seen = new Map();
    const running = run({ url: redis.url, stream, seen, parallelism: 2, checkpointing: { intervalMs: 20, storage: new InMemoryCheckpointStorage() } });
    await until(() => total(seen) >= 300);
    await add(stream, 300, 600);
    // one end marker per subtask (a subtask handed both puts the second back)
    await client.xadd(stream, '*', 'end', '1');
    await client.xadd(stream, '*', 'end', '1');
    const counts = countsOf(await running);
    assert.deepEqual(counts, new Map(Array.from({ length: 600 }, (_, n) => [String(n), 1])));
    assert.equal(await pendingCount(stream, 'weft-readRedisStream'), 0);
    const consumers = ((await client.call('XINFO', 'CONSUMERS', stream, 'weft-readRedisStream')) as unknown[][]).map((c) => c[1]).sort();
    assert.deepEqual(consumers, ['readRedisStream-0', 'readRedisStream-1']);
  });

  it('after a task failure re-reads exactly the entries no completed checkpoint acknowledged: a superset, duplicates only after it', { timeout: GUARD_MS }, async () => {
    const stream = 'sources:failure';
    const group = 'weft-readRedisStream';
    await add(stream, 0, 200);
    const seen: Seen = new Map();
    const store = new InMemoryCheckpointStore();
    const faults: FaultInjectorFactory = () => ({
      taskFault: ({ executionVertexId, attempt }) => (executionVertexId === 'readRedisStream#0' && attempt === 0 ? { kind: 'throw', atRecord: 300 } : undefined),
    });
    const running = run({ url: redis.url, stream, seen, parallelism: 1, checkpointing: { intervalMs: 20, storage: new InMemoryCheckpointStorage(), store }, faults });
    await until(() => total(seen) >= 200);
    // a checkpoint completed after the first entries, and its acknowledgements reached Redis
    await until(async () => (await pendingCount(stream, group)) === 0);
    await add(stream, 200, 400);
    await client.xadd(stream, '*', 'end', '1');
    const result = await running;
    const counts = countsOf(result);
    assert.equal(result.failures, 1);
    for (let n = 0; n < 400; n++) assert.ok((counts.get(String(n)) ?? 0) >= 1, `entry ${n} lost`);
    const failed = seen.get('0@0') ?? [];
    const restored = new Set(seen.get('0@1') ?? []);
    assert.equal(failed.length, 300);
    // what the failed attempt read and the restored one did not is what completed checkpoints acknowledged: a prefix
    const firstReread = failed.findIndex((id) => restored.has(id));
    const acknowledged = firstReread === -1 ? failed.length : firstReread;
    assert.ok(acknowledged >= 200, `only ${acknowledged} entries acknowledged before the failure`);
    assert.deepEqual(failed.slice(acknowledged).filter((id) => !restored.has(id)), [], 'every entry after the last acknowledged checkpoint is read again');
    const duplicates = [...counts.values()].reduce((n, c) => n + c - 1, 0);
    assert.ok(duplicates <= failed.length - acknowledged, `${duplicates} duplicates, more than the ${failed.length - acknowledged} entries read again`);
    assert.equal(await pendingCount(stream, group), 0);
  });

  it('a restore with fewer subtasks claims the pending entries of the consumers that are gone', { timeout: GUARD_MS }, async () => {
    const stream = 'sources:rescale';
    const group = 'weft-readRedisStream';
    await add(stream, 0, 1000);
    const store = new InMemoryCheckpointStore();
    const storage = new InMemoryCheckpointStorage();
    const faults: FaultInjectorFactory = () => ({
      taskFault: ({ executionVertexId, attempt }) => (executionVertexId === 'readRedisStream#0' && attempt === 0 ? { kind: 'throw', atRecord: 150 } : undefined),
    });
    const first = await run({ jobId: 'rescale', url: redis.url, stream, seen: new Map(), parallelism: 2, checkpointing: { intervalMs: 20, storage, store }, faults, restarts: 0 });
    assert.equal(first.status, 'failed');
    const stranded = ((await client.xpending(stream, group)) as [number, string, string, [string, string][]])[3] ?? [];
    assert.ok(stranded.some(([consumer]) => consumer === 'readRedisStream-1'), `pending: ${JSON.stringify(stranded)}`);
    await client.xadd(stream, '*', 'end', '1');
    const seen: Seen = new Map();
    const second = await run({ jobId: 'rescale', url: redis.url, stream, seen, parallelism: 1, checkpointing: { intervalMs: 20, storage, store, ...((await store.completed()).length > 0 ? { restoreFrom: 'latest' as const } : {}) } });
    const counts = countsOf(second);
    for (let n = 0; n < 1000; n++) assert.ok((counts.get(String(n)) ?? 0) >= 1, `entry ${n} lost`);
    assert.equal(await pendingCount(stream, group), 0);
    const consumers = ((await client.call('XINFO', 'CONSUMERS', stream, group)) as unknown[][]).map((c) => c[1]);
    assert.deepEqual(consumers, ['readRedisStream-0']);
  });

  // Before, the generator finished at once and no checkpoint could be taken after it: the stream's
  // subtask gave up on the final checkpoint and left its entries pending. A source at its end now waits for
  // the final checkpoint, so it is taken once both ended, and everything is acknowledged.
  it('beside a generator that finished first, the final checkpoint is taken and nothing is left pending', { timeout: GUARD_MS }, async () => {
    const stream = 'sources:mixed';
    await add(stream, 0, 50);
    const seen: Seen = new Map();
    const job = defineJob((ctx) => {
      // the generator has its 5 values at once; it waits (a running task) for the final checkpoint
      const generated = ctx.generate((seq) => `g${seq}`, { count: 5, splits: 1, parallelism: 1 });
      const entries = ctx.readRedisStream(redis.url, stream, { endField: 'end', blockMs: 50, parallelism: 1 }).map((entry, context) => {
        const key = `${context.subtask}@${context.attempt}`;
        seen.set(key, [...(seen.get(key) ?? []), entry.id]);
        return entry.fields['n'] as string;
      });
      generated.union(entries).keyBy((v) => v).count().collect('counts');
    }, { name: 'mixed-sources' });
    const memory = createMemoryShuffleServiceFactory({ buffersPerPartition: 8 });
    const running = runJob({ job, parallelism: 1, shuffle: { pipelined: memory, blocking: memory }, checkpointing: { intervalMs: 20, storage: new InMemoryCheckpointStorage() }, streamConnectors: [new RedisStreamConnector()], restartStrategy: { type: 'none' } });
    await until(() => total(seen) >= 50);
    await client.xadd(stream, '*', 'end', '1');
    const counts = countsOf(await running);
    assert.equal(counts.size, 55);
    assert.equal(await pendingCount(stream, 'weft-readRedisStream'), 0, 'the final checkpoint acknowledged every entry');
  });

  // A subtask that read its end marker before a completed checkpoint (which acknowledged the marker) stays
  // ended when a failure restores that checkpoint: it does not wait for a marker again. Before, the restored
  // subtask took the other's marker and that one waited forever (found by review).
  it('a subtask that had ended before the restored checkpoint finishes again without a marker; the other reads on', { timeout: GUARD_MS }, async () => {
    const stream = 'sources:ended-then-failed';
    const group = 'weft-readRedisStream';
    await add(stream, 0, 200);
    const seen: Seen = new Map();
    let thrown = false;
    const job = defineJob((ctx) => {
      ctx
        .readRedisStream(redis.url, stream, { endField: 'end', blockMs: 50, batchSize: 40 })
        .map((entry, context) => {
          const key = `${context.subtask}@${context.attempt}`;
          seen.set(key, [...(seen.get(key) ?? []), entry.id]);
          // once, after one subtask ended and a checkpoint acknowledged its marker
          if (entry.fields['boom'] !== undefined && !thrown) {
            thrown = true;
            throw new Error('boom');
          }
          return entry.fields['n'] ?? 'boom';
        })
        .keyBy((n) => n)
        .count()
        .collect('counts');
    }, { name: 'ended-then-failed' });
    const memory = createMemoryShuffleServiceFactory({ buffersPerPartition: 8 });
    const running = runJob({ job, parallelism: 2, shuffle: { pipelined: memory, blocking: memory }, checkpointing: { intervalMs: 20, storage: new InMemoryCheckpointStorage() }, streamConnectors: [new RedisStreamConnector()], restartStrategy: { type: 'fixed-delay', attempts: 1, delayMs: 0 } });
    await until(() => total(seen) >= 200);
    await client.xadd(stream, '*', 'end', '1'); // one marker: one subtask ends
    await until(async () => (await pendingCount(stream, group)) === 0); // a checkpoint after it completed and acknowledged it
    await add(stream, 200, 300);
    await client.xadd(stream, '*', 'boom', '1');
    await until(() => thrown);
    await add(stream, 300, 400);
    await client.xadd(stream, '*', 'end', '1'); // the second marker: only the subtask that had not ended needs it
    const result = await running;
    const counts = countsOf(result);
    assert.equal(result.failures, 1);
    for (let n = 0; n < 400; n++) assert.ok((counts.get(String(n)) ?? 0) >= 1, `entry ${n} lost`);
    assert.equal(await pendingCount(stream, group), 0);
  });

  // A subtask whose read brought both end markers puts the second back for the other subtask. Before, a
  // checkpoint completing between that read and the append acknowledged the surplus marker too; a failure
  // then lost it: restored as ended, the subtask did not put it back, and the other waited forever.
  it('a surplus end marker is acknowledged only once it is back in the stream: a failure before that leaves it to the restore', { timeout: GUARD_MS }, async () => {
    const stream = 'sources:surplus-then-failed';
    const group = 'weft-readRedisStream';
    await add(stream, 0, 100);
    const seen: Seen = new Map();
    let markers: string[] = [];
    const connector = new FailFirstAppend(() => markers);
    const abort = new AbortController();
    const job = streamCountJob(redis.url, stream, seen);
    const memory = createMemoryShuffleServiceFactory({ buffersPerPartition: 8 });
    const running = runJob({ job, parallelism: 2, shuffle: { pipelined: memory, blocking: memory }, checkpointing: { intervalMs: 20, storage: new InMemoryCheckpointStorage() }, streamConnectors: [connector], restartStrategy: { type: 'fixed-delay', attempts: 1, delayMs: 0 }, signal: abort.signal });
    await until(() => total(seen) >= 100);
    // both markers at once: the one read that brings them gives both to one subtask
    const added = (await client.multi().xadd(stream, '*', 'end', '1').xadd(stream, '*', 'end', '1').exec()) ?? [];
    markers = added.map(([, id]) => id as string);
    await until(() => connector.failedAt !== undefined);
    if (connector.failedAt!.size === 2) {
      abort.abort(new Error('test over'));
      await running;
      assert.fail('a checkpoint acknowledged the surplus marker before it was appended again');
    }
    const result = await running;
    const counts = countsOf(result);
    assert.equal(result.failures, 1);
    for (let n = 0; n < 100; n++) assert.ok((counts.get(String(n)) ?? 0) >= 1, `entry ${n} lost`);
    assert.equal(await pendingCount(stream, group), 0);
    const ends = ((await client.xrange(stream, '-', '+')) as [string, string[]][]).filter(([, fields]) => fields[0] === 'end');
    assert.equal(ends.length, 3, 'the two markers and the surplus one put back once, by the restored subtask');
  });

  it('fails the source with WEFT_ERR_SOURCE_UNAVAILABLE when Redis cannot be reached, or no connector serves the URL', { timeout: GUARD_MS }, async () => {
    const url = `redis://127.0.0.1:${await freePort()}/0`;
    const unreachable = await run({ url, stream: 's', seen: new Map(), parallelism: 1, checkpointing: { intervalMs: 20, storage: new InMemoryCheckpointStorage() }, restarts: 0, connectors: [new RedisStreamConnector({ connectTimeoutMs: 300 })] });
    assert.equal(unreachable.status, 'failed');
    const cause = unreachable.error?.cause;
    assert.ok(isEngineError(cause, 'WEFT_ERR_SOURCE_UNAVAILABLE'), String(cause));
    assert.match((cause as Error).message, new RegExp(`operator "readRedisStream" cannot read stream "s" at redis://127\\.0\\.0\\.1:\\d+/0: cannot reach Redis`));
    const none = await run({ url: redis.url, stream: 's', seen: new Map(), parallelism: 1, checkpointing: { intervalMs: 20, storage: new InMemoryCheckpointStorage() }, restarts: 0, connectors: [] });
    assert.ok(isEngineError(none.error?.cause, 'WEFT_ERR_SOURCE_UNAVAILABLE'), String(none.error?.cause));
    assert.match((none.error?.cause as Error).message, /no stream connector serves this URL/);
  });
});
