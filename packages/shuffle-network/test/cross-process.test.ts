// The network shuffle between processes: producers live in child processes (their own network shuffle
// environments, on their own loopback addresses, as on other hosts); the master and the consumer live in
// this process. Records cross real TCP connections between processes; a killed producer process surfaces
// at the consumer as a retryable SHF_ERR_CONNECTION_LOST naming the partition.
import { strict as assert } from 'node:assert';
import { describe, it } from 'node:test';
import { type ShuffleDescriptor, isShuffleError, jobId, taskExecutorId } from '@weft/shuffle-api';
import { drain, parseRecord, recordsOf, registerPartition, rejectionOf } from '@weft/shuffle-api/testing';
import { createNetworkShuffleServiceFactory } from '@weft/shuffle-network';
import { startProducer } from './helpers/producer-processes.js';

describe('network shuffle across processes', { timeout: 60_000 }, () => {
  it('delivers every record of producers in two child processes to a consumer in this process, in order, with the barrier in band', async () => {
    const factory = createNetworkShuffleServiceFactory({ host: '127.0.0.1' });
    const master = factory.createShuffleMaster();
    const consumer = factory.createShuffleEnvironment({ taskExecutorId: taskExecutorId('consumer') });
    const producers = await Promise.all([startProducer('127.0.0.2', 'producer-0'), startProducer('127.0.0.3', 'producer-1')]);
    try {
      await master.start();
      const job = `xproc-${process.pid}`;
      const descriptors: ShuffleDescriptor[] = [];
      for (const [index, type] of (['PIPELINED', 'PIPELINED_BOUNDED'] as const).entries()) {
        // each producer process is its own task executor; the master learns where it listens
        master.registerTaskExecutor(producers[index]!.address);
        descriptors.push(await registerPartition(master, { jobId: job, resultId: 'x', index, type, subpartitions: 3, taskExecutorId: `producer-${index}` }));
      }
      assert.deepEqual(descriptors.map((d) => (d.details as { host: string }).host), ['127.0.0.2', '127.0.0.3']);
      const records = 2_000;
      // two consumer gates, as two consumer subtasks: subpartition 0 of both partitions, and the range [1, 2] of both
      const gates = await Promise.all(
        [{ start: 0, end: 0 }, { start: 1, end: 2 }].map((subpartitions) => consumer.createInputGate({ jobId: jobId(job), inputs: descriptors, subpartitions })),
      );
      try {
        descriptors.forEach((descriptor, i) => producers[i]!.child.send({ op: 'produce', descriptor, records, payloadBytes: 100, barrierAt: 700 }));
        const [single, range] = await Promise.all(gates.map((gate) => drain(gate)));
        await Promise.all(producers.map((p) => p.next('produced')));
        assert.equal(single!.length, 2);
        assert.equal(range!.length, 4);
        const channels = [
          ...single!.map((items, c) => ({ items, partition: c, subpartition: 0 })),
          ...range!.map((items, c) => ({ items, partition: Math.floor(c / 2), subpartition: 1 + (c % 2) })),
        ];
        for (const { items, partition, subpartition } of channels) {
          const name = `partition ${partition} subpartition ${subpartition}`;
          const parsed = recordsOf(items).map(parseRecord);
          assert.deepEqual(parsed.map((r) => r.seq), Array.from({ length: records }, (_, seq) => seq), `${name}: every record once, in order`);
          assert.ok(parsed.every((r) => r.intact && r.producer === partition && r.subpartition === subpartition), `${name}: a damaged or misrouted record`);
          const kinds = items.map((item) => (item.kind === 'event' ? item.event.type : 'record'));
          assert.equal(kinds.indexOf('checkpoint-barrier'), 700, `${name}: the barrier right after record 699`);
          assert.deepEqual(kinds.slice(-1), ['end-of-partition']);
        }
      } finally {
        await Promise.all(gates.map((gate) => gate.close()));
      }
    } finally {
      await consumer.close();
      await master.close();
      await Promise.all(producers.map((p) => p.stop()));
    }
  });

  it('fails the read of a killed producer process with a retryable SHF_ERR_CONNECTION_LOST naming the partition, after the records it delivered', async () => {
    const factory = createNetworkShuffleServiceFactory({ host: '127.0.0.1' });
    const master = factory.createShuffleMaster();
    const consumer = factory.createShuffleEnvironment({ taskExecutorId: taskExecutorId('consumer') });
    const producer = await startProducer('127.0.0.4', 'doomed');
    try {
      await master.start();
      master.registerTaskExecutor(producer.address);
      const descriptor = await registerPartition(master, { jobId: `kill-${process.pid}`, resultId: 'k', index: 0, type: 'PIPELINED_BOUNDED', subpartitions: 1, taskExecutorId: 'doomed' });
      const partitionId = descriptor.partition.partitionId;
      const gate = await consumer.createInputGate({ jobId: descriptor.jobId, inputs: [descriptor], subpartitions: { start: 0, end: 0 } });
      try {
        producer.child.send({ op: 'stall', descriptor, records: 50 });
        await producer.next('stalled');
        let delivered = 0;
        const first = await gate.readBatch();
        assert.equal(first?.kind, 'records');
        if (first?.kind === 'records') delivered += first.records.length;
        await producer.stop();
        const error = await rejectionOf(
          (async () => {
            for (let batch = await gate.readBatch(); batch !== null; batch = await gate.readBatch()) if (batch.kind === 'records') delivered += batch.records.length;
          })(),
        );
        assert.ok(isShuffleError(error, 'SHF_ERR_CONNECTION_LOST'), `expected SHF_ERR_CONNECTION_LOST, got ${String(error)}`);
        assert.equal(error.retryable, true);
        assert.equal(error.partitionId, partitionId);
        assert.equal(delivered, 50, 'the records flushed before the producer died are delivered first');
        // the master cannot announce a partition on the dead executor: the registration names it and is retryable
        const refused = await rejectionOf(registerPartition(master, { jobId: descriptor.jobId, resultId: 'k', index: 1, type: 'PIPELINED', subpartitions: 1, taskExecutorId: 'doomed' }));
        assert.ok(isShuffleError(refused, 'SHF_ERR_CONNECTION_LOST') && refused.retryable, String(refused));
        assert.equal(refused.context['taskExecutorId'], 'doomed');
        // releasing what the dead executor held is not an error: nothing is left to release
        await master.releasePartitionExternally(descriptor);
      } finally {
        await gate.close();
      }
    } finally {
      await consumer.close();
      await master.close();
      await producer.stop();
    }
  });
});
