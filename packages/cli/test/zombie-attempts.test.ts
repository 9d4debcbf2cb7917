// Zombie attempts: an attempt the job master declared dead (its worker stopped answering) may still be
// running somewhere and try to commit late. The engine gives a partition to a new attempt only after
// releasing it (so every attempt of the old one is fenced) and then registering the new producer — this
// is that sequence against the persisted shuffle, and the late commit must lose to the new attempt.
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import {
  type ResultPartitionWriter,
  type ShuffleDescriptor,
  executionAttemptId,
  executionVertexId,
  intermediateResultId,
  jobId as toJobId,
  resultPartitionId,
  taskExecutorId,
} from '@weft/shuffle-api';
import { createRemoteShuffleServiceFactory } from '@weft/shuffle-remote';

const job = toJobId('zombie-job');
const partition = {
  resultId: intermediateResultId('map->reduce'),
  partitionId: resultPartitionId('map->reduce', 0),
  partitionIndex: 0,
  partitionType: 'BLOCKING' as const,
  numberOfSubpartitions: 1,
};

function producer(attempt: number) {
  return { producerId: executionAttemptId(executionVertexId('map', 0), attempt), attempt, taskExecutorId: taskExecutorId(`worker-${attempt}`) };
}

async function setup(dir: string) {
  const factory = createRemoteShuffleServiceFactory({ store: `file://${join(dir, 'store')}`, meta: `sqlite://${join(dir, 'meta.db')}`, sweepIntervalMs: 0 });
  const master = factory.createShuffleMaster();
  await master.start();
  await master.registerJob({ jobId: job });
  // The zombie and the new attempt run in different task executors (processes, normally).
  const zombieSide = factory.createShuffleEnvironment({ taskExecutorId: taskExecutorId('worker-0') });
  const newSide = factory.createShuffleEnvironment({ taskExecutorId: taskExecutorId('worker-1') });
  const readerSide = factory.createShuffleEnvironment({ taskExecutorId: taskExecutorId('worker-2') });
  return {
    master,
    zombieSide,
    newSide,
    async read(descriptor: ShuffleDescriptor): Promise<string[]> {
      const gate = await readerSide.createInputGate({ jobId: job, inputs: [descriptor], subpartitions: { start: 0, end: 0 } });
      const out: string[] = [];
      try {
        for (let batch = await gate.readBatch(); batch !== null; batch = await gate.readBatch()) {
          if (batch.kind === 'records') for (const r of batch.records) out.push(Buffer.from(r).toString());
        }
      } finally {
        await gate.close();
      }
      return out;
    },
    async close() {
      await Promise.allSettled([zombieSide.close(), newSide.close(), readerSide.close()]);
      await master.unregisterJob(job);
      await master.close();
    },
  };
}

function write(writer: ResultPartitionWriter, text: string): void {
  for (let i = 0; i < 100; i++) writer.emitRecord(Buffer.from(`${text}-${i}`), 0);
}

/** What the job master does when it restarts the producer: release the old attempt's partition, register the new producer. */
async function failOver(master: Awaited<ReturnType<typeof setup>>['master'], old: ShuffleDescriptor): Promise<ShuffleDescriptor> {
  await master.releasePartitionExternally(old);
  return master.registerPartitionWithProducer({ jobId: job, partition, producer: producer(1) });
}

async function withStores(fn: (s: Awaited<ReturnType<typeof setup>>) => Promise<void>): Promise<void> {
  const dir = await mkdtemp(join(tmpdir(), 'weft-zombie-'));
  const s = await setup(dir);
  try {
    await fn(s);
  } finally {
    await s.close();
    await rm(dir, { recursive: true, force: true });
  }
}

const FENCED = /SHF_ERR_(PARTITION_NOT_FOUND|COMMIT_CONFLICT)/;

describe('a late commit of an attempt declared dead', () => {
  it('loses when it comes after the new attempt committed: readers see only the new attempt', async () => {
    await withStores(async ({ master, zombieSide, newSide, read }) => {
      const old = await master.registerPartitionWithProducer({ jobId: job, partition, producer: producer(0) });
      const zombie = await zombieSide.createResultPartitionWriter({ descriptor: old });
      write(zombie, 'zombie');
      const current = await failOver(master, old);
      const fresh = await newSide.createResultPartitionWriter({ descriptor: current });
      write(fresh, 'new');
      await fresh.finish();
      await assert.rejects(zombie.finish(), (error: { code?: string }) => FENCED.test(String(error.code)));
      await zombie.close();
      const records = await read(current);
      assert.equal(records.length, 100);
      assert.ok(records.every((r) => r.startsWith('new-')), 'only the new attempt is visible');
    });
  });

  it('loses when it comes first, before the new attempt committed: the new attempt still commits', async () => {
    await withStores(async ({ master, zombieSide, newSide, read }) => {
      const old = await master.registerPartitionWithProducer({ jobId: job, partition, producer: producer(0) });
      const zombie = await zombieSide.createResultPartitionWriter({ descriptor: old });
      write(zombie, 'zombie');
      const current = await failOver(master, old);
      const fresh = await newSide.createResultPartitionWriter({ descriptor: current });
      write(fresh, 'new');
      await assert.rejects(zombie.finish(), (error: { code?: string }) => FENCED.test(String(error.code)));
      await zombie.close();
      await fresh.finish();
      const records = await read(current);
      assert.deepEqual(records, Array.from({ length: 100 }, (_, i) => `new-${i}`));
    });
  });

  it('cannot even start writing once its partition was released', async () => {
    await withStores(async ({ master, zombieSide }) => {
      const old = await master.registerPartitionWithProducer({ jobId: job, partition, producer: producer(0) });
      await master.releasePartitionExternally(old);
      await assert.rejects(zombieSide.createResultPartitionWriter({ descriptor: old }), (error: { code?: string }) => error.code === 'SHF_ERR_PARTITION_NOT_FOUND');
    });
  });
});
