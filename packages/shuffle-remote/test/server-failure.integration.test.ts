// A shuffle server that dies mid-job (issue 10): real redis-server, real shuffle-server processes killed
// (SIGKILL) or paused (SIGSTOP). Their heartbeat TTL is long (60 s), so the dead server's record stays
// live in Redis through every test: nothing here waits for it to expire.
import { strict as assert } from 'node:assert';
import { after, before, describe, it } from 'node:test';
import { type JobId, type LogFields, type Logger, type ShuffleDescriptor, type ShuffleMaster, findShuffleError, isShuffleError } from '@weft/shuffle-api';
import { registerPartition, rejectionOf } from '@weft/shuffle-api/testing';
import { type RedisServer, startRedis } from '@weft/testkit';
import { RedisServerRegistry } from '../src/coordinator/redis-server-registry.js';
import type { ServerRecord } from '../src/coordinator/server-record.js';
import { eventually } from './helpers/server-objects.js';
import type { ServerProcess } from './helpers/server-process.js';
import { type ServerProcessPool, processPoolFactory, readPartition, startServerProcessPool, writePartition } from './helpers/server-process-pool.js';

let redis: RedisServer;
let prefixes = 0;

/** A pool under its own key prefix: server processes with a 60 s heartbeat TTL, and their temp dirs. */
function pool(count: number, heartbeatTtlMs = 60_000): Promise<ServerProcessPool> {
  return startServerProcessPool({ redisUrl: redis.url, keyPrefix: `weft-test-failure-${process.pid}-${++prefixes}:`, count, heartbeatTtlMs, dirPrefix: 'weft-ss-failure-' });
}

before(async () => {
  redis = await startRedis({ persistent: false });
});

after(async () => {
  await redis?.close();
});

interface LogLine {
  readonly level: 'debug' | 'info' | 'warn' | 'error';
  readonly message: string;
  readonly fields: LogFields;
}

function recordingLogger(lines: LogLine[], bindings: LogFields = {}): Logger {
  const log =
    (level: LogLine['level']) =>
    (fieldsOrMessage: LogFields | string, message?: string): void => {
      if (typeof fieldsOrMessage === 'string') lines.push({ level, message: fieldsOrMessage, fields: bindings });
      else lines.push({ level, message: message ?? '', fields: { ...bindings, ...fieldsOrMessage } });
    };
  return { debug: log('debug'), info: log('info'), warn: log('warn'), error: log('error'), child: (more) => recordingLogger(lines, { ...bindings, ...more }) };
}

/** Registers `n` partitions; counts where they were placed. */
async function placeMany(master: ShuffleMaster, jobId: string, tag: string, n: number): Promise<{ descriptors: ShuffleDescriptor[]; on: Map<string, number> }> {
  const descriptors: ShuffleDescriptor[] = [];
  const on = new Map<string, number>();
  for (let i = 0; i < n; i++) {
    const d = await registerPartition(master, { jobId, resultId: tag, index: i, type: 'BLOCKING', subpartitions: 2 });
    descriptors.push(d);
    const serverId = (d.details as { serverId: string }).serverId;
    on.set(serverId, (on.get(serverId) ?? 0) + 1);
  }
  return { descriptors, on };
}

const serverOf = (d: ShuffleDescriptor): string => (d.details as { serverId: string }).serverId;

