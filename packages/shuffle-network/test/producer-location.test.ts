// The engine's way to say where a producer is (issue 15): an environment's `location` once it listens,
// and a registration whose `producer.location` names it — to a master of another factory instance (as in
// another process) that knows nothing of that executor otherwise. A peer address given in the
// environment's context (a cluster task executor's --host) is where it listens and what it advertises.
import { strict as assert } from 'node:assert';
import { connect } from 'node:net';
import { describe, it } from 'node:test';
import { intermediateResultId, isShuffleError, jobId, resultPartitionId, taskExecutorId } from '@weft/shuffle-api';
import { drain, emitAll, makeRecord, rejectionOf } from '@weft/shuffle-api/testing';
import { createNetworkShuffleServiceFactory } from '@weft/shuffle-network';

const partition = { resultId: intermediateResultId('r'), partitionId: resultPartitionId('r', 0), partitionIndex: 0, partitionType: 'PIPELINED_BOUNDED' as const, numberOfSubpartitions: 1 };

function connects(host: string, port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect({ host, port });
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });
}

describe('network shuffle producer location', { timeout: 20_000 }, () => {
  it('has no location before start, its listening address after', async () => {
    const environment = createNetworkShuffleServiceFactory().createShuffleEnvironment({ taskExecutorId: taskExecutorId('w0') });
    try {
      assert.equal(environment.location, undefined);
      await environment.start();
      assert.deepEqual(environment.location, { host: '127.0.0.1', port: environment.address.port });
    } finally {
      await environment.close();
    }
  });

  it("registers a partition at the producer.location a master of another factory was given, and consumers read it there", async () => {
    const producerSide = createNetworkShuffleServiceFactory();
    const environment = producerSide.createShuffleEnvironment({ taskExecutorId: taskExecutorId('w1') });
    const master = createNetworkShuffleServiceFactory().createShuffleMaster();
    const consumer = createNetworkShuffleServiceFactory().createShuffleEnvironment({ taskExecutorId: taskExecutorId('w2') });
    try {
      await environment.start();
      const job = jobId('located');
      await master.registerJob({ jobId: job });
      const unknown = await rejectionOf(master.registerPartitionWithProducer({ jobId: job, partition, producer: { producerId: 'p#0@0' as never, attempt: 0, taskExecutorId: taskExecutorId('w1') } }));
      assert.ok(isShuffleError(unknown, 'SHF_ERR_INVALID_ARGUMENT'), 'without a location the master does not know w1');
      const location = environment.location;
      assert.ok(location !== undefined);
      const descriptor = await master.registerPartitionWithProducer({ jobId: job, partition, producer: { producerId: 'p#0@0' as never, attempt: 0, taskExecutorId: taskExecutorId('w1'), location } });
      assert.deepEqual(descriptor.details, { host: location.host, port: location.port });
      const writer = await environment.createResultPartitionWriter({ descriptor });
      const gate = await consumer.createInputGate({ jobId: job, inputs: [descriptor], subpartitions: { start: 0, end: 0 } });
      const [, channels] = await Promise.all([
        (async () => {
          await emitAll(writer, [{ subpartition: 0, record: makeRecord(0, 0, 0) }]);
          await writer.finish();
          await writer.close();
        })(),
        drain(gate) as Promise<{ kind: string }[][]>,
      ]);
      await gate.close();
      assert.deepEqual(channels[0]?.map((item) => item.kind), ['record', 'event']);
    } finally {
      await consumer.close();
      await environment.close();
      await master.close();
    }
  });

  it('listens on the peer address its context gives and advertises its advertised host', async () => {
    const environment = createNetworkShuffleServiceFactory().createShuffleEnvironment({ taskExecutorId: taskExecutorId('w3'), peerAddress: { listenHost: '127.0.0.2', advertisedHost: 'peer.example' } });
    try {
      await environment.start();
      const port = environment.location?.port as number;
      assert.deepEqual(environment.location, { host: 'peer.example', port });
      assert.equal(await connects('127.0.0.2', port), true, 'listening on the peer address');
      assert.equal(await connects('127.0.0.1', port), false, 'not on the configured default');
    } finally {
      await environment.close();
    }
  });
});
