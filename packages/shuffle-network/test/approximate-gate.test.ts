// PIPELINED_APPROXIMATE through network shuffle environments in this process, over TCP between loopback
// addresses — and again with the consumer in the producer's own environment, over the in-process
// connection (LocalSocket), as a task restarted on its producer's worker reads: a consumer that goes away and is replaced (producer side), and a producer attempt that fails
// and is replaced, named to the gate by updatePartitionInfo (consumer side), and the reconnect timeout.
import { strict as assert } from 'node:assert';
import { describe, it } from 'node:test';
import { type InputGate, type ShuffleDescriptor, isShuffleError, taskExecutorId } from '@weft/shuffle-api';
import { type ChannelItem, drain, emitAll, makeRecord, parseRecord, registerPartition, rejectionOf, thrownBy } from '@weft/shuffle-api/testing';
import { type NetworkShuffleOptions, createNetworkShuffleServiceFactory } from '@weft/shuffle-network';

/** `local`: the consumer is the first producer's environment (its gates read `first` in process). */
async function setUp(local: boolean, options: NetworkShuffleOptions, consumerOptions: NetworkShuffleOptions = {}) {
  const producers = createNetworkShuffleServiceFactory({ ...options, ...(local ? consumerOptions : {}), host: '127.0.0.2' });
  const master = producers.createShuffleMaster();
  await master.start();
  const first = producers.createShuffleEnvironment({ taskExecutorId: taskExecutorId('first') });
  const second = createNetworkShuffleServiceFactory({ ...options, host: '127.0.0.3' }).createShuffleEnvironment({ taskExecutorId: taskExecutorId('second') });
  const consumer = local ? first : createNetworkShuffleServiceFactory({ ...options, ...consumerOptions, host: '127.0.0.4' }).createShuffleEnvironment({ taskExecutorId: taskExecutorId('consumer') });
  await Promise.all([first.start(), second.start(), consumer.start()]);
  master.registerTaskExecutor(second.address);
  return {
    master,
    first,
    second,
    consumer,
    async close() {
      await Promise.allSettled([consumer.close(), first.close(), second.close()]);
      await master.close();
    },
  };
}

const records = (from: number, to: number, producer = 0) => Array.from({ length: to - from }, (_, i) => ({ subpartition: 0, record: makeRecord(producer, 0, from + i, 50) }));

/** A channel's items as short strings: a record's seq (with `!` when not intact), or the event. */
const show = (items: readonly ChannelItem[] | undefined): string[] =>
  (items ?? []).map((item) => {
    if (item.kind === 'record') {
      const r = parseRecord(item.record);
      return `${r.seq}${r.intact && r.payloadBytes === 50 ? '' : '!'}`;
    }
    if (item.event.type === 'channel-resumed') return `resumed:${item.event.recordPosition}`;
    return item.event.type === 'channel-unavailable' ? `unavailable:${item.event.partialRecordBytes}` : item.event.type;
  });

