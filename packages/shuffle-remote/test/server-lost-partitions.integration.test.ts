// JobShuffleContext.partitionsLost from the server-pool master: real redis-server, real shuffle-server
// processes, one SIGKILLed (or SIGSTOPped). A reader's failure reported to the master (reportFailure)
// leads it to check the server once and, its process gone, to name — before the report resolves, in one
// notice — exactly the job's committed partitions that lived only there. Heartbeat TTL 60 s: the dead
// server's record stays live in Redis through every test (the connection refused is what tells).
import { strict as assert } from 'node:assert';
import { after, before, describe, it } from 'node:test';
import { type JobId, type PartitionsLostNotice, type ShuffleDescriptor, type ShuffleMaster, ShuffleError, findShuffleError, jobId } from '@weft/shuffle-api';
import { registerPartition, rejectionOf } from '@weft/shuffle-api/testing';
import { type RedisServer, startRedis } from '@weft/testkit';
import type { ServerProcess } from './helpers/server-process.js';
import { type ServerProcessPool, readPartition, startServerProcessPool, writePartition } from './helpers/server-process-pool.js';

let redis: RedisServer;
let prefixes = 0;

function pool(count: number): Promise<ServerProcessPool> {
  return startServerProcessPool({ redisUrl: redis.url, keyPrefix: `weft-test-lost-${process.pid}-${++prefixes}:`, count, dirPrefix: 'weft-ss-lost-' });
}

before(async () => {
  redis = await startRedis({ persistent: false });
});

after(async () => {
  await redis?.close();
});

const serverOf = (d: ShuffleDescriptor): string => (d.details as { serverId: string }).serverId;
const replicasOf = (d: ShuffleDescriptor): string[] => ((d.details as { replicas?: { serverId: string }[] }).replicas ?? []).map((r) => r.serverId);

/** Registers and writes `n` partitions of `job` (attempt 0), then registers the job again with a `partitionsLost` that records each notice. */
async function committedJob(master: ShuffleMaster, factory: Parameters<typeof writePartition>[0], job: string, n: number): Promise<{ descriptors: ShuffleDescriptor[]; notices: PartitionsLostNotice[] }> {
  const descriptors: ShuffleDescriptor[] = [];
  for (let i = 0; i < n; i++) descriptors.push(await registerPartition(master, { jobId: job, resultId: 'r', index: i, type: 'BLOCKING', subpartitions: 2 }));
  for (const d of descriptors) await writePartition(factory, d, 30);
  const notices: PartitionsLostNotice[] = [];
  await master.registerJob({ jobId: jobId(job), partitionsLost: (notice) => notices.push(notice) });
  return { descriptors, notices };
}

/** The pool's master, started; closed when the test's scope ends (`await using`). */
async function startedMaster(factory: ReturnType<ServerProcessPool['factory']>): Promise<ShuffleMaster & AsyncDisposable> {
  const master = factory.createShuffleMaster();
  await master.start();
  return master as ShuffleMaster & AsyncDisposable;
}

/** The error a task reports when it could not connect to `server` (as a reader or writer would). */
function unreachable(server: ServerProcess): ShuffleError {
  return new ShuffleError('SHF_ERR_STORAGE_UNAVAILABLE', `connect ECONNREFUSED ${server.url}`, { context: { server: server.url, serverId: server.serverId, unreachable: true } });
}

const ids = (notice: PartitionsLostNotice | undefined): string[] => (notice?.partitions ?? []).map((p) => `${p.partitionId}@${p.attempt}`).sort();

