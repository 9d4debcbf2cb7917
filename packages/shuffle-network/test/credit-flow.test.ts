// The wire protocol seen from a bare TCP client standing in for a consumer: a producer sends data buffers
// only against the credit the consumer announced, announces its backlog with each, sends events without
// credit, and keeps its pool slots until the consumer reports buffers consumed.
import { strict as assert } from 'node:assert';
import { connect, type Socket } from 'node:net';
import { once } from 'node:events';
import { describe, it } from 'node:test';
import { type ShuffleDescriptor, taskExecutorId } from '@weft/shuffle-api';
import { makeRecord, registerPartition } from '@weft/shuffle-api/testing';
import { createNetworkShuffleServiceFactory } from '@weft/shuffle-network';
import { FrameDecoder, FrameType, encodeFrame } from '../src/wire/frames.js';

interface Received {
  readonly type: number;
  readonly channel: number;
  readonly backlog?: number;
}

/** A raw connection to a producer that records every frame it gets. */
async function rawConsumer(address: { host: string; port: number }): Promise<{ socket: Socket; frames: Received[]; waitFor(n: number): Promise<void> }> {
  const socket = connect(address);
  await once(socket, 'connect');
  const frames: Received[] = [];
  let wake: (() => void) | undefined;
  const decoder = new FrameDecoder(1 << 26, (type, body) => {
    frames.push(type === FrameType.BUFFER ? { type, channel: body.readUInt32LE(0), backlog: body.readUInt32LE(4) } : { type, channel: body.readUInt32LE(0) });
    wake?.();
  });
  socket.on('data', (chunk: Buffer) => decoder.push(chunk));
  return {
    socket,
    frames,
    async waitFor(n) {
      while (frames.length < n) await new Promise<void>((resolve) => (wake = resolve));
    },
  };
}

/** Lets the producer's server act on what it received, then says whether nothing more arrived. */
async function quiet(): Promise<void> {
  await new Promise((resolve) => setTimeout(resolve, 100));
}

describe('credit-based flow control on the wire', () => {
  it('sends one data buffer per credit with its backlog, events without credit, and more only when credit is announced', async () => {
    const factory = createNetworkShuffleServiceFactory({ bufferSizeBytes: 1024, buffersPerPartition: 8 });
    const master = factory.createShuffleMaster();
    const environment = factory.createShuffleEnvironment({ taskExecutorId: taskExecutorId('conformance') });
    await environment.start();
    const descriptor: ShuffleDescriptor = await registerPartition(master, { jobId: 'credit', resultId: 'c', index: 0, type: 'PIPELINED_BOUNDED', subpartitions: 1 });
    const writer = await environment.createResultPartitionWriter({ descriptor });
    const consumer = await rawConsumer(environment.address);
    try {
      // 5 full buffers of 1 KiB (one record of 1020 bytes each), then an event
      for (let seq = 0; seq < 5; seq++) writer.emitRecord(new Uint8Array(1020), 0);
      writer.broadcastEvent({ type: 'end-of-data' });
      const request = JSON.stringify({ jobId: descriptor.jobId, partitionId: descriptor.partition.partitionId, producerId: descriptor.producer.producerId });
      consumer.socket.write(encodeFrame(FrameType.PARTITION_REQUEST, [7, 0, 0, 2], request));
      await consumer.waitFor(2);
      await quiet();
      assert.deepEqual(consumer.frames, [
        { type: FrameType.BUFFER, channel: 7, backlog: 4 },
        { type: FrameType.BUFFER, channel: 7, backlog: 3 },
      ], 'two credits: exactly two buffers, each announcing the backlog behind it');
      // the producer's pool still counts the two buffers the consumer holds
      assert.equal(writer.metrics.bufferedBytes, 5 * 1024);
      consumer.socket.write(encodeFrame(FrameType.ADD_CREDIT, [7, 1, 2]));
      await consumer.waitFor(3);
      await quiet();
      assert.deepEqual(consumer.frames.slice(2), [{ type: FrameType.BUFFER, channel: 7, backlog: 2 }]);
      assert.equal(writer.metrics.bufferedBytes, 3 * 1024, 'two buffers reported consumed: their slots are free');
      consumer.socket.write(encodeFrame(FrameType.ADD_CREDIT, [7, 2, 1]));
      await consumer.waitFor(6);
      assert.deepEqual(consumer.frames.slice(3), [
        { type: FrameType.BUFFER, channel: 7, backlog: 1 },
        { type: FrameType.BUFFER, channel: 7, backlog: 0 },
        { type: FrameType.EVENT, channel: 7 },
      ], 'the event follows the last buffer and needs no credit');
      await writer.finish();
      await consumer.waitFor(7);
      assert.deepEqual(consumer.frames[6], { type: FrameType.EVENT, channel: 7 }, 'end-of-partition, without credit');
    } finally {
      consumer.socket.destroy();
      await writer.close();
      await environment.close();
      await master.close();
    }
  });

  it('makes the producer wait once its pool is used up by buffers a consumer has not consumed, and go on once they are', async () => {
    const factory = createNetworkShuffleServiceFactory({ bufferSizeBytes: 1024, buffersPerPartition: 4, buffersPerChannel: 2, floatingBuffersPerGate: 0 });
    const master = factory.createShuffleMaster();
    const environment = factory.createShuffleEnvironment({ taskExecutorId: taskExecutorId('conformance') });
    // the consumer in an environment of its own: over TCP (the producer's own would connect in process)
    const reader = factory.createShuffleEnvironment({ taskExecutorId: taskExecutorId('reader') });
    await environment.start();
    await reader.start();
    const descriptor = await registerPartition(master, { jobId: 'pool', resultId: 'p', index: 0, type: 'PIPELINED_BOUNDED', subpartitions: 1 });
    const writer = await environment.createResultPartitionWriter({ descriptor });
    const gate = await reader.createInputGate({ jobId: descriptor.jobId, inputs: [descriptor], subpartitions: { start: 0, end: 0 } });
    try {
      let accepted = 0;
      while (writer.emitRecord(makeRecord(0, 0, accepted, 1008), 0)) accepted++;
      assert.equal(accepted, 3, 'a pool of 4 buffers of 1 KiB takes 4 records of 1020 bytes, the last one answered false');
      let resumed = false;
      const ready = writer.ready().then(() => (resumed = true));
      await quiet();
      assert.equal(resumed, false, 'nothing was consumed yet: two buffers sit with the consumer, two wait for credit');
      const first = await gate.readBatch();
      assert.equal(first?.kind, 'records');
      await gate.readBatch(); // reading on recycles the first buffer: the consumer reports it consumed
      await ready;
      assert.equal(resumed, true);
    } finally {
      await gate.close();
      await writer.close();
      await reader.close();
      await environment.close();
      await master.close();
    }
  });
});