for (const local of [false, true]) describe(`PIPELINED_APPROXIMATE over the network shuffle, ${local ? "the consumer in the producer's environment (in-process connection)" : 'over TCP'}`, { timeout: 30_000 }, () => {
  it('a consumer that goes away is replaced by a new gate on the same subpartition, which reads whole records only; the producer never waits for the gone one', async () => {
    const h = await setUp(local, { bufferSizeBytes: 64, buffersPerPartition: 4, buffersPerChannel: 1, floatingBuffersPerGate: 0 });
    try {
      const descriptor = await registerPartition(h.master, { jobId: 'approx-net-up', resultId: 'r', index: 0, type: 'PIPELINED_APPROXIMATE', subpartitions: 1, taskExecutorId: 'first' });
      const writer = await h.first.createResultPartitionWriter({ descriptor });
      const gateRequest = { jobId: descriptor.jobId, inputs: [descriptor], subpartitions: { start: 0, end: 0 } };
      const firstGate = await h.consumer.createInputGate(gateRequest);
      // 62-byte records (header + 12 + 50) in 64-byte buffers: almost every record spans two buffers; the
      // pool holds 4: the writer waits for the first gate, which reads one batch and leaves
      const emitting = emitAll(writer, records(0, 60));
      const seen: number[] = [];
      while (seen.length === 0) {
        const batch = await firstGate.readBatch();
        if (batch?.kind === 'records') for (const r of batch.records) seen.push(parseRecord(r).seq);
      }
      await firstGate.close();
      await emitting; // nobody reads: dropped once the producer sees the connection close
      const secondGate = await h.consumer.createInputGate(gateRequest);
      const draining = drain(secondGate);
      // its partition request crosses a connection: what is written before it arrives is dropped too
      while (h.first.approximateLosses(descriptor.jobId).reconnects === 0) await new Promise((resolve) => setTimeout(resolve, 5));
      await emitAll(writer, records(60, 70));
      await writer.finish();
      const [channel] = await draining;
      const got = show(channel);
      assert.ok(got.every((s) => !s.endsWith('!')), `every record whole: ${got.join(',')}`);
      assert.equal(got.at(-1), 'end-of-partition');
      const seqs = got.slice(1, -1).map(Number);
      // first, where in the subpartition it starts: its first record's seq (records are numbered from 0 as written)
      assert.equal(got[0], `resumed:${seqs[0]}`);
      // the first gate had credit for one buffer at a time: it got buffer 0 (record 0's head) and buffer 1
      // (record 0's tail, record 1's head) and left; record 1 went with it, the producer dropped the rest
      // (queued or written while no consumer was there) until the second gate came
      assert.deepEqual(seen, [0]);
      const from = seqs[0]!;
      assert.deepEqual(seqs, Array.from({ length: 70 - from }, (_, i) => from + i), 'every record from the first whole one on, in order, none twice');
      assert.ok(from <= 61, `record 61 on, written after the new gate subscribed, is there (from ${from})`);
      const losses = h.first.approximateLosses(descriptor.jobId);
      assert.deepEqual({ ...losses, partialRecordsSkipped: 0 }, { reconnects: 1, buffersDropped: losses.buffersDropped, recordsDropped: from - 2, partialRecordsSkipped: 0, recordsLost: from - 1 }, 'records 2 .. from - 1 dropped, and record 1 (its head with the first gate) lost, counted');
      assert.ok(losses.partialRecordsSkipped <= 1);
      await writer.close();
      await secondGate.close();
    } finally {
      await h.close();
    }
  });

  it('upstream backup: a new gate that resumes from a record the log holds gets every record from it on over the wire, once, nothing dropped; one whose position is gone gets the live stream', async () => {
    for (const { resumeFrom, replayBytes } of [{ resumeFrom: 1, replayBytes: undefined }, { resumeFrom: 1, replayBytes: 128 }]) {
      const h = await setUp(local, { bufferSizeBytes: 64, buffersPerPartition: 4, buffersPerChannel: 1, floatingBuffersPerGate: 0, ...(replayBytes === undefined ? {} : { approximateReplayBytes: replayBytes }) });
      try {
        const descriptor = await registerPartition(h.master, { jobId: 'approx-net-replay', resultId: 'r', index: 0, type: 'PIPELINED_APPROXIMATE', subpartitions: 1, taskExecutorId: 'first' });
        const writer = await h.first.createResultPartitionWriter({ descriptor });
        const gateRequest = { jobId: descriptor.jobId, inputs: [descriptor], subpartitions: { start: 0, end: 0 } };
        const firstGate = await h.consumer.createInputGate(gateRequest);
        // the backup starts at the first barrier (a subpartition that never carried one keeps nothing)
        writer.broadcastEvent({ type: 'checkpoint-barrier', id: 1, timestampMs: 0 });
        const emitting = emitAll(writer, records(0, 60));
        const seen: number[] = [];
        while (seen.length === 0) {
          const batch = await firstGate.readBatch();
          if (batch?.kind === 'records') for (const r of batch.records) seen.push(parseRecord(r).seq);
        }
        await firstGate.close();
        await emitting;
        // the first gate's state read record 0 (as the first test shows, record 1's head went with it unread)
        const secondGate = await h.consumer.createInputGate({ ...gateRequest, resumeFrom: [resumeFrom] });
        const draining = drain(secondGate);
        while (h.first.approximateLosses(descriptor.jobId).reconnects === 0) await new Promise((resolve) => setTimeout(resolve, 5));
        await emitAll(writer, records(60, 70));
        await writer.finish();
        const got = show((await draining)[0]);
        assert.ok(got.every((s) => !s.endsWith('!')), `every record whole: ${got.join(',')}`);
        const seqs = got.slice(1, -1).map(Number);
        const losses = h.first.approximateLosses(descriptor.jobId);
        if (replayBytes === undefined) {
          assert.deepEqual(got, ['resumed:1', ...Array.from({ length: 69 }, (_, i) => String(1 + i)), 'end-of-partition'], 'records 1..69: the one in flight to the gone gate, the dropped ones, the live ones');
          assert.deepEqual(losses, { reconnects: 1, buffersDropped: 0, recordsDropped: 0, partialRecordsSkipped: 0, recordsLost: 0 });
        } else {
          // two buffers of log: record 1 went with the oldest copies, so the gate gets the next whole record written
          assert.ok(seqs[0]! > 1 && got[0] === `resumed:${seqs[0]}`, got.join(','));
          assert.ok(losses.recordsLost > 0, JSON.stringify(losses));
        }
        await writer.close();
        await secondGate.close();
      } finally {
        await h.close();
      }
    }
  });

  it("a failed producer: its channel gets channel-unavailable and drops its partial record, the other channel reads on, and the new attempt named by updatePartitionInfo is read", async () => {
    const h = await setUp(local, { bufferSizeBytes: 64, buffersPerPartition: 8 });
    try {
      const job = 'approx-net-down';
      const a = await registerPartition(h.master, { jobId: job, resultId: 'a', index: 0, type: 'PIPELINED_APPROXIMATE', subpartitions: 1, taskExecutorId: 'first' });
      const b = await registerPartition(h.master, { jobId: job, resultId: 'b', index: 0, type: 'PIPELINED_APPROXIMATE', subpartitions: 1, taskExecutorId: 'first' });
      const gate = await h.consumer.createInputGate({ jobId: a.jobId, inputs: [a, b], subpartitions: { start: 0, end: 0 }, consumerId: 'consumer-0' });
      const draining = drain(gate);
      const writerA = await h.first.createResultPartitionWriter({ descriptor: a });
      const writerB = await h.first.createResultPartitionWriter({ descriptor: b });
      await emitAll(writerA, records(0, 6));
      await writerA.fail(new Error('producer a failed'));
      await emitAll(writerB, records(0, 4, 1));
      await writerB.finish();
      // the producer's new attempt, on another task executor; the job master names it to the consumer's
      // environment, which tells the gates that read it
      const a2 = await registerPartition(h.master, { jobId: job, resultId: 'a', index: 0, type: 'PIPELINED_APPROXIMATE', subpartitions: 1, attempt: 1, taskExecutorId: 'second' });
      assert.equal(h.consumer.updatePartitionInfo(a2, 'another-consumer'), 0, 'no gate of that consumer here');
      assert.equal(h.consumer.updatePartitionInfo(a2, 'consumer-0'), 1);
      assert.equal(h.consumer.updatePartitionInfo(a2), 1, 'twice: the gate ignores the attempt it reads already');
      const writerA2 = await h.second.createResultPartitionWriter({ descriptor: a2 });
      await emitAll(writerA2, records(100, 103));
      await writerA2.finish();
      const [fromA, fromB] = await draining;
      // each 66-byte frame (header + 62) pushes the next 2 bytes further into its buffer: record 5's header
      // starts at byte 10 of a buffer, so 64 - 14 = 50 of its bytes had arrived when a failed
      assert.deepEqual(show(fromA), ['0', '1', '2', '3', '4', 'unavailable:50', '100', '101', '102', 'end-of-partition']);
      assert.deepEqual(show(fromB), ['0', '1', '2', '3', 'end-of-partition'], 'the other channel is untouched');
      assert.deepEqual(gate.approximateLosses, { channelsUnavailable: 1, partialRecordsDiscarded: 1, partialRecordBytesDiscarded: 50, reconnects: 1 });
      await Promise.all([writerA.close(), writerB.close(), writerA2.close(), gate.close()]);
    } finally {
      await h.close();
    }
  });

  it('a new attempt named before the old one is seen to go is read once it goes; one never named fails the read after reconnectTimeoutMs, naming the partition', async () => {
    const h = await setUp(local, { bufferSizeBytes: 64 }, { reconnectTimeoutMs: 100 });
    try {
      const job = 'approx-net-timeout';
      const a = await registerPartition(h.master, { jobId: job, resultId: 'a', index: 0, type: 'PIPELINED_APPROXIMATE', subpartitions: 1, taskExecutorId: 'first' });
      const b = await registerPartition(h.master, { jobId: job, resultId: 'b', index: 0, type: 'PIPELINED_APPROXIMATE', subpartitions: 1, taskExecutorId: 'first' });
      const gate: InputGate = await h.consumer.createInputGate({ jobId: a.jobId, inputs: [a, b], subpartitions: { start: 0, end: 0 } });
      const writerA = await h.first.createResultPartitionWriter({ descriptor: a });
      const writerB = await h.first.createResultPartitionWriter({ descriptor: b });
      // a's new attempt is named while the gate still reads the old one
      const a2: ShuffleDescriptor = await registerPartition(h.master, { jobId: job, resultId: 'a', index: 0, type: 'PIPELINED_APPROXIMATE', subpartitions: 1, attempt: 1, taskExecutorId: 'second' });
      gate.updatePartitionInfo!(a2);
      const writerA2 = await h.second.createResultPartitionWriter({ descriptor: a2 });
      await emitAll(writerA, records(0, 2)); // record 0 whole at the consumer, record 1's head
      await writerA.fail(new Error('a failed'));
      await emitAll(writerA2, records(10, 11));
      await writerA2.finish();
      await emitAll(writerB, records(0, 2, 1));
      const items: string[] = [];
      const readUntil = async (done: () => boolean): Promise<void> => {
        while (!done()) {
          const batch = await gate.readBatch();
          if (batch === null) return;
          if (batch.kind === 'records') items.push(...batch.records.map((r) => `${batch.channel}:${parseRecord(r).seq}`));
          else items.push(`${batch.channel}:${batch.event.type}`);
        }
      };
      await readUntil(() => items.includes('0:end-of-partition') && items.includes('1:0'));
      assert.deepEqual(items.filter((s) => s.startsWith('0:')), ['0:0', '0:channel-unavailable', '0:10', '0:end-of-partition']);
      await writerB.fail(new Error('b failed, and no new attempt of it comes'));
      const error = await rejectionOf(readUntil(() => false));
      assert.ok(isShuffleError(error, 'SHF_ERR_TIMEOUT'), String(error));
      assert.equal(error.retryable, true);
      assert.equal(error.context?.['partitionId'], b.partition.partitionId);
      assert.match(error.message, /reconnectTimeoutMs/);
      assert.deepEqual(items.filter((s) => s.startsWith('1:')), ['1:0', '1:channel-unavailable']);
      await Promise.all([writerA.close(), writerB.close(), writerA2.close(), gate.close()]);
    } finally {
      await h.close();
    }
  });

  it('updatePartitionInfo refuses a partition the gate does not read, and one that is not approximate', async () => {
    const h = await setUp(local, {});
    try {
      const a = await registerPartition(h.master, { jobId: 'approx-net-bad', resultId: 'a', index: 0, type: 'PIPELINED', subpartitions: 1, taskExecutorId: 'first' });
      const other = await registerPartition(h.master, { jobId: 'approx-net-bad', resultId: 'x', index: 0, type: 'PIPELINED_APPROXIMATE', subpartitions: 1, taskExecutorId: 'first' });
      const gate = await h.consumer.createInputGate({ jobId: a.jobId, inputs: [a], subpartitions: { start: 0, end: 0 } });
      const notRead = thrownBy(() => gate.updatePartitionInfo!(other));
      assert.ok(isShuffleError(notRead, 'SHF_ERR_INVALID_ARGUMENT') && notRead.message.includes(other.partition.partitionId), String(notRead));
      const plain = thrownBy(() => gate.updatePartitionInfo!(a));
      assert.ok(isShuffleError(plain, 'SHF_ERR_INVALID_ARGUMENT') && /PIPELINED_APPROXIMATE/.test(plain.message), String(plain));
      await gate.close();
    } finally {
      await h.close();
    }
  });
});
