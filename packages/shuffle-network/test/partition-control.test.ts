// What the master's control requests do on the producer's environment, for pipelined partitions the
// conformance suite does not release by hand: a release before or while a consumer waits, a new attempt
// replacing the old one, and the environment's own releasePartitionsLocally.
import { strict as assert } from 'node:assert';
import { describe, it } from 'node:test';
import { type ShuffleDescriptor, isShuffleError, resultPartitionId, taskExecutorId } from '@weft/shuffle-api';
import { drain, emitAll, makeRecord, registerPartition, rejectionOf } from '@weft/shuffle-api/testing';
import { createNetworkShuffleServiceFactory } from '@weft/shuffle-network';

async function setUp() {
  const factory = createNetworkShuffleServiceFactory();
  const master = factory.createShuffleMaster();
  const producer = factory.createShuffleEnvironment({ taskExecutorId: taskExecutorId('conformance') });
  const consumer = factory.createShuffleEnvironment({ taskExecutorId: taskExecutorId('consumer') });
  await producer.start();
  const read = async (descriptor: ShuffleDescriptor): Promise<unknown> => {
    const gate = await consumer.createInputGate({ jobId: descriptor.jobId, inputs: [descriptor], subpartitions: { start: 0, end: 0 } });
    try {
      return await drain(gate);
    } finally {
      await gate.close();
    }
  };
  return {
    master,
    producer,
    read,
    async close() {
      await consumer.close();
      await producer.close();
      await master.close();
    },
  };
}

const notFound = (error: unknown, partitionId: string): boolean => isShuffleError(error, 'SHF_ERR_PARTITION_NOT_FOUND') && error.partitionId === partitionId;

describe('network shuffle partition control', { timeout: 20_000 }, () => {
  it('fails a consumer waiting for a partition the master releases, and refuses its writer afterwards', async () => {
    const s = await setUp();
    try {
      const descriptor = await registerPartition(s.master, { jobId: 'release', resultId: 'r', index: 0, type: 'PIPELINED', subpartitions: 1 });
      const waiting = rejectionOf(s.read(descriptor));
      await new Promise((resolve) => setTimeout(resolve, 50)); // the consumer's request is in
      await s.master.releasePartitionExternally(descriptor);
      assert.ok(notFound(await waiting, 'r#0'), 'the waiting consumer learns the partition is gone');
      assert.ok(notFound(await rejectionOf(s.producer.createResultPartitionWriter({ descriptor })), 'r#0'));
      await s.master.releasePartitionExternally(descriptor); // idempotent
    } finally {
      await s.close();
    }
  });

  it("replaces an attempt registered again: the old attempt's writer may not finish, and only the new attempt is read", async () => {
    const s = await setUp();
    try {
      const old = await registerPartition(s.master, { jobId: 'attempts', resultId: 'a', index: 0, type: 'PIPELINED_BOUNDED', subpartitions: 1, attempt: 0 });
      const oldWriter = await s.producer.createResultPartitionWriter({ descriptor: old });
      await emitAll(oldWriter, [{ subpartition: 0, record: makeRecord(0, 0, 0) }]);
      const current = await registerPartition(s.master, { jobId: 'attempts', resultId: 'a', index: 0, type: 'PIPELINED_BOUNDED', subpartitions: 1, attempt: 1 });
      const refused = await rejectionOf(oldWriter.finish());
      assert.ok(isShuffleError(refused, 'SHF_ERR_COMMIT_CONFLICT'), String(refused));
      await oldWriter.close();
      assert.ok(notFound(await rejectionOf(s.read(old)), 'a#0'), 'a reader of the old attempt is refused');
      const writer = await s.producer.createResultPartitionWriter({ descriptor: current });
      const [, channels] = await Promise.all([
        (async () => {
          await emitAll(writer, [{ subpartition: 0, record: makeRecord(1, 0, 0) }, { subpartition: 0, record: makeRecord(1, 0, 1) }]);
          await writer.finish();
          await writer.close();
        })(),
        s.read(current) as Promise<{ kind: string }[][]>,
      ]);
      assert.deepEqual(channels[0]!.map((item) => item.kind), ['record', 'record', 'event']);
    } finally {
      await s.close();
    }
  });

  it("tells consumers why when the producer's environment closes: a writer still open fails them with SHF_ERR_PRODUCER_FAILED, not a lost connection", async () => {
    const s = await setUp();
    try {
      const descriptor = await registerPartition(s.master, { jobId: 'closing', resultId: 'c', index: 0, type: 'PIPELINED', subpartitions: 1 });
      const writer = await s.producer.createResultPartitionWriter({ descriptor });
      await emitAll(writer, [{ subpartition: 0, record: makeRecord(0, 0, 0) }]);
      writer.flush();
      const reading = rejectionOf(s.read(descriptor));
      await new Promise((resolve) => setTimeout(resolve, 50));
      await s.producer.close();
      const error = await reading;
      assert.ok(isShuffleError(error, 'SHF_ERR_PRODUCER_FAILED') && error.partitionId === 'c#0', String(error));
    } finally {
      await s.close();
    }
  });

  it('drops what the environment produces when it releases the partitions locally', async () => {
    const s = await setUp();
    try {
      const descriptor = await registerPartition(s.master, { jobId: 'local', resultId: 'l', index: 0, type: 'PIPELINED', subpartitions: 1 });
      await s.producer.releasePartitionsLocally([resultPartitionId('l', 0), resultPartitionId('unknown', 3)]);
      assert.ok(notFound(await rejectionOf(s.read(descriptor)), 'l#0'));
    } finally {
      await s.close();
    }
  });
});
