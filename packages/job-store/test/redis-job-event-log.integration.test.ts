import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { Redis } from 'ioredis';
import { RedisJobEventLog } from '@weft/job-store';
import { type RedisServer, startRedis } from '@weft/testkit';
import { DELETE_RUN_SCRIPT, OPEN_SCRIPT } from '../src/redis-scripts.js';
import { describeJobEventLogContract } from './support/job-event-log-contract.js';

let server: RedisServer | undefined;
let raw: Redis | undefined;
let prefix = '';

const eventsKey = (jobId: string): string => `${prefix}{${jobId}}:events`;

describeJobEventLogContract('RedisJobEventLog', {
  async setUp() {
    server = await startRedis();
    raw = new Redis(server.url);
    raw.on('error', () => {}); // reconnects while the contract takes the server away
  },
  async tearDown() {
    raw?.disconnect();
    await server?.close();
  },
  url: () => (server as RedisServer).url,
  create: async (options) => {
    prefix = options.keyPrefix ?? '';
    return RedisJobEventLog.connect({ url: (server as RedisServer).url }, options);
  },
  async appendTorn(jobId) {
    // a write cut short: the data field holds half of its JSON
    await (raw as Redis).xadd(eventsKey(jobId), '*', 'v', '1', 'seq', '99', 'epoch', '1', 'at', '1', 'type', 'task-finished', 'data', '{"executionVer');
  },
  async appendRaw(jobId, e) {
    await (raw as Redis).xadd(eventsKey(jobId), '*', 'v', String(e.v), 'seq', String(e.seq), 'epoch', String(e.epoch), 'at', String(e.atMs), 'type', e.type, 'data', JSON.stringify(e.data));
  },
  disrupt: () => (server as RedisServer).stop(),
  restore: () => (server as RedisServer).start(),
  async breakWrites() {
    // a full Redis: every write is refused with OOM (not transient) until memory is given back
    await (raw as Redis).config('SET', 'maxmemory-policy', 'noeviction');
    await (raw as Redis).config('SET', 'maxmemory', '1');
  },
  async unbreakWrites() {
    await (raw as Redis).config('SET', 'maxmemory', '0');
  },
});

