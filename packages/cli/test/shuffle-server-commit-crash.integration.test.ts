// A shuffle server SIGKILLed at exactly the point between publishing a commit to the Redis commit index
// and writing its local commit record (a real `weft shuffle-server` process, its fault point armed in
// Redis): the partition's next attempt commits — on another server, or on the same one restarted — and
// the dead attempt never shows (no lookup, no listPartitions phantom). Before commits were claimed
// pending, the dangling entry answered every later attempt with SHF_ERR_COMMIT_CONFLICT.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { after, afterEach, before, describe, it } from 'node:test';
import { type JobId, type ShuffleDescriptor, isShuffleError } from '@weft/shuffle-api';
import { drain, emitAll, makeRecord, parseRecord, recordsOf, registerPartition, rejectionOf } from '@weft/shuffle-api/testing';
import { type ServerShuffleMaster, type ShuffleServerServiceFactory, ShuffleServerFaults, createShuffleServerServiceFactory } from '@weft/shuffle-remote/client';
import { type ShuffleServerPool, startShuffleServerPool } from '@weft/testkit';

const RECORDS = 400;

async function write(factory: ShuffleServerServiceFactory, descriptor: ShuffleDescriptor): Promise<void> {
  const environment = factory.createShuffleEnvironment({ taskExecutorId: 'producer' as never });
  try {
    const writer = await environment.createResultPartitionWriter({ descriptor });
    try {
      await emitAll(writer, Array.from({ length: RECORDS }, (_, seq) => ({ subpartition: seq % 2, record: makeRecord(descriptor.producer.attempt, seq % 2, seq, 100) })));
      await writer.finish();
    } finally {
      await writer.close();
    }
  } finally {
    await environment.close();
  }
}

async function read(factory: ShuffleServerServiceFactory, descriptor: ShuffleDescriptor): Promise<{ producers: Set<number>; seqs: number[] }> {
  const environment = factory.createShuffleEnvironment({ taskExecutorId: 'consumer' as never });
  try {
    const gate = await environment.createInputGate({ jobId: descriptor.jobId, inputs: [descriptor], subpartitions: { start: 0, end: 1 } });
    try {
      const records = (await drain(gate)).flatMap((items) => recordsOf(items).map((r) => parseRecord(r)));
      return { producers: new Set(records.map((r) => r.producer)), seqs: records.map((r) => r.seq).sort((a, b) => a - b) };
    } finally {
      await gate.close();
    }
  } finally {
    await environment.close();
  }
}

/** The raw commit-index entries of a job, straight from Redis (pending ones included). */
function rawIndex(pool: ShuffleServerPool, jobId: string): Record<string, { attempt: number; serverId: string; pending?: unknown }> {
  const key = `weft:shuffle-server:job:${jobId}:commits`;
  const out = spawnSync('redis-cli', ['-p', String(pool.redis.port), '--raw', 'HGETALL', key], { encoding: 'utf8' });
  assert.equal(out.status, 0, out.stderr);
  const lines = out.stdout.split('\n').filter((l) => l !== '');
  const entries: Record<string, { attempt: number; serverId: string; pending?: unknown }> = {};
  for (let i = 0; i + 1 < lines.length; i += 2) entries[lines[i]!] = JSON.parse(lines[i + 1]!);
  return entries;
}

async function commitRecords(dir: string, jobId: string): Promise<string[]> {
  return (await readdir(join(dir, 'commits', jobId)).catch(() => [] as string[])).filter((name) => name.endsWith('.json'));
}

