// Writes that survive a shuffle server's death (a copy moves to a spare) and replicas (every partition on
// two servers of different hosts): real redis-server, shuffle servers in their own processes bound to
// 127.0.0.2 / 127.0.0.3 (two "hosts"), SIGKILLed mid-job.
import { strict as assert } from 'node:assert';
import { readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { type Logger, type ShuffleDescriptor, type ShuffleError, isShuffleError, taskExecutorId } from '@weft/shuffle-api';
import { drain, emitAll, makeRecord, parseRecord, recordsOf, registerPartition, rejectionOf } from '@weft/shuffle-api/testing';
import { type ShuffleServerClientOptions, type ShuffleServerServiceFactory, ShuffleServerClient, createShuffleServerServiceFactory, resolveShuffleServerClientOptions } from '@weft/shuffle-remote/client';
import { type RedisServer, type TempDir, createTempDir, startRedis } from '@weft/testkit';
import { RedisCommitIndex } from '../src/coordinator/redis-commit-index.js';
import type { CommittedPartition } from '../src/protocol/committed-partition.js';
import { createJobToken } from '../src/protocol/job-token.js';
import { TEST_SECRET, startServerCluster } from './helpers/server-cluster.js';
import { eventually, testDescriptor } from './helpers/server-objects.js';
import { type ServerProcess, startServerProcess } from './helpers/server-process.js';

let redis: RedisServer;
let pools = 0;

before(async () => {
  redis = await startRedis({ persistent: false });
});

after(async () => {
  await redis?.close();
});

const PAYLOAD = 200;
const record = (d: ShuffleDescriptor, seq: number): Uint8Array => makeRecord(d.partition.partitionIndex, seq % 2, seq, PAYLOAD);

/** Servers in child processes, each on its own loopback address ("host"), in one registry. */
async function startPool(hosts: readonly string[]) {
  const keyPrefix = `weft-test-replicas-${process.pid}-${++pools}:`;
  const dirs: TempDir[] = [];
  const servers: ServerProcess[] = [];
  const start = async (i: number): Promise<ServerProcess> => {
    const server = await startServerProcess({ secret: TEST_SECRET, redis: redis.url, redisKeyPrefix: keyPrefix, heartbeatIntervalMs: 100, heartbeatTtlMs: 500, dir: dirs[i]!.path, host: hosts[i]! });
    servers[i] = server;
    return server;
  };
  for (let i = 0; i < hosts.length; i++) dirs.push(await createTempDir('weft-ss-replicas-'));
  for (let i = 0; i < hosts.length; i++) await start(i);
  const client = new ShuffleServerClient(resolveShuffleServerClientOptions({ servers: servers.map((s) => s.url), retryAttempts: 1 }));
  return {
    keyPrefix,
    servers,
    dirs,
    /** Starts server i again on its directory (its id stays; its port may change). */
    restart: start,
    factory: (options: ShuffleServerClientOptions = {}): ShuffleServerServiceFactory =>
      createShuffleServerServiceFactory({ redis: redis.url, redisKeyPrefix: keyPrefix, secret: TEST_SECRET, placementRefreshMs: 0, retryAttempts: 2, retryMaxDelayMs: 50, ...options }),
    /** Partition ids server i lists as committed for the job. */
    listed: async (i: number, jobId: string): Promise<string[]> =>
      (await client.list(servers[i]!.url, createJobToken(Buffer.from(TEST_SECRET), jobId), jobId)).map((p) => p.partitionId).sort(),
    async [Symbol.asyncDispose](): Promise<void> {
      await client.close();
      await Promise.allSettled(servers.map((s) => s.kill()));
      await Promise.allSettled(dirs.map((d) => d.remove()));
    },
  };
}

function serverOf(d: ShuffleDescriptor): string {
  return (d.details as { serverId: string }).serverId;
}

function copiesOf(d: ShuffleDescriptor): string[] {
  const details = d.details as { serverId: string; replicas?: { serverId: string }[] };
  return [details.serverId, ...(details.replicas ?? []).map((r) => r.serverId)];
}

/** Reads both subpartitions back and checks every record byte for byte against what was written. */
async function assertReadsBack(factory: ShuffleServerServiceFactory, d: ShuffleDescriptor, records: number): Promise<void> {
  await using environment = factory.createShuffleEnvironment({ taskExecutorId: taskExecutorId('consumer') });
  const gate = await environment.createInputGate({ jobId: d.jobId, inputs: [d], subpartitions: { start: 0, end: 1 } });
  try {
    const got = (await drain(gate)).flatMap(recordsOf).sort((a, b) => parseRecord(a).seq - parseRecord(b).seq);
    assert.equal(got.length, records, `records of ${d.partition.partitionId}`);
    got.forEach((bytes, seq) => assert.ok(Buffer.from(bytes).equals(Buffer.from(record(d, seq))), `record ${seq} of ${d.partition.partitionId} byte for byte`));
  } finally {
    await gate.close();
  }
}

async function objectFiles(dir: string): Promise<string[]> {
  const out: string[] = [];
  const walk = async (at: string): Promise<void> => {
    for (const entry of await readdir(at, { withFileTypes: true }).catch(() => [])) {
      if (entry.isDirectory()) await walk(join(at, entry.name));
      else out.push(join(at, entry.name));
    }
  };
  await walk(join(dir, 'objects'));
  return out;
}

describe('the commit index with copies', () => {
  const committed = (serverId: string, attempt: number): CommittedPartition => ({
    jobId: 'copies',
    partitionId: 'c#0',
    attempt,
    serverId,
    descriptor: testDescriptor({ jobId: 'copies', partitionId: 'c#0', attempt, subpartitions: 1, token: 't' }),
    persistent: false,
    numberOfSubpartitions: 1,
    numberOfRegions: 1,
    indexOffset: 10,
    indexLength: 20,
    objectBytes: 50,
    subpartitionBytes: [30],
    totalBytes: 30,
    committedAtMs: 1,
    objectKey: `copies/c%230/attempt-${attempt}.${serverId}-1.wsm`,
    tiered: false,
  });

  it('keeps one record and a copy per further server of the same attempt, refuses another attempt, and lets a copy take the record\'s place when its server releases first', async () => {
    const index = new RedisCommitIndex({ url: redis.url, keyPrefix: `weft-test-copies-${process.pid}:` });
    await index.start();
    try {
      assert.deepEqual(await index.addCopy(committed('s1', 0)), { status: 'committed' });
      assert.deepEqual(await index.addCopy(committed('s2', 0)), { status: 'committed' });
      assert.deepEqual(await index.addCopy(committed('s2', 0)), { status: 'committed' }, 'idempotent');
      const rival = await index.addCopy(committed('s3', 1));
      assert.equal(rival.status, 'conflict', 'another attempt is a rival, not a copy');
      assert.deepEqual((await index.publish(committed('s3', 0))).status, 'conflict', 'a plain commit of the same attempt elsewhere still conflicts');
      assert.deepEqual((await index.locations('copies', 'c#0')).map((r) => [r.serverId, r.objectKey]), [
        ['s1', 'copies/c%230/attempt-0.s1-1.wsm'],
        ['s2', 'copies/c%230/attempt-0.s2-1.wsm'],
      ]);
      assert.equal((await index.list('copies')).length, 1, 'listed once');
      await index.removeCopy('copies', 'c#0', 's1');
      assert.deepEqual((await index.locations('copies', 'c#0')).map((r) => r.serverId), ['s2'], 'the copy took the record\'s place');
      assert.equal((await index.lookup('copies', 'c#0'))?.objectKey, 'copies/c%230/attempt-0.s2-1.wsm');
      await index.removeCopy('copies', 'c#0', 's2');
      assert.deepEqual(await index.locations('copies', 'c#0'), []);
      await index.addCopy(committed('s1', 0));
      await index.addCopy(committed('s2', 0));
      assert.equal((await index.removeJob('copies', false)).length, 2, 'removing the job returns every copy (their tier objects go too)');
      assert.deepEqual(await index.listLocations('copies'), []);
    } finally {
      await index.close();
    }
  });
});

describe('shuffle-server writes that survive a server death, and replicas', () => {
  it('moves a buffered producer whose server is SIGKILLed before finish() to a spare: finish() succeeds and every record reads back byte for byte', async () => {
    await using pool = await startPool(['127.0.0.2', '127.0.0.3']);
    const factory = pool.factory();
    const master = factory.createShuffleMaster();
    await master.start();
    try {
      const d = await registerPartition(master, { jobId: 'revive', resultId: 'r', index: 0, type: 'BLOCKING', subpartitions: 2 });
      const details = d.details as { serverId: string; spares?: { serverId: string }[] };
      const dead = pool.servers.findIndex((s) => s.serverId === details.serverId);
      const spare = 1 - dead;
      assert.deepEqual(details.spares?.map((s) => s.serverId), [pool.servers[spare]!.serverId], 'the other live server is the spare');
      {
        await using producer = factory.createShuffleEnvironment({ taskExecutorId: taskExecutorId('producer') });
        const writer = await producer.createResultPartitionWriter({ descriptor: d });
        await emitAll(writer, Array.from({ length: 500 }, (_, seq) => ({ subpartition: seq % 2, record: record(d, seq) })));
        await pool.servers[dead]!.kill('SIGKILL');
        await writer.finish();
        await writer.close();
      }
      assert.deepEqual(await pool.listed(spare, 'revive'), ['r#0'], 'committed on the spare');
      await assertReadsBack(factory, d, 500);
      const listed = await master.listPartitions(d.jobId);
      assert.deepEqual(listed.map((p) => serverOf(p.descriptor)), [pool.servers[spare]!.serverId], 'listed where it was committed');
      await master.releasePartitionExternally(d);
      assert.deepEqual(await pool.listed(spare, 'revive'), [], 'releasing the descriptor releases the moved copy');
      // the dead server comes back: nothing of the attempt is there
      await pool.restart(dead);
      assert.deepEqual(await pool.listed(dead, 'revive'), []);
      assert.deepEqual(await objectFiles(pool.dirs[dead]!.path), []);
    } finally {
      await master.close();
    }
  });

  it('opens a writer on a spare when its server is already dead: the lease moves before any data', async () => {
    await using pool = await startPool(['127.0.0.2', '127.0.0.3']);
    const factory = pool.factory({ maxBufferedPushBytes: 0, producerMemoryBytes: 64 * 1024 });
    const master = factory.createShuffleMaster();
    await master.start();
    try {
      const d = await registerPartition(master, { jobId: 'dead-at-open', resultId: 'o', index: 0, type: 'BLOCKING', subpartitions: 2 });
      const dead = pool.servers.findIndex((s) => s.serverId === serverOf(d));
      await pool.servers[dead]!.kill('SIGKILL');
      {
        await using producer = factory.createShuffleEnvironment({ taskExecutorId: taskExecutorId('producer') });
        const writer = await producer.createResultPartitionWriter({ descriptor: d });
        // streamed (maxBufferedPushBytes 0): only a move before the first byte can save it
        await emitAll(writer, Array.from({ length: 3000 }, (_, seq) => ({ subpartition: seq % 2, record: record(d, seq) })));
        await writer.finish();
        await writer.close();
      }
      assert.deepEqual(await pool.listed(1 - dead, 'dead-at-open'), ['o#0']);
      await assertReadsBack(factory, d, 3000);
    } finally {
      await master.close();
    }
  });

  it("fails a streamed producer whose server dies mid-push with a retryable SHF_ERR_STORAGE_UNAVAILABLE naming it, shows nothing, and the server's restart deletes the upload", async () => {
    await using pool = await startPool(['127.0.0.2', '127.0.0.3']);
    const factory = pool.factory({ maxBufferedPushBytes: 0, producerMemoryBytes: 64 * 1024 });
    const master = factory.createShuffleMaster();
    await master.start();
    try {
      const d = await registerPartition(master, { jobId: 'streamed', resultId: 's', index: 0, type: 'BLOCKING', subpartitions: 2 });
      const dead = pool.servers.findIndex((s) => s.serverId === serverOf(d));
      await using producer = factory.createShuffleEnvironment({ taskExecutorId: taskExecutorId('producer') });
      const writer = await producer.createResultPartitionWriter({ descriptor: d });
      await emitAll(writer, Array.from({ length: 4000 }, (_, seq) => ({ subpartition: seq % 2, record: record(d, seq) })));
      await eventually(async () => (await objectFiles(pool.dirs[dead]!.path)).length > 0, 'the push to reach the server disk');
      await pool.servers[dead]!.kill('SIGKILL');
      const error = (await rejectionOf(
        (async () => {
          await emitAll(writer, Array.from({ length: 4000 }, (_, seq) => ({ subpartition: seq % 2, record: record(d, 4000 + seq) })));
          await writer.finish();
        })(),
      )) as ShuffleError;
      await writer.close();
      assert.ok(isShuffleError(error, 'SHF_ERR_STORAGE_UNAVAILABLE'), String(error));
      assert.equal(error.retryable, true);
      assert.equal(error.context['unreachable'], true);
      assert.equal(error.context['server'], pool.servers[dead]!.url);
      assert.equal(error.context['serverId'], pool.servers[dead]!.serverId);
      assert.deepEqual(await master.listPartitions(d.jobId), [], 'nothing of the attempt is visible');
      assert.deepEqual(await pool.listed(1 - dead, 'streamed'), []);
      assert.ok((await objectFiles(pool.dirs[dead]!.path)).length > 0, 'the dead server left its partial upload on disk');
      await pool.restart(dead);
      assert.deepEqual(await pool.listed(dead, 'streamed'), []);
      assert.deepEqual(await objectFiles(pool.dirs[dead]!.path), [], 'its start-up deleted the upload nobody committed');
    } finally {
      await master.close();
    }
  });

  it('with replicas 2 puts every partition on two servers of different hosts; killing either host leaves every partition readable byte for byte; releases remove every copy', async () => {
    // hosts: a and b share 127.0.0.2, c is alone on 127.0.0.3 — so every pair must include c
    await using pool = await startPool(['127.0.0.2', '127.0.0.2', '127.0.0.3']);
    const factory = pool.factory({ replicas: 2, maxBufferedPushBytes: 64 * 1024, producerMemoryBytes: 256 * 1024 });
    const master = factory.createShuffleMaster();
    await master.start();
    const index = new RedisCommitIndex({ url: redis.url, keyPrefix: pool.keyPrefix });
    await index.start();
    try {
      const sizes = [50, 3000, 120, 2500];
      const descriptors: ShuffleDescriptor[] = [];
      for (let i = 0; i < sizes.length; i++) descriptors.push(await registerPartition(master, { jobId: 'replicas', resultId: 'p', index: i, type: 'BLOCKING', subpartitions: 2 }));
      {
        await using producer = factory.createShuffleEnvironment({ taskExecutorId: taskExecutorId('producer') });
        for (const [i, d] of descriptors.entries()) {
          const writer = await producer.createResultPartitionWriter({ descriptor: d });
          await emitAll(writer, Array.from({ length: sizes[i]! }, (_, seq) => ({ subpartition: seq % 2, record: record(d, seq) })));
          await writer.finish();
          await writer.close();
        }
      }
      const c = pool.servers[2]!.serverId;
      for (const d of descriptors) {
        const copies = copiesOf(d);
        assert.equal(copies.length, 2, `${d.partition.partitionId} has two copies`);
        assert.ok(copies.includes(c), `${d.partition.partitionId}: its copies are on two hosts (${copies.join(', ')})`);
      }
      for (const [i, server] of pool.servers.entries()) {
        const expected = descriptors.filter((d) => copiesOf(d).includes(server.serverId)).map((d) => d.partition.partitionId).sort();
        assert.deepEqual(await pool.listed(i, 'replicas'), expected, `server ${i} lists exactly the partitions it holds a copy of`);
      }
      // the lone host dies: every partition is read from the other host
      await pool.servers[2]!.kill('SIGKILL');
      for (const [i, d] of descriptors.entries()) await assertReadsBack(factory, d, sizes[i]!);
      await pool.restart(2);
      // now a server of the shared host dies
      const victim = pool.servers.findIndex((s, i) => i < 2 && descriptors.some((d) => serverOf(d) === s.serverId));
      await pool.servers[victim]!.kill('SIGKILL');
      for (const [i, d] of descriptors.entries()) await assertReadsBack(factory, d, sizes[i]!);
      await pool.restart(victim);
      // the readers reported the killed servers (no task failed): the master excluded them, and takes them
      // back once they answer healthy and are registered — until then it neither lists nor releases there
      const copiesListed = async (): Promise<number> =>
        (await master.listPartitions(descriptors[0]!.jobId)).reduce((n, p) => n + 1 + ((p.descriptor.details as { replicas?: unknown[] }).replicas?.length ?? 0), 0);
      await eventually(async () => (await copiesListed()) === 2 * descriptors.length, 'the master to take the restarted servers back');

      assert.equal((await master.listPartitions(descriptors[0]!.jobId)).length, 4);
      await master.releasePartitionExternally(descriptors[0]!);
      for (let i = 0; i < 3; i++) assert.ok(!(await pool.listed(i, 'replicas')).includes('p#0'), `server ${i} released p#0`);
      assert.deepEqual(await index.locations('replicas', 'p#0'), []);
      await master.unregisterJob(descriptors[0]!.jobId);
      for (let i = 0; i < 3; i++) assert.deepEqual(await pool.listed(i, 'replicas'), [], `server ${i} holds nothing of the job`);
      assert.deepEqual(await index.listLocations('replicas'), [], 'the commit index holds no copy');
    } finally {
      await index.close();
      await master.close();
    }
  });

  it('keeps a streamed producer whose replica dies mid-push going on the survivor, committing there', async () => {
    await using pool = await startPool(['127.0.0.2', '127.0.0.3']);
    const factory = pool.factory({ replicas: 2, maxBufferedPushBytes: 0, producerMemoryBytes: 64 * 1024 });
    const master = factory.createShuffleMaster();
    await master.start();
    try {
      const d = await registerPartition(master, { jobId: 'survivor', resultId: 's', index: 0, type: 'BLOCKING', subpartitions: 2 });
      const replica = (d.details as { replicas: { serverId: string }[] }).replicas[0]!.serverId;
      const dead = pool.servers.findIndex((s) => s.serverId === replica);
      {
        await using producer = factory.createShuffleEnvironment({ taskExecutorId: taskExecutorId('producer') });
        const writer = await producer.createResultPartitionWriter({ descriptor: d });
        await emitAll(writer, Array.from({ length: 3000 }, (_, seq) => ({ subpartition: seq % 2, record: record(d, seq) })));
        await eventually(async () => (await objectFiles(pool.dirs[dead]!.path)).length > 0, 'the push to reach the replica');
        await pool.servers[dead]!.kill('SIGKILL');
        await emitAll(writer, Array.from({ length: 3000 }, (_, seq) => ({ subpartition: seq % 2, record: record(d, 3000 + seq) })));
        await writer.finish();
        await writer.close();
      }
      assert.deepEqual(await pool.listed(1 - dead, 'survivor'), ['s#0']);
      await assertReadsBack(factory, d, 6000);
    } finally {
      await master.close();
    }
  });

  it('with a fixed list of servers and replicas 2, lists each partition once, reads the copy when a server dies, and releases both copies', async () => {
    await using pool = await startPool(['127.0.0.2', '127.0.0.3']);
    const factory = createShuffleServerServiceFactory({ servers: pool.servers.map((s) => s.url), secret: TEST_SECRET, replicas: 2, retryAttempts: 2, retryMaxDelayMs: 50 });
    const master = factory.createShuffleMaster();
    await master.start();
    try {
      const descriptors: ShuffleDescriptor[] = [];
      for (let i = 0; i < 3; i++) descriptors.push(await registerPartition(master, { jobId: 'fixed', resultId: 'f', index: i, type: 'BLOCKING', subpartitions: 2 }));
      {
        await using producer = factory.createShuffleEnvironment({ taskExecutorId: taskExecutorId('producer') });
        for (const d of descriptors) {
          const writer = await producer.createResultPartitionWriter({ descriptor: d });
          await emitAll(writer, Array.from({ length: 300 }, (_, seq) => ({ subpartition: seq % 2, record: record(d, seq) })));
          await writer.finish();
          await writer.close();
        }
      }
      for (let i = 0; i < 2; i++) assert.deepEqual(await pool.listed(i, 'fixed'), ['f#0', 'f#1', 'f#2'], `server ${i} holds every partition`);
      const listed = await master.listPartitions(descriptors[0]!.jobId);
      assert.deepEqual(listed.map((p) => p.descriptor.partition.partitionId).sort(), ['f#0', 'f#1', 'f#2'], 'each partition listed once');
      assert.ok(listed.every((p) => copiesOf(p.descriptor).length === 2), 'with its replica');
      await master.releasePartitionExternally(descriptors[0]!);
      for (let i = 0; i < 2; i++) assert.deepEqual(await pool.listed(i, 'fixed'), ['f#1', 'f#2'], `server ${i} released f#0`);
      await pool.servers[0]!.kill('SIGKILL');
      for (const d of descriptors.slice(1)) await assertReadsBack(factory, d, 300);
    } finally {
      await master.close();
    }
  });

  it('uses as many replicas as there are live servers when asked for more, with a warning, and reports it', async () => {
    await using cluster = await startServerCluster({ redisUrl: redis.url, count: 2 });
    const warnings: string[] = [];
    const logger: Logger = {
      debug: () => undefined,
      info: () => undefined,
      warn: (_fields: unknown, message?: string) => void warnings.push(String(message)),
      error: () => undefined,
      child: () => logger,
    };
    const factory = cluster.factory({ replicas: 3 });
    const master = factory.createShuffleMaster({ logger });
    await master.start();
    try {
      const d = await registerPartition(master, { jobId: 'too-many', resultId: 't', index: 0, type: 'BLOCKING', subpartitions: 1 });
      assert.equal(copiesOf(d).length, 2);
      assert.equal(new Set(copiesOf(d)).size, 2, 'two different servers');
      assert.deepEqual(factory.replication(), { requested: 3, used: 2, liveServers: 2, sameHost: true });
      assert.ok(warnings.some((w) => /3 requested, 2 used/.test(w)), warnings.join('\n'));
      assert.ok(warnings.some((w) => /share a host/.test(w)), 'the in-process servers share 127.0.0.1: said so');
    } finally {
      await master.close();
    }
  });
});