describe('a shuffle server that dies', () => {
  it('is excluded by a master when a writer that moved off it to a spare reports it in the registry (no task failed, no failure report)', async () => {
    await using p = await pool(2);
    const [a, b] = p.servers as [ServerProcess, ServerProcess];
    const lines: LogLine[] = [];
    const factory = p.factory({ probeInitialDelayMs: 60_000, probeMaxDelayMs: 60_000 });
    const master = factory.createShuffleMaster({ logger: recordingLogger(lines) });
    await master.start();
    try {
      const placed = await placeMany(master, 'moved', 'm', 6);
      const onA = placed.descriptors.find((d) => serverOf(d) === a.serverId);
      assert.ok(onA !== undefined && (placed.on.get(b.serverId) ?? 0) > 0, 'both servers take partitions');
      await a.kill('SIGKILL');
      // a small partition still held whole: its writer moves to the spare and finishes there
      await writePartition(factory, onA, 20);
      assert.deepEqual(await readPartition(factory, onA), Array.from({ length: 20 }, (_, i) => i), 'read back whole from the spare');
      // the master reads the list for its next placements: the report is there (the record is still live)
      assert.deepEqual([...(await placeMany(master, 'moved', 'after', 6)).on], [[b.serverId, 6]], 'nothing placed on it any more');
      assert.ok(lines.some((l) => l.fields['serverId'] === a.serverId && /excluded/.test(l.message)), 'the exclusion is logged');
    } finally {
      await master.close();
    }
  });

  it("fails a consumer of a SIGKILLed server's committed partition with PARTITION_NOT_FOUND naming it, while the server's record is still live", async () => {
    await using p = await pool(2);
    const [a, b] = p.servers as [ServerProcess, ServerProcess];
    const factory = p.factory();
    const master = factory.createShuffleMaster();
    await master.start();
    try {
      const { descriptors } = await placeMany(master, 'killed', 'k', 6);
      const onA = descriptors.filter((d) => serverOf(d) === a.serverId);
      const onB = descriptors.filter((d) => serverOf(d) === b.serverId);
      assert.ok(onA.length > 0 && onB.length > 0, 'both servers hold partitions');
      for (const d of descriptors) await writePartition(factory, d, 40);
      await a.kill('SIGKILL');
      const registry = new RedisServerRegistry({ url: redis.url, keyPrefix: p.keyPrefix });
      await registry.start();
      try {
        assert.ok((await registry.listLive()).some((s) => s.serverId === a.serverId), "the killed server's record is still live (TTL 60 s)");
      } finally {
        await registry.close();
      }
      for (const d of onB) assert.equal((await readPartition(factory, d)).length, 40, "the live server's partitions still read");
      for (const d of onA) {
        const error = await rejectionOf(readPartition(factory, d));
        const notFound = findShuffleError(error, 'SHF_ERR_PARTITION_NOT_FOUND');
        assert.ok(notFound, `expected PARTITION_NOT_FOUND, got ${String(error)}`);
        assert.equal(notFound.context['partitionId'], d.partition.partitionId);
        const unreachable = findShuffleError(notFound.cause, 'SHF_ERR_STORAGE_UNAVAILABLE');
        assert.ok(unreachable, `the cause chain keeps the connection error: ${String(notFound.cause)}`);
        assert.deepEqual([unreachable.context['unreachable'], unreachable.context['server'], unreachable.context['serverId']], [true, a.url, a.serverId]);
        // the engine hands the task's failure to the master: the dead server gets no new partition
        await master.reportFailure({ jobId: 'killed' as JobId, error });
      }
      const after = await placeMany(master, 'killed', 'after', 10);
      assert.deepEqual([...after.on], [[b.serverId, 10]], 'nothing is placed on the reported server, though its record is live');
      const listed = (await master.listPartitions('killed' as JobId)).map((s) => s.descriptor.partition.partitionId).sort();
      assert.deepEqual(listed, onB.map((d) => d.partition.partitionId).sort(), "an excluded server's partitions are not listed as readable");
      for (const d of onA) await master.releasePartitionExternally(d); // not asked: it is excluded; the index forgets them
    } finally {
      await master.close();
    }
  });

  it('excludes a reported server from placement at once and takes it back once it answers healthy and is registered again', async () => {
    await using p = await pool(2);
    const [a, b] = p.servers as [ServerProcess, ServerProcess];
    const lines: LogLine[] = [];
    const factory = p.factory({ probeInitialDelayMs: 20, probeMaxDelayMs: 100 });
    const master = factory.createShuffleMaster({ logger: recordingLogger(lines) });
    await master.start();
    try {
      const before = await placeMany(master, 'revive', 'before', 10);
      assert.ok((before.on.get(a.serverId) ?? 0) > 0, 'the server takes partitions while it is up');
      const port = Number(new URL(a.url).port);
      await a.kill('SIGKILL');
      // what a producer's push to it would have failed with
      // (without its spares: a writer would move to one and succeed)
      const onA = before.descriptors.find((d) => serverOf(d) === a.serverId)!;
      const { spares: _spares, ...details } = onA.details as { spares?: unknown };
      const error = await rejectionOf(writePartition(factory, { ...onA, details }, 10));
      assert.ok(findShuffleError(error)?.context['unreachable'] === true, `a push to a killed server is unreachable: ${String(error)}`);
      await master.reportFailure({ jobId: 'revive' as JobId, error });
      assert.ok(lines.some((l) => l.level === 'warn' && l.fields['serverId'] === a.serverId && /excluded/.test(l.message)), 'the exclusion is logged');
      const excluded = await placeMany(master, 'revive', 'excluded', 10);
      assert.deepEqual([...excluded.on], [[b.serverId, 10]]);
      // probes find it down (its record live, its port closed): it stays out
      await eventually(() => lines.filter((l) => l.fields['serverId'] === a.serverId && /not back/.test(l.message)).length >= 2, 'two failed probes');
      assert.deepEqual([...(await placeMany(master, 'revive', 'still', 6)).on], [[b.serverId, 6]]);
      // the same server (same directory: same id) back on the same port
      const revived = await p.start(p.dirs[0]!, port);
      assert.equal(revived.serverId, a.serverId);
      await eventually(async () => ((await placeMany(master, 'revive', `back-${lines.length}`, 4)).on.get(a.serverId) ?? 0) > 0, 'the server to be taken back');
      assert.ok(lines.some((l) => l.fields['serverId'] === a.serverId && /excluded -> placeable/.test(l.message)), 'taking it back is logged');
    } finally {
      await master.close();
    }
  });

  it('keeps a SIGSTOPped server alive: a retryable SHF_ERR_TIMEOUT, not PARTITION_NOT_FOUND, and no exclusion', async () => {
    await using p = await pool(1);
    const [a] = p.servers as [ServerProcess];
    const factory = p.factory();
    const impatient = p.factory({ headersTimeoutMs: 300, bodyTimeoutMs: 300 }); // reads the paused server
    const master = factory.createShuffleMaster();
    await master.start();
    try {
      const { descriptors } = await placeMany(master, 'paused', 'p', 1);
      const d = descriptors[0]!;
      await writePartition(factory, d, 40);
      a.child.kill('SIGSTOP');
      let error: unknown;
      try {
        error = await rejectionOf(readPartition(impatient, d));
      } finally {
        a.child.kill('SIGCONT');
      }
      assert.equal(findShuffleError(error, 'SHF_ERR_PARTITION_NOT_FOUND'), undefined, `a slow server is not declared dead: ${String(error)}`);
      const timeout = findShuffleError(error, 'SHF_ERR_TIMEOUT');
      assert.ok(timeout?.retryable === true, `expected a retryable SHF_ERR_TIMEOUT, got ${String(error)}`);
      assert.notEqual(timeout.context['unreachable'], true);
      await master.reportFailure({ jobId: 'paused' as JobId, error });
      assert.deepEqual([...(await placeMany(master, 'paused', 'after', 3)).on], [[a.serverId, 3]], 'a slow server is not excluded');
      assert.equal((await readPartition(factory, d)).length, 40, 'once it runs again, its partition reads');
    } finally {
      await master.close();
    }
  });

  it('declares a server paused past its heartbeat TTL gone: PARTITION_NOT_FOUND naming the partition', async () => {
    await using p = await pool(1, 1_500);
    const [a] = p.servers as [ServerProcess];
    const factory = p.factory();
    const impatient = p.factory({ headersTimeoutMs: 300, bodyTimeoutMs: 300 }); // reads the paused server
    const master = factory.createShuffleMaster();
    await master.start();
    const registry = new RedisServerRegistry({ url: redis.url, keyPrefix: p.keyPrefix });
    await registry.start();
    try {
      const d = (await placeMany(master, 'silent', 's', 1)).descriptors[0]!;
      await writePartition(factory, d, 40);
      a.child.kill('SIGSTOP');
      let error: unknown;
      try {
        await eventually(async () => (await registry.get(a.serverId)) === undefined, "the paused server's record to expire");
        error = await rejectionOf(readPartition(impatient, d));
      } finally {
        a.child.kill('SIGCONT');
      }
      const notFound = findShuffleError(error, 'SHF_ERR_PARTITION_NOT_FOUND');
      assert.ok(notFound, `expected PARTITION_NOT_FOUND, got ${String(error)}`);
      assert.equal(notFound.context['partitionId'], d.partition.partitionId);
      assert.ok(findShuffleError(notFound.cause, 'SHF_ERR_TIMEOUT'), 'its cause is the timeout');
    } finally {
      await registry.close();
      await master.close();
    }
  });

  it('takes any failure report without throwing: unknown shapes, null, errors not about servers', async () => {
    await using p = await pool(1);
    const master = p.factory().createShuffleMaster();
    await master.start();
    try {
      const cyclic: { cause?: unknown; context: unknown } = { context: { unreachable: true, server: 42 } };
      cyclic.cause = cyclic;
      for (const error of [null, undefined, 'text', 7, new Error('user code failed'), cyclic, { context: null }, { context: { unreachable: true, server: 'http://127.0.0.1:1' } }]) {
        await master.reportFailure({ jobId: 'odd' as JobId, error });
      }
      assert.equal((await placeMany(master, 'odd', 'x', 2)).on.get(p.servers[0]!.serverId), 2, 'nothing excluded the live server');
    } finally {
      await master.close();
    }
  });
});