describe('a shuffle server killed between publishing a commit and writing its commit record', () => {
  let pool: ShuffleServerPool;
  let factory: ShuffleServerServiceFactory;
  let master: ServerShuffleMaster;
  let faults: ShuffleServerFaults;
  before(async () => {
    pool = await startShuffleServerPool({ count: 2, faultHooks: true });
    factory = createShuffleServerServiceFactory({ redis: pool.redisUrl, secret: pool.secret });
    master = factory.createShuffleMaster();
    await master.start();
    faults = await ShuffleServerFaults.open({ redis: pool.redisUrl });
  });
  afterEach(async () => {
    await pool.ensureAllRunning();
  });
  after(async () => {
    await Promise.allSettled([master?.close(), faults?.close()]);
    await pool?.close();
  });

  /** Attempt 0 of `partition` is pushed to `server`, which dies at its commit point: returns the descriptor. */
  async function crashAtCommit(jobId: string, resultId: string): Promise<{ descriptor: ShuffleDescriptor; server: (typeof pool.servers)[number] }> {
    const registered = await registerPartition(master, { jobId, resultId, index: 0, type: 'BLOCKING', subpartitions: 2, attempt: 0 });
    // no spares: this attempt must die with its server (with one, its writer would move there and commit)
    const { spares: _spares, ...details } = registered.details as { spares?: unknown };
    const placed: ShuffleDescriptor = { ...registered, details };
    const serverId = (placed.details as { serverId: string }).serverId;
    const server = pool.servers.find((s) => s.serverId === serverId);
    assert.ok(server, `placed on a pool server (${serverId})`);
    await faults.arm({ serverId, point: 'commit', jobId, partitionId: placed.partition.partitionId, action: 'kill' });
    const error = await rejectionOf(write(factory, placed));
    assert.ok(isShuffleError(error), String(error));
    await server.exited();
    assert.equal(server.lastExit?.signal, 'SIGKILL', 'the server process was SIGKILLed');
    // exactly that point: the index holds the claim, pending; the server's disk has no commit record
    const entry = rawIndex(pool, jobId)[placed.partition.partitionId];
    assert.equal(entry?.attempt, 0);
    assert.equal(entry?.serverId, serverId);
    assert.ok(entry?.pending !== undefined, 'the entry is still pending');
    assert.deepEqual(await commitRecords(server.dir, jobId), []);
    // and nobody sees it as committed
    assert.equal(await faults.committed(jobId, placed.partition.partitionId), undefined);
    assert.deepEqual(await master.listPartitions(jobId as JobId), [], 'no phantom partition');
    return { descriptor: placed, server };
  }

  function attempt(descriptor: ShuffleDescriptor, attemptNumber: number, server: { serverId: string; url: string }): ShuffleDescriptor {
    const details = descriptor.details as { token: string };
    return {
      ...descriptor,
      producer: { ...descriptor.producer, attempt: attemptNumber, producerId: `${descriptor.producer.producerId.replace(/@\d+$/, '')}@${attemptNumber}` as never },
      details: { serverId: server.serverId, url: server.url, token: details.token },
    };
  }

  /** The next attempt as an engine makes it: registered with the master (which fences older attempts), then pinned to `server`. */
  async function registeredAttempt(descriptor: ShuffleDescriptor, attemptNumber: number, server: { serverId: string; url: string }): Promise<ShuffleDescriptor> {
    const { resultId, partitionIndex: index } = descriptor.partition;
    await registerPartition(master, { jobId: descriptor.jobId, resultId, index, type: 'BLOCKING', subpartitions: 2, attempt: attemptNumber });
    return attempt(descriptor, attemptNumber, server);
  }

  it('lets the next attempt commit on another server, and only that attempt is visible', async () => {
    const jobId = 'crash-other';
    const { descriptor, server } = await crashAtCommit(jobId, 'r1');
    const other = pool.servers.find((s) => s !== server)!;
    const next = await registeredAttempt(descriptor, 1, other);
    await write(factory, next); // before the fix: SHF_ERR_COMMIT_CONFLICT naming attempt 0 on the dead server
    const listed = await master.listPartitions(jobId as JobId);
    assert.deepEqual(listed.map((p) => [p.descriptor.partition.partitionId, p.descriptor.producer.attempt, (p.descriptor.details as { serverId: string }).serverId]), [[descriptor.partition.partitionId, 1, other.serverId]]);
    const got = await read(factory, listed[0]!.descriptor);
    assert.deepEqual([...got.producers], [1], 'only attempt 1 is read');
    assert.deepEqual(got.seqs, Array.from({ length: RECORDS }, (_, i) => i));
  });

  it('lets the next attempt commit on the same server restarted on its directory', async () => {
    const jobId = 'crash-same';
    const { descriptor, server } = await crashAtCommit(jobId, 'r2');
    await server.ensureRunning();
    assert.equal((await faults.server(server.serverId))?.pid, server.pid, 'the restarted server registered with its new pid');
    const next = await registeredAttempt(descriptor, 1, server);
    await write(factory, next);
    const listed = await master.listPartitions(jobId as JobId);
    assert.deepEqual(listed.map((p) => [p.descriptor.producer.attempt, (p.descriptor.details as { serverId: string }).serverId]), [[1, server.serverId]]);
    const got = await read(factory, listed[0]!.descriptor);
    assert.deepEqual([...got.producers], [1]);
    assert.equal(got.seqs.length, RECORDS);
    assert.equal(rawIndex(pool, jobId)[descriptor.partition.partitionId]?.pending, undefined, 'the entry is confirmed');
  });

  it('still refuses a second attempt once the first has committed (first committer wins)', async () => {
    const jobId = 'no-crash';
    const first = await registerPartition(master, { jobId, resultId: 'r3', index: 0, type: 'BLOCKING', subpartitions: 2, attempt: 0 });
    await write(factory, first);
    const serverId = (first.details as { serverId: string }).serverId;
    const other = pool.servers.find((s) => s.serverId !== serverId)!;
    const error = await rejectionOf(write(factory, attempt(first, 1, other)));
    assert.ok(isShuffleError(error, 'SHF_ERR_COMMIT_CONFLICT'), String(error));
  });
});
