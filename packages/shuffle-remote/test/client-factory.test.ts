import { strict as assert } from 'node:assert';
import { describe, it } from 'node:test';
import { type ShuffleServiceFactoryProvider, isShuffleError, taskExecutorId } from '@weft/shuffle-api';
import { drain, emitAll, makeRecord, parseRecord, recordsOf, registerPartition, rejectionOf } from '@weft/shuffle-api/testing';
import { createShuffleServerServiceFactory } from '@weft/shuffle-remote/client';
import { TEST_SECRET } from './helpers/server-cluster.js';
import { startTestServer } from './helpers/test-server.js';

describe('shuffle server service factory', () => {
  it('is rebuilt from its reference in a worker without the secret, and that worker reads what was written', async () => {
    await using a = await startTestServer();
    await using b = await startTestServer();
    const factory = createShuffleServerServiceFactory({ servers: [a.server.url, b.server.url], secret: TEST_SECRET });
    assert.equal(factory.shuffleServiceId, 'shuffle-server');
    const reference = JSON.parse(JSON.stringify(factory.reference)) as typeof factory.reference;
    assert.deepEqual(Object.keys(reference.options as object).sort(), ['servers'], 'the secret never travels in the reference');
    const module = (await import(reference.module)) as Record<string, ShuffleServiceFactoryProvider>;
    const rebuilt = module[reference.exportName]!(reference.options);
    const master = factory.createShuffleMaster();
    await master.start();
    const worker = rebuilt.createShuffleEnvironment({ taskExecutorId: taskExecutorId('worker') });
    try {
      const descriptors = [];
      for (let i = 0; i < 4; i++) descriptors.push(await registerPartition(master, { jobId: 'ref-job', resultId: 'r', index: i, type: 'BLOCKING', subpartitions: 2 }));
      assert.deepEqual(new Set(descriptors.map((d) => (d.details as { url: string }).url)), new Set([a.server.url, b.server.url]), 'partitions spread over both servers');
      for (const d of descriptors) {
        const writer = await worker.createResultPartitionWriter({ descriptor: JSON.parse(JSON.stringify(d)) });
        await emitAll(writer, Array.from({ length: 30 }, (_, seq) => ({ subpartition: seq % 2, record: makeRecord(d.partition.partitionIndex, seq % 2, seq, 20) })));
        await writer.finish();
        await writer.close();
      }
      const gate = await worker.createInputGate({ jobId: descriptors[0]!.jobId, inputs: descriptors, subpartitions: { start: 0, end: 1 } });
      try {
        const channels = await drain(gate);
        assert.equal(channels.flatMap(recordsOf).length, 120);
        assert.ok(channels.flatMap(recordsOf).every((r) => parseRecord(r).intact));
      } finally {
        await gate.close();
      }
      const listed = await master.listPartitions(descriptors[0]!.jobId);
      assert.equal(listed.length, 4, 'a master with a fixed server list asks every server');
      await master.unregisterJob(descriptors[0]!.jobId);
      assert.deepEqual(await master.listPartitions(descriptors[0]!.jobId), []);
    } finally {
      await worker.close();
      await master.close();
    }
  });

  it('refuses to start a master without the secret, naming where it looked, and bad options at once', async () => {
    await using a = await startTestServer();
    const factory = createShuffleServerServiceFactory({ servers: [a.server.url], secretEnv: 'WEFT_TEST_NO_SUCH_SECRET' });
    const master = factory.createShuffleMaster();
    const error = await rejectionOf(master.start());
    assert.ok(isShuffleError(error, 'SHF_ERR_INVALID_CONFIG'));
    assert.equal(error.context['setting'], 'WEFT_TEST_NO_SUCH_SECRET');
    await master.close();
    for (const [options, setting] of [
      [{}, 'redis'],
      [{ servers: ['ftp://x'] }, 'servers[0]'],
      [{ servers: ['http://x:1'], producerMemoryBytes: -1 }, 'producerMemoryBytes'],
      [{ servers: ['http://x:1'], compression: 'zstd' }, 'compression'],
      [{ servers: ['http://x:1'], secret: 'short' }, 'secret'],
      [{ servers: ['http://x:1'], replicas: 0 }, 'replicas'],
      [{ servers: ['http://x:1'], replicas: 9 }, 'replicas'],
      [{ servers: ['http://x:1'], replicas: 1.5 }, 'replicas'],
    ] as const) {
      const refused = (() => {
        try {
          createShuffleServerServiceFactory(options as never);
        } catch (e) {
          return e;
        }
        return undefined;
      })();
      assert.ok(isShuffleError(refused, 'SHF_ERR_INVALID_CONFIG'), `${JSON.stringify(options)} must be refused`);
      assert.equal(refused.context['setting'], setting);
    }
  });
});