describe('bad input and limits', () => {
  it('fails registerJob at once, naming the Redis URL, when no server is live in the pool', async () => {
    const factory = processPoolFactory(redis.url, `weft-test-failure-empty-${process.pid}:`);
    const master = factory.createShuffleMaster();
    await master.start();
    try {
      const error = await rejectionOf(master.registerJob({ jobId: 'nobody' as JobId }));
      assert.ok(isShuffleError(error, 'SHF_ERR_STORAGE_UNAVAILABLE') && !error.retryable, String(error));
      assert.ok(error.message.includes(`no live shuffle server is registered in ${redis.url}`), error.message);
      assert.equal(error.context['setting'], 'redis');
    } finally {
      await master.close();
    }
  });

  it('ignores garbage in a server record with a logged warning: the good servers are still listed and placed on', async () => {
    await using p = await pool(1);
    const [good] = p.servers as [ServerProcess];
    const lines: LogLine[] = [];
    const registry = new RedisServerRegistry({ url: redis.url, keyPrefix: p.keyPrefix }, recordingLogger(lines));
    await registry.start();
    const master = p.factory().createShuffleMaster({ logger: recordingLogger(lines) });
    await master.start();
    try {
      const shaped: Partial<ServerRecord> = { serverId: 'wrong-shape', url: 'http://127.0.0.1:9' }; // no capacity, load, ...
      const impostor: ServerRecord = { serverId: 'someone-else', url: 'http://127.0.0.1:9', capacityBytes: 10 ** 12, diskUsedBytes: 0, activeStreams: 0, maxConcurrentStreams: 512, partitions: 0, tiered: false, startedAtMs: 0, heartbeatAtMs: 0 };
      await registry.connection.call('plant garbage', (r) =>
        r
          .multi()
          .set(registry.connection.key('server', 'garbage'), '{"serverId": "garbage", not json', 'PX', 60_000)
          .set(registry.connection.key('server', 'wrong-shape'), JSON.stringify(shaped), 'PX', 60_000)
          .set(registry.connection.key('server', 'impostor'), JSON.stringify(impostor), 'PX', 60_000)
          .sadd(registry.connection.key('servers'), 'garbage', 'wrong-shape', 'impostor')
          .exec(),
      );
      const live = await registry.listLive();
      assert.deepEqual(live.map((s) => s.serverId), [good.serverId]);
      const warned = lines.filter((l) => l.level === 'warn' && /not valid/.test(l.message)).map((l) => l.fields['serverId']);
      assert.deepEqual([...new Set(warned)].sort(), ['garbage', 'impostor', 'wrong-shape']);
      assert.equal(await registry.get('garbage'), undefined);
      assert.equal((await placeMany(master, 'garbage', 'g', 4)).on.get(good.serverId), 4, 'the master places on the good server only');
      assert.ok((await registry.connection.call('members', (r) => r.smembers(registry.connection.key('servers')))).includes('garbage'), 'a record with garbage is left for its server to overwrite');
    } finally {
      await master.close();
      await registry.close();
    }
  });
});
