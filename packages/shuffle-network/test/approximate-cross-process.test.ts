// PIPELINED_APPROXIMATE between processes: a consumer in this process reads two approximate partitions,
// each produced in a child process of its own (another "host"). The producer of one is SIGKILLed in the
// middle of a record; its channel delivers channel-unavailable and drops that record's part, the other
// channel keeps flowing to its end meanwhile, and a new attempt of the killed producer, in a third
// process, is named to the gate (updatePartitionInfo, as a job master does) and read from its first record.
import { strict as assert } from 'node:assert';
import { describe, it } from 'node:test';
import { type GateBatch, taskExecutorId } from '@weft/shuffle-api';
import { parseRecord, registerPartition } from '@weft/shuffle-api/testing';
import { createNetworkShuffleServiceFactory } from '@weft/shuffle-network';
import { startProducer } from './helpers/producer-processes.js';

// The fixture writes records of 12 + 100 bytes (116 framed) into 32 KiB buffers: 282 lie whole in the
// first buffer, and record 282 starts at byte 32712 of it — its header and 52 bytes are in the buffer
// sent, the other 60 in the one the writer still fills when its process dies.
const WHOLE_IN_FIRST_BUFFER = 282;
const PARTIAL_BYTES = 32_768 - 282 * 116 - 4;

describe('PIPELINED_APPROXIMATE across processes', { timeout: 60_000 }, () => {
  it('a SIGKILLed producer: its channel drops the partial record and picks up the new attempt in another process; the other channel flows on meanwhile', async () => {
    const factory = createNetworkShuffleServiceFactory({ host: '127.0.0.1' });
    const master = factory.createShuffleMaster();
    const consumer = factory.createShuffleEnvironment({ taskExecutorId: taskExecutorId('consumer') });
    const [doomed, other, successor] = await Promise.all([startProducer('127.0.0.5', 'producer-a'), startProducer('127.0.0.6', 'producer-b'), startProducer('127.0.0.7', 'producer-a2')]);
    try {
      await master.start();
      for (const p of [doomed, other, successor]) master.registerTaskExecutor(p.address);
      const job = `approx-xproc-${process.pid}`;
      const a = await registerPartition(master, { jobId: job, resultId: 'a', index: 0, type: 'PIPELINED_APPROXIMATE', subpartitions: 1, taskExecutorId: 'producer-a' });
      const b = await registerPartition(master, { jobId: job, resultId: 'b', index: 0, type: 'PIPELINED_APPROXIMATE', subpartitions: 1, taskExecutorId: 'producer-b' });
      const gate = await consumer.createInputGate({ jobId: a.jobId, inputs: [a, b], subpartitions: { start: 0, end: 0 } });
      // the consumer: every item of each channel, records as `seq` (`seq!` when damaged), events by type
      const channels: string[][] = [[], []];
      let wake = (): void => {};
      const note = (batch: GateBatch): void => {
        const into = channels[batch.channel]!;
        if (batch.kind === 'records') for (const r of batch.records) into.push(`${parseRecord(r).seq}${parseRecord(r).intact ? '' : '!'}`);
        else into.push(batch.event.type === 'channel-unavailable' ? `unavailable:${batch.event.partialRecordBytes}` : batch.event.type);
      };
      const reading = (async () => {
        for (let batch = await gate.readBatch(); batch !== null; batch = await gate.readBatch()) {
          note(batch);
          wake();
        }
      })();
      let finished = false;
      void reading.then(
        () => (finished = true),
        () => (finished = true),
      );
      const until = async (done: () => boolean): Promise<void> => {
        while (!done()) {
          if (finished) await reading.then(() => assert.fail(`the gate ended first; last items: ${JSON.stringify(channels.map((c) => c.slice(-3)))}`));
          await Promise.race([new Promise<void>((resolve) => (wake = resolve)), reading]);
        }
      };
      try {
        // a writes 283 records and stops inside record 282, unflushed; once its channel holds the 282 whole
        // ones (and the head of record 282), its process is killed
        doomed.child.send({ op: 'stall', descriptor: a, records: WHOLE_IN_FIRST_BUFFER + 1, flush: false });
        await until(() => channels[0]!.length >= WHOLE_IN_FIRST_BUFFER);
        await doomed.stop();
        await until(() => channels[0]!.includes(`unavailable:${PARTIAL_BYTES}`));
        // no new attempt of a yet: b is produced and read to its end while a's channel waits
        other.child.send({ op: 'produce', descriptor: b, records: 500, payloadBytes: 100, barrierAt: 250 });
        await until(() => channels[1]!.includes('end-of-partition'));
        assert.equal(channels[0]!.at(-1), `unavailable:${PARTIAL_BYTES}`, "a's channel has nothing new while b flows");
        // the job master restarts a's producer in another process and tells the consumer where it is
        const a2 = await registerPartition(master, { jobId: job, resultId: 'a', index: 0, type: 'PIPELINED_APPROXIMATE', subpartitions: 1, attempt: 1, taskExecutorId: 'producer-a2' });
        gate.updatePartitionInfo!(a2);
        successor.child.send({ op: 'produce', descriptor: a2, records: 300, payloadBytes: 100, barrierAt: 100 });
        await reading;
        await successor.next('produced');
        const seqs = (from: number, to: number): string[] => Array.from({ length: to - from }, (_, i) => String(from + i));
        assert.deepEqual(channels[0], [
          ...seqs(0, WHOLE_IN_FIRST_BUFFER),
          `unavailable:${PARTIAL_BYTES}`,
          ...seqs(0, 100),
          'checkpoint-barrier',
          ...seqs(100, 300),
          'end-of-partition',
        ], 'attempt 0: every whole record, the partial one dropped; attempt 1: all of it');
        assert.deepEqual(channels[1], [...seqs(0, 250), 'checkpoint-barrier', ...seqs(250, 500), 'end-of-partition'], 'the other channel: all of it');
        // what attempt 0 wrote and the consumer did not get: exactly the partial record it counted
        const delivered = channels[0]!.indexOf(`unavailable:${PARTIAL_BYTES}`);
        assert.equal(WHOLE_IN_FIRST_BUFFER + 1 - delivered, gate.approximateLosses!.partialRecordsDiscarded);
        assert.deepEqual(gate.approximateLosses, { channelsUnavailable: 1, partialRecordsDiscarded: 1, partialRecordBytesDiscarded: PARTIAL_BYTES, reconnects: 1 });
      } finally {
        await gate.close();
      }
    } finally {
      await consumer.close();
      await master.close();
      await Promise.all([doomed, other, successor].map((p) => p.stop()));
    }
  });
});