describe('partitions lost with a dead shuffle server (JobShuffleContext.partitionsLost)', () => {
  it('names, in one notice before the report resolves, exactly the partitions whose only copy was on the SIGKILLed server', async () => {
    await using p = await pool(3);
    const [a] = p.servers as [ServerProcess];
    const factory = p.factory();
    await using master = await startedMaster(factory);
    const { descriptors, notices } = await committedJob(master, factory, 'lost-one', 9);
    const onA = descriptors.filter((d) => serverOf(d) === a.serverId);
    assert.ok(onA.length > 0 && onA.length < descriptors.length, `server a holds some partitions, not all: ${onA.length}`);
    await a.kill('SIGKILL');
    const error = await rejectionOf(readPartition(factory, onA[0]!));
    assert.ok(findShuffleError(error, 'SHF_ERR_PARTITION_NOT_FOUND'), `a reader fails: ${String(error)}`);
    const started = performance.now();
    await master.reportFailure!({ jobId: 'lost-one' as JobId, error });
    const tookMs = performance.now() - started;
    assert.equal(notices.length, 1, 'one notice, before the report resolved');
    assert.deepEqual(ids(notices[0]), onA.map((d) => `${d.partition.partitionId}@0`).sort(), 'every partition of the dead server, and only those');
    assert.equal(notices[0]?.jobId, 'lost-one');
    assert.match(notices[0]?.reason ?? '', new RegExp(a.serverId));
    assert.ok(tookMs < 2_000, `the report took ${Math.round(tookMs)} ms`);
    // the other readers of the dead server report too: nothing more to tell
    for (const d of onA.slice(1)) await master.reportFailure!({ jobId: 'lost-one' as JobId, error: await rejectionOf(readPartition(factory, d)) });
    assert.equal(notices.length, 1, 'the dead server is concluded once');
    for (const d of descriptors.filter((x) => serverOf(x) !== a.serverId)) assert.equal((await readPartition(factory, d)).length, 30, 'the partitions not named are there');
  });

  it('names nothing when every partition of the dead server has a replica on a live one (--shuffle-replicas 2)', async () => {
    await using p = await pool(3);
    const [a] = p.servers as [ServerProcess];
    const factory = p.factory({ replicas: 2 });
    await using master = await startedMaster(factory);
    const { descriptors, notices } = await committedJob(master, factory, 'lost-replicated', 6);
    assert.ok(descriptors.some((d) => serverOf(d) === a.serverId || replicasOf(d).includes(a.serverId)), 'server a holds copies');
    await a.kill('SIGKILL');
    for (const d of descriptors) assert.equal((await readPartition(factory, d)).length, 30, 'every partition still reads');
    await master.reportFailure!({ jobId: 'lost-replicated' as JobId, error: unreachable(a) });
    assert.deepEqual(notices, [], 'nothing is lost');
  });

  it('names nothing for a server that is only paused (SIGSTOP): it may come back with its partitions', async () => {
    await using p = await pool(2);
    const [a] = p.servers as [ServerProcess];
    const factory = p.factory();
    await using master = await startedMaster(factory);
    const { descriptors, notices } = await committedJob(master, factory, 'lost-paused', 6);
    assert.ok(descriptors.some((d) => serverOf(d) === a.serverId));
    a.child.kill('SIGSTOP');
    try {
      const started = performance.now();
      await master.reportFailure!({ jobId: 'lost-paused' as JobId, error: unreachable(a) });
      const tookMs = performance.now() - started;
      assert.deepEqual(notices, [], 'a paused server is not dead');
      assert.ok(tookMs < 2_000, `the check is short: ${Math.round(tookMs)} ms`);
    } finally {
      a.child.kill('SIGCONT');
    }
  });

  it('tells a job registered without partitionsLost nothing, and a report that names no server changes nothing', async () => {
    await using p = await pool(2);
    const [a] = p.servers as [ServerProcess];
    const factory = p.factory();
    await using master = await startedMaster(factory);
    const { notices } = await committedJob(master, factory, 'lost-quiet', 4);
    await master.reportFailure!({ jobId: 'lost-quiet' as JobId, error: new Error('user code threw') });
    await master.registerJob({ jobId: jobId('lost-quiet') }); // registered again, without the callback
    await a.kill('SIGKILL');
    await master.reportFailure!({ jobId: 'lost-quiet' as JobId, error: unreachable(a) });
    assert.deepEqual(notices, []);
  });
});