describe('RedisJobEventLog', () => {
  let redis: RedisServer;
  before(async () => {
    redis = await startRedis();
  });
  after(() => redis.close());

  it('leaves no socket or timer behind once closed, after a reconnect too', async () => {
    const count = (): Record<string, number> => {
      const counts: Record<string, number> = {};
      for (const kind of process.getActiveResourcesInfo()) counts[kind] = (counts[kind] ?? 0) + 1;
      return counts;
    };
    await new Promise((resolve) => setImmediate(resolve));
    const before = count();
    const store = await RedisJobEventLog.connect({ url: redis.url }, { keyPrefix: 'leaks:' });
    const log = await store.open({ jobId: 'j', owner: 'test' });
    await log.append({ type: 'job-submitted', data: {} });
    await redis.restart();
    await log.append({ type: 'task-finished', data: {} });
    await store.close();
    await new Promise((resolve) => setTimeout(resolve, 50));
    const leftover = count();
    assert.equal(leftover['TCPSocketWrap'] ?? 0, before['TCPSocketWrap'] ?? 0, JSON.stringify({ before, leftover }));
    assert.equal(leftover['Timeout'] ?? 0, before['Timeout'] ?? 0, JSON.stringify({ before, leftover }));
  });

  it('keeps a published progress snapshot for progressTtlMs only (a dead job master\'s counters vanish), each publish renewing it', async () => {
    await using store = await RedisJobEventLog.connect({ url: redis.url }, { keyPrefix: 'progress-ttl:', progressTtlMs: 60_000 });
    const log = await store.open({ jobId: 'j', owner: 'test' });
    const progress = { elapsedMs: 1, tasksFinished: 0, tasksTotal: 1, tasksRunning: 1, regionsFinished: 0, regionsTotal: 1, recordsRead: 0, recordsShuffled: 0, bytesShuffled: 0, failures: 0 };
    const publish = log.publishProgress?.bind(log);
    assert.ok(publish !== undefined, 'a Redis log publishes progress');
    await publish(progress);
    const admin = new Redis(redis.url);
    try {
      const ttl = await admin.pttl('progress-ttl:{j}:progress');
      assert.ok(ttl > 50_000 && ttl <= 60_000, `the key expires after progressTtlMs (pttl ${ttl})`);
      await admin.pexpire('progress-ttl:{j}:progress', 1);
      while ((await admin.exists('progress-ttl:{j}:progress')) === 1) await new Promise((r) => setTimeout(r, 5));
      assert.equal(await store.readProgress('j'), undefined, 'expired: no live counters');
      await publish(progress);
      assert.deepEqual((await store.readProgress('j'))?.progress, progress);
    } finally {
      admin.disconnect();
    }
  });

  it('writes an append once when its reply was lost and a retry finds it stored (Redis paused past the command timeout)', async () => {
    await using store = await RedisJobEventLog.connect({ url: redis.url }, { keyPrefix: 'lost-reply:', commandTimeoutMs: 100, retryTimeoutMs: 10_000 });
    const log = await store.open({ jobId: 'j', owner: 'test' });
    await log.append({ type: 'job-submitted', data: {} });
    const admin = new Redis(redis.url);
    try {
      // write commands (scripts included) wait while the pause lasts; the log's tries time out and repeat,
      // and all of them run once it ends: the first stores the event, the later ones find it stored
      await admin.call('CLIENT', 'PAUSE', '700', 'WRITE');
      const event = await log.append({ type: 'task-finished', data: { executionVertexId: 'a#0' } });
      assert.equal(event.seq, 2);
    } finally {
      admin.disconnect();
    }
    assert.deepEqual((await store.readRun('j')).map((e) => [e.seq, e.type]), [[1, 'job-submitted'], [2, 'task-finished']]);
    assert.equal((await log.append({ type: 'job-finished', data: {} })).seq, 3);
  });

  it('takes one epoch for an open whose reply was lost, conditional or not, and deletes a run once: the retries find their own try done (Redis paused past the command timeout)', async () => {
    await using store = await RedisJobEventLog.connect({ url: redis.url }, { keyPrefix: 'lost-open:', commandTimeoutMs: 100, retryTimeoutMs: 10_000 });
    const admin = new Redis(redis.url);
    const paused = async <T>(work: () => Promise<T>): Promise<T> => {
      await admin.call('CLIENT', 'PAUSE', '700', 'WRITE');
      return work();
    };
    try {
      const first = await store.open({ jobId: 'j', owner: 'master-1' });
      assert.equal(first.epoch, 1);
      const unconditional = await paused(() => store.open({ jobId: 'j', owner: 'master-2' }));
      assert.equal(unconditional.epoch, 2, 'one epoch taken, however many tries ran');
      assert.equal(await admin.get('lost-open:{j}:epoch'), '2');
      // a conditional open (weft gc's lease) whose first try went through is not "moved" by itself
      const lease = await paused(() => store.open({ jobId: 'j', owner: 'gc', ifEpoch: 2 }));
      assert.equal(lease.epoch, 3);
      assert.equal(await admin.get('lost-open:{j}:epoch'), '3');
      await paused(() => store.deleteRun('j', { ifEpoch: 3 })); console.log('EPOCH', await admin.get('lost-open:{j}:epoch'), await admin.get('lost-open:{j}:last-op'));
      assert.equal(await store.readRunRecord('j'), undefined, 'the run is gone');
      assert.equal(await admin.get('lost-open:{j}:epoch'), '4', 'deleted once: the counter one up');
      // another caller's conditional open at a stale epoch is still refused
      await assert.rejects(store.open({ jobId: 'j', owner: 'late', ifEpoch: 3 }), (error: { code?: string }) => error.code === 'WEFT_ERR_FENCED');
    } finally {
      admin.disconnect();
    }
  });

  it('a second try of an open or a delete with the same token (its first reply lost) returns what the first did and changes nothing; another token is refused', async () => {
    const admin = new Redis(redis.url);
    try {
      const k = (name: string): string => `retried:{j}:${name}`;
      const open = (token: string, ifEpoch: number | '') => OPEN_SCRIPT.run(admin, [k('epoch'), k('lease'), 'retried:runs', k('last-op')], ['j', 'gc', 1, ifEpoch, token]);
      assert.equal(await open('a', ''), 1);
      assert.equal(await open('b', 1), 2);
      assert.equal(await open('b', 1), 2, 'the retry of b finds its open done');
      assert.deepEqual(await open('c', 1), ['moved', 2], 'another caller at epoch 1 is refused');
      assert.equal(await admin.get(k('epoch')), '2');
      const del = (token: string, ifEpoch: number) => DELETE_RUN_SCRIPT.run(admin, [k('epoch'), k('events'), k('lease'), k('progress'), 'retried:runs', k('last-op')], ['j', ifEpoch, token]);
      assert.equal(await del('d', 2), 'ok');
      assert.equal(await del('d', 2), 'ok', 'the retry of d finds its delete done');
      assert.equal(await admin.get(k('epoch')), '3', 'deleted once');
      assert.deepEqual(await del('e', 2), ['moved', 3]);
    } finally {
      admin.disconnect();
    }
  });
});
