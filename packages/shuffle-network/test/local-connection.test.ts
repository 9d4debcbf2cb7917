// A gate reading partitions its own environment serves goes over an in-process connection (LocalSocket),
// not TCP — Flink's LocalInputChannel — with the same frames and credit protocol. The pair itself: what
// one end writes the other reads, in order, copied, never inside the writer's call; ending or destroying
// one end closes the other. Then an environment: every record read from its own partitions with no TCP
// socket opened (the process's active TCPSocketWrap handles, counted), while a gate of another
// environment in the same process reads the same partition over TCP.
import { strict as assert } from 'node:assert';
import { once } from 'node:events';
import { describe, it } from 'node:test';
import { intermediateResultId, type JobId, jobId, resultPartitionId, type ShuffleDescriptor, type ShuffleEnvironment, type ShuffleMaster, taskExecutorId } from '@weft/shuffle-api';
import { type ChannelItem, drain, emitAll, makeRecord } from '@weft/shuffle-api/testing';
import { createNetworkShuffleServiceFactory } from '@weft/shuffle-network';
import { LocalSocket } from '../src/wire/local-socket.js';

/** A pipelined partition of `subpartitions` registered for job `job`, produced by environment `own` (task executor 'own'). */
async function producedBy(master: ShuffleMaster, own: ShuffleEnvironment, job: JobId, subpartitions: number): Promise<ShuffleDescriptor> {
  await master.registerJob({ jobId: job });
  const partition = { resultId: intermediateResultId('r'), partitionId: resultPartitionId('r', 0), partitionIndex: 0, partitionType: 'PIPELINED_BOUNDED' as const, numberOfSubpartitions: subpartitions };
  return master.registerPartitionWithProducer({ jobId: job, partition, producer: { producerId: 'p#0@0' as never, attempt: 0, taskExecutorId: taskExecutorId('own'), location: own.location } });
}

const turn = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));
const tcpSockets = (): number => process.getActiveResourcesInfo().filter((r) => r === 'TCPSocketWrap').length;

describe('local connections', { timeout: 20_000 }, () => {
  it('delivers writes in order, copied, never inside the write call', async () => {
    const [a, b] = LocalSocket.pair();
    const got: Buffer[] = [];
    b.on('data', (chunk: Buffer) => got.push(chunk));
    const reused = Buffer.from('first');
    let called = false;
    a.cork();
    a.write(reused, () => {
      called = true;
    });
    a.write(Buffer.from('+second'));
    process.nextTick(() => a.uncork());
    await turn();
    await turn();
    assert.ok(called, "the write's callback ran");
    reused.write('XXXXX'); // the writer's buffer is its own again once its callback ran
    const third = Buffer.from('third');
    a.write(third, () => third.write('YYYYY'));
    assert.equal(got.length, 1, 'nothing is delivered inside the write call');
    await turn();
    await turn();
    assert.deepEqual(got.map((c) => c.toString()), ['first+second', 'third']);
    a.destroy();
    await once(b, 'close');
  });

  it('ends the other end after what was written, and closes both', async () => {
    const [a, b] = LocalSocket.pair();
    const got: string[] = [];
    b.on('data', (chunk: Buffer) => got.push(chunk.toString()));
    const closed = [once(a, 'close'), once(b, 'close')];
    a.write('last words');
    a.end();
    await once(b, 'end');
    await Promise.all(closed);
    assert.deepEqual(got, ['last words']);
  });

  it('destroying one end closes the other, dropping what it had not delivered', async () => {
    const [a, b] = LocalSocket.pair();
    const got: string[] = [];
    b.on('data', (chunk: Buffer) => got.push(chunk.toString()));
    a.write('never read');
    a.destroy();
    await once(b, 'close');
    assert.deepEqual(got, []);
  });

  it('lets the event loop turn while a producer and a gate of one environment trade data and credit: a timer fires before the stream ends', async () => {
    const factory = createNetworkShuffleServiceFactory();
    const own = factory.createShuffleEnvironment({ taskExecutorId: taskExecutorId('own') });
    const master = factory.createShuffleMaster();
    try {
      await own.start();
      const job = jobId('turns');
      const descriptor = await producedBy(master, own, job, 1);
      const writer = await own.createResultPartitionWriter({ descriptor });
      const gate = await own.createInputGate({ jobId: job, inputs: [descriptor], subpartitions: { start: 0, end: 0 } });
      let timerFired = false;
      let stop = false;
      const timer = setTimeout(() => {
        timerFired = true;
        stop = true;
      }, 5);
      // an endless source that waits only when the writer says so, capped by records (not by time): when
      // every hop ran from the nextTick queue, the timer never fired before the cap (19 M records in 3 s)
      const cap = 3_000_000;
      let sent = 0;
      const record = makeRecord(0, 0, 0, 200);
      const produce = (async () => {
        while (!stop && sent < cap) {
          sent++;
          if (!writer.emitRecord(record, 0)) await writer.ready();
        }
        await writer.finish();
      })();
      let read = 0;
      for (let batch = await gate.readBatch(); batch !== null; batch = await gate.readBatch()) if (batch.kind === 'records') read += batch.records.length;
      await produce;
      clearTimeout(timer);
      assert.ok(timerFired && sent < cap, `the timer fired only after ${sent} records`);
      assert.equal(read, sent);
      await gate.close();
      await writer.close();
    } finally {
      await own.close();
    }
  });

  it("reads its own environment's partition without a TCP socket; another environment's gate reads the same over TCP", async () => {
    const factory = createNetworkShuffleServiceFactory();
    const own = factory.createShuffleEnvironment({ taskExecutorId: taskExecutorId('own') });
    const other = factory.createShuffleEnvironment({ taskExecutorId: taskExecutorId('other') });
    const master = factory.createShuffleMaster();
    try {
      await own.start();
      await other.start();
      const job = jobId('local');
      const descriptor = await producedBy(master, own, job, 2);
      const writer = await own.createResultPartitionWriter({ descriptor });
      const before = tcpSockets();
      const local = await own.createInputGate({ jobId: job, inputs: [descriptor], subpartitions: { start: 0, end: 0 } });
      const remote = await other.createInputGate({ jobId: job, inputs: [descriptor], subpartitions: { start: 1, end: 1 } });
      const records = Array.from({ length: 2000 }, (_, i) => ({ subpartition: i % 2, record: makeRecord(i % 2, i, 100) }));
      const [, localRead, remoteRead] = await Promise.all([
        (async () => {
          await emitAll(writer, records);
          await writer.finish();
          await writer.close();
        })(),
        drain(local),
        drain(remote),
      ]);
      // read to the end, both gates still open: the remote gate's connection (its client and the server's accepted end), none for the local one
      assert.equal(tcpSockets() - before, 2, 'TCP sockets opened by the two gates');
      const bytes = (channels: ChannelItem[][]): string[] => channels[0]!.flatMap((item) => (item.kind === 'record' ? [Buffer.from(item.record).toString('hex')] : []));
      assert.deepEqual(bytes(localRead), records.filter((r) => r.subpartition === 0).map((r) => Buffer.from(r.record).toString('hex')));
      assert.deepEqual(bytes(remoteRead), records.filter((r) => r.subpartition === 1).map((r) => Buffer.from(r.record).toString('hex')));
      await local.close();
      await remote.close();
    } finally {
      await own.close();
      await other.close();
    }
  });
});
