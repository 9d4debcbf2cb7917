// Review of issue 10 ("storage is freed as the job goes"): a shuffle server SIGKILLed mid-job and started
// again on its directory only after the job ended. The job's releases and its unregisterJob could not reach
// it (it was down), so what it had committed for that job must go once it is back — by its start-up, a
// sweep, or the master. Today nothing removes it: the finished job's partitions stay on its disk for good.
import { strict as assert } from 'node:assert';
import { readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { type JobId, type ShuffleDescriptor, findShuffleError } from '@weft/shuffle-api';
import { registerPartition, rejectionOf } from '@weft/shuffle-api/testing';
import type { ShuffleServerServiceFactory } from '@weft/shuffle-remote/client';
import { type RedisServer, startRedis } from '@weft/testkit';
import { eventually } from './helpers/server-objects.js';
import type { ServerProcess } from './helpers/server-process.js';
import { type ServerProcessPool, readPartition, startServerProcessPool, writePartition } from './helpers/server-process-pool.js';

let redis: RedisServer;

before(async () => {
  redis = await startRedis({ persistent: false });
});

after(async () => {
  await redis?.close();
});

/** The job's files under a server's directory (objects and commit records). */
async function jobFiles(dir: string, jobId: string): Promise<string[]> {
  const out: string[] = [];
  for (const sub of ['objects', 'commits']) {
    const entries = await readdir(join(dir, sub, jobId), { recursive: true }).catch(() => [] as string[]);
    for (const e of entries) if (e.includes('.')) out.push(join(sub, jobId, e));
  }
  return out;
}

describe('a shuffle server that was down when its job ended', () => {
  it("drops the finished job's committed partitions once it is back", async () => {
    await using p = await startServerProcessPool({ redisUrl: redis.url, keyPrefix: `weft-test-leftovers-${process.pid}:`, count: 2, heartbeatTtlMs: 1_000, dirPrefix: 'weft-ss-leftovers-' });
    const dirs = p.dirs;
    const [a] = p.servers as [ServerProcess, ServerProcess];
    const factory = p.factory();
    const master = factory.createShuffleMaster();
    await master.start();
    const jobId = 'leftover-job';
    try {
      await master.registerJob({ jobId: jobId as JobId });
      const descriptors: ShuffleDescriptor[] = [];
      for (let i = 0; i < 6; i++) descriptors.push(await registerPartition(master, { jobId, resultId: 'r', index: i, type: 'BLOCKING', subpartitions: 2 }));
      for (const d of descriptors) await writePartition(factory, d, 40);
      assert.ok((await jobFiles(dirs[0]!.path, jobId)).length > 0, 'server A holds some of the job');
      await a.kill('SIGKILL');
      // the job ends while A is down: its releases and unregisterJob cannot reach A
      for (const d of descriptors) await master.releasePartitionExternally(d).catch(() => undefined);
      await master.unregisterJob(jobId as JobId);
    } finally {
      await master.close();
    }
    // A comes back on its directory (same id) after the job is gone
    await p.start(dirs[0]!);
    await eventually(async () => (await jobFiles(dirs[0]!.path, jobId)).length === 0, `server A to drop the finished job's files: ${(await jobFiles(dirs[0]!.path, jobId)).join(', ')}`, 15_000);
  });
});

type ShuffleServerMaster = ReturnType<ShuffleServerServiceFactory['createShuffleMaster']>;

const serverOf = (d: ShuffleDescriptor): string => (d.details as { serverId: string }).serverId;

const STALE_JOB = 'stale-job';
const staleSpec = (attempt: number) => ({ jobId: STALE_JOB, resultId: 'r', index: 0, type: 'BLOCKING' as const, subpartitions: 2, attempt });

/**
 * The stale-attempt cases' start: two servers (A, B) and a client with quick probes; attempt 0 of the stale
 * job's partition committed (40 records) on A; A dies (the consumer's failure is reported, the producer's
 * partition released, A skipped: the producer re-runs); A comes back on its directory (same id). Disposing
 * it closes the master, then the pool.
 */
async function startStaleCase(): Promise<{ readonly pool: ServerProcessPool; readonly factory: ShuffleServerServiceFactory; readonly master: ShuffleServerMaster } & AsyncDisposable> {
  const pool = await startServerProcessPool({ redisUrl: redis.url, keyPrefix: `weft-test-stale-${process.pid}:`, count: 2, dirPrefix: 'weft-ss-stale-' });
  const factory = pool.factory({ probeInitialDelayMs: 20, probeMaxDelayMs: 100 });
  const master = factory.createShuffleMaster();
  const dispose = async (): Promise<void> => {
    try {
      await master.close();
    } finally {
      await pool[Symbol.asyncDispose]();
    }
  };
  try {
    await master.start();
    const a = pool.servers[0]!;
    // attempt 0 on A, committed (40 records)
    let d0 = await registerPartition(master, staleSpec(0));
    for (let i = 0; serverOf(d0) !== a.serverId && i < 20; i++) d0 = await registerPartition(master, staleSpec(0));
    assert.equal(serverOf(d0), a.serverId);
    await writePartition(factory, d0, 40);
    // A dies: the consumer's failure is reported, the producer's partition released (A skipped), the producer re-runs
    await a.kill('SIGKILL');
    const error = await rejectionOf(readPartition(factory, d0));
    assert.ok(findShuffleError(error, 'SHF_ERR_PARTITION_NOT_FOUND'), String(error));
    await master.reportFailure({ jobId: STALE_JOB as JobId, error });
    await master.releasePartitionExternally(d0);
    // A is back on its directory (same id), and taken back
    await pool.start(pool.dirs[0]!);
  } catch (error) {
    await dispose();
    throw error;
  }
  return { pool, factory, master, [Symbol.asyncDispose]: dispose };
}

describe('an earlier attempt left on a server that came back', () => {
  it("is never read for a later attempt's descriptor (the reader's fallback to a spare)", async () => {
    await using stale = await startStaleCase();
    const { factory, master } = stale;
    const [a, b] = stale.pool.servers as [ServerProcess, ServerProcess];
    let d1 = await registerPartition(master, staleSpec(1));
    await eventually(async () => {
      d1 = await registerPartition(master, staleSpec(1));
      const spares = (d1.details as { spares?: { serverId: string }[] }).spares ?? [];
      return serverOf(d1) === b.serverId && spares.some((s) => s.serverId === a.serverId);
    }, 'attempt 1 placed on B with A as its spare');
    // attempt 1 on B, committed (10 records); then B dies
    await writePartition(factory, d1, 10);
    assert.equal((await readPartition(factory, d1)).length, 10);
    await b.kill('SIGKILL');
    const read = await readPartition(factory, d1).then(
      (seqs) => `read ${seqs.length} records`,
      (e: unknown) => String(findShuffleError(e)?.code ?? e),
    );
    assert.equal(read, 'SHF_ERR_PARTITION_NOT_FOUND', "attempt 1's only copy is gone: attempt 0's leftover on A must not be served for it");
  });
});

describe('an earlier attempt left on a server that came back, placed on again', () => {
  it("does not block a later attempt placed on that server", async () => {
    await using stale = await startStaleCase();
    const { factory, master } = stale;
    const [a] = stale.pool.servers as [ServerProcess, ServerProcess];
    let d1 = await registerPartition(master, staleSpec(1));
    await eventually(async () => {
      d1 = await registerPartition(master, staleSpec(1));
      return serverOf(d1) === a.serverId;
    }, 'attempt 1 placed on A again');
    const { spares: _spares, ...details } = d1.details as { spares?: unknown };
    const outcome = await writePartition(factory, { ...d1, details }, 10).then(
      () => 'committed',
      (e: unknown) => `${String(findShuffleError(e)?.code)}: ${String((e as Error).message).slice(0, 300)}`,
    );
    assert.equal(outcome, 'committed', 'attempt 1 commits on the server that came back');
    assert.equal((await readPartition(factory, d1)).length, 10, "attempt 1's records are read");
  });
});
