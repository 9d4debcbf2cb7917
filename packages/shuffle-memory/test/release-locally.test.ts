import { strict as assert } from 'node:assert';
import { describe, it } from 'node:test';
import { type ShuffleDescriptor, type ShuffleEnvironment, type ShuffleMaster, isShuffleError, resultPartitionId, taskExecutorId } from '@weft/shuffle-api';
import { drain, makeRecord, recordsOf, registerPartition, rejectionOf } from '@weft/shuffle-api/testing';
import { createMemoryShuffleServiceFactory } from '@weft/shuffle-memory';

/** One factory (one registry) with a master and two environments, as two task executors of one process. */
async function twoExecutors() {
  const factory = createMemoryShuffleServiceFactory({ buffersPerPartition: 8 });
  const master = factory.createShuffleMaster();
  await master.start();
  const a = factory.createShuffleEnvironment({ taskExecutorId: taskExecutorId('a') });
  const b = factory.createShuffleEnvironment({ taskExecutorId: taskExecutorId('b') });
  return {
    master,
    a,
    b,
    async [Symbol.asyncDispose]() {
      await a.close();
      await b.close();
      await master.close();
    },
  };
}

async function writeFinished(env: ShuffleEnvironment, descriptor: ShuffleDescriptor, records: number): Promise<void> {
  const writer = await env.createResultPartitionWriter({ descriptor });
  for (let seq = 0; seq < records; seq++) writer.emitRecord(makeRecord(0, 0, seq, 10), 0);
  await writer.finish();
  await writer.close();
}

/** The records read from the partition, or the error code the read failed with. */
async function read(env: ShuffleEnvironment, descriptor: ShuffleDescriptor): Promise<number | string> {
  const gate = await env.createInputGate({ jobId: descriptor.jobId, inputs: [descriptor], subpartitions: { start: 0, end: 0 } });
  try {
    return recordsOf((await drain(gate))[0]!).length;
  } catch (error) {
    return isShuffleError(error) ? `${error.code} ${String(error.context['partitionId'])}` : String(error);
  } finally {
    await gate.close();
  }
}

async function listed(master: ShuffleMaster, jobId: string): Promise<string[]> {
  return (await master.listPartitions(jobId as never)).map((p) => p.descriptor.partition.partitionId as string).sort();
}

describe('MemoryShuffleEnvironment.releasePartitionsLocally', () => {
  it('drops the partitions this environment produced, and only those', async () => {
    await using x = await twoExecutors();
    const job = 'release-locally';
    const byA = await registerPartition(x.master, { jobId: job, resultId: 'r', index: 0, type: 'BLOCKING', subpartitions: 1 });
    const byB = await registerPartition(x.master, { jobId: job, resultId: 'r', index: 1, type: 'BLOCKING', subpartitions: 1 });
    await writeFinished(x.a, byA, 5);
    await writeFinished(x.b, byB, 7);

    // b holds nothing of r#0: asking b to release it changes nothing
    await x.b.releasePartitionsLocally([byA.partition.partitionId]);
    assert.equal(await read(x.b, byA), 5);

    await x.a.releasePartitionsLocally([byA.partition.partitionId, byB.partition.partitionId, resultPartitionId('unknown', 0)]);
    assert.equal(await read(x.b, byA), 'SHF_ERR_PARTITION_NOT_FOUND r#0', 'what a produced is gone, for every reader');
    assert.equal(await read(x.a, byB), 7, "b's partition stays");
    assert.deepEqual(await listed(x.master, job), ['r#1']);

    // idempotent, and a release of nothing is fine
    await x.a.releasePartitionsLocally([byA.partition.partitionId]);
    await x.a.releasePartitionsLocally([]);
    assert.deepEqual(await listed(x.master, job), ['r#1']);
  });

  it('drops a pipelined partition being written: its reader gets PARTITION_NOT_FOUND, the writer is not blocked', async () => {
    await using x = await twoExecutors();
    const descriptor = await registerPartition(x.master, { jobId: 'release-pipelined', resultId: 'p', index: 0, type: 'PIPELINED', subpartitions: 1 });
    const writer = await x.a.createResultPartitionWriter({ descriptor });
    try {
      for (let seq = 0; seq < 3; seq++) writer.emitRecord(makeRecord(0, 0, seq, 10), 0);
      writer.flush();
      await x.a.releasePartitionsLocally([descriptor.partition.partitionId]);
      assert.equal(await read(x.b, descriptor), 'SHF_ERR_PARTITION_NOT_FOUND p#0');
      for (let seq = 3; seq < 2_000; seq++) if (!writer.emitRecord(makeRecord(0, 0, seq, 100), 0)) await writer.ready();
      await writer.finish();
    } finally {
      await writer.close();
    }
  });

  it('leaves a newer attempt alone, and does not bring back a released blocking partition when its writer finishes', async () => {
    await using x = await twoExecutors();
    const job = 'release-attempts';
    const first = await registerPartition(x.master, { jobId: job, resultId: 'r', index: 0, type: 'BLOCKING', subpartitions: 1 });
    const writer = await x.a.createResultPartitionWriter({ descriptor: first });
    writer.emitRecord(makeRecord(0, 0, 0, 10), 0);
    await x.a.releasePartitionsLocally([first.partition.partitionId]);
    writer.emitRecord(makeRecord(0, 0, 1, 10), 0);
    await writer.finish();
    assert.equal(writer.metrics.bufferedBytes, 0, 'a released partition keeps nothing its writer still sends');
    await writer.close();
    assert.deepEqual(await listed(x.master, job), [], 'a released partition stays released when its writer finishes later');
    assert.equal(await read(x.b, first), 'SHF_ERR_PARTITION_NOT_FOUND r#0');

    // attempt 1 of the same partition, produced by b: a's release must not touch it
    const second = await registerPartition(x.master, { jobId: job, resultId: 'r', index: 0, type: 'BLOCKING', subpartitions: 1, attempt: 1 });
    await writeFinished(x.b, second, 4);
    await x.a.releasePartitionsLocally([second.partition.partitionId]);
    assert.equal(await read(x.a, second), 4);
  });

  it('refuses partition ids that are not a list of ids with SHF_ERR_INVALID_ARGUMENT', async () => {
    await using x = await twoExecutors();
    for (const [value, field] of [['r#0', 'partitionIds'], [['r#0', '../x'], 'partitionIds[1]'], [[7], 'partitionIds[0]']] as const) {
      const error = await rejectionOf(x.a.releasePartitionsLocally(value as never));
      assert.ok(isShuffleError(error, 'SHF_ERR_INVALID_ARGUMENT') && error.context['field'] === field, String(error));
    }
  });
});
