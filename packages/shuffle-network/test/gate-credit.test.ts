// The consumer's side of credit-based flow control, against a hand-written producer speaking the wire
// protocol: the gate requests its subpartitions with the exclusive credit, borrows floating buffers when a
// producer announces a backlog, announces every buffer it is done with, and lends a floating buffer it no
// longer needs to a channel waiting for one; a channel that reconnects to a new producer attempt hands it
// its exclusive credit only.
import { strict as assert } from 'node:assert';
import { type AddressInfo, type Socket, createServer } from 'node:net';
import { once } from 'node:events';
import { describe, it } from 'node:test';
import { type ShuffleDescriptor, ShuffleError, encodeEvent, END_OF_PARTITION, serializeError, taskExecutorId } from '@weft/shuffle-api';
import { createNetworkShuffleServiceFactory } from '@weft/shuffle-network';
import { FrameDecoder, FrameType, encodeBufferHeader, encodeFrame } from '../src/wire/frames.js';

/** One framed record of `n` bytes, as a buffer's content. */
function framed(n: number): Buffer {
  const out = Buffer.alloc(4 + n, 1);
  out.writeUInt32LE(n, 0);
  return out;
}

/** A hand-written producer: records every frame a gate sends it, and sends data buffers on request. */
async function fakeProducer(partitionType = 'PIPELINED_BOUNDED') {
  const frames: string[] = [];
  let wake: (() => void) | undefined;
  let producer: Socket | undefined;
  const server = createServer((socket) => {
    producer = socket;
    const decoder = new FrameDecoder(1 << 20, (type, body) => {
      if (type === FrameType.PARTITION_REQUEST) frames.push(`request ${body.readUInt32LE(0)} ${body.readUInt32LE(4)}..${body.readUInt32LE(8)} credit ${body.readUInt32LE(12)}`);
      else if (type === FrameType.ADD_CREDIT) frames.push(`credit ch${body.readUInt32LE(0)} +${body.readUInt32LE(4)} consumed ${body.readUInt32LE(8)}`);
      else frames.push(`type ${type}`);
      wake?.();
    });
    socket.on('data', (chunk: Buffer) => decoder.push(chunk));
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as AddressInfo;
  return {
    frames,
    /** Waits until the gate has sent `n` frames in all. */
    async until(n: number): Promise<void> {
      while (frames.length < n) await new Promise<void>((resolve) => (wake = resolve));
    },
    /** One data buffer of one 10-byte record on `channel`, announcing `backlog`. */
    send(channel: number, backlog: number): void {
      const payload = framed(10);
      producer!.write(Buffer.concat([encodeBufferHeader(channel, backlog, payload.length), payload]));
    },
    write(frame: Uint8Array): void {
      producer!.write(frame);
    },
    descriptor: {
      shuffleServiceId: 'network',
      jobId: 'gate-credit',
      partition: { resultId: 'g', partitionId: 'g#0', partitionIndex: 0, partitionType, numberOfSubpartitions: 2 },
      producer: { producerId: 'p#0@0', attempt: 0, taskExecutorId: 'producer' },
      details: { host: '127.0.0.1', port },
    } as unknown as ShuffleDescriptor,
    close(): void {
      producer?.destroy();
      server.close();
    },
  };
}

describe('input gate credit', () => {
  it('announces exclusive credit, borrows floating buffers for a backlog, returns each buffer it read, and lends a spare floating buffer to a waiting channel', { timeout: 10_000 }, async () => {
    const { frames, until, send, write, descriptor, close } = await fakeProducer();
    const environment = createNetworkShuffleServiceFactory({ buffersPerChannel: 2, floatingBuffersPerGate: 3 }).createShuffleEnvironment({ taskExecutorId: taskExecutorId('consumer') });
    const gate = await environment.createInputGate({ jobId: descriptor.jobId, inputs: [descriptor], subpartitions: { start: 0, end: 1 } });
    try {
      await until(1);
      assert.deepEqual(frames, ['request 0 0..1 credit 2'], 'one request for both subpartitions, with the exclusive credit');
      send(0, 4); // channel 0 has 4 more buffers queued: free 1 < 4 + 2, so it borrows all 3 floating buffers
      await until(2);
      assert.deepEqual(frames.slice(1), ['credit ch0 +3 consumed 0']);
      send(1, 2); // channel 1 wants floating buffers too, but none is left: no credit yet
      assert.equal((await gate.readBatch())?.channel, 0);
      assert.equal((await gate.readBatch())?.channel, 1); // reading on recycles channel 0's buffer: still needed, announced again
      await until(3);
      assert.deepEqual(frames.slice(2), ['credit ch0 +1 consumed 1']);
      send(0, 0); // channel 0's backlog is gone
      assert.equal((await gate.readBatch())?.channel, 0); // recycles channel 1's buffer: its exclusive credit comes back
      await until(4);
      assert.deepEqual(frames.slice(3), ['credit ch1 +1 consumed 1']);
      // channel 0 ends: the floating buffers it holds go back to the gate, and channel 1 (waiting, backlog 2,
      // free 2 of the 4 it wants) is lent exactly two of them
      write(encodeFrame(FrameType.EVENT, [0], encodeEvent(END_OF_PARTITION)));
      assert.deepEqual(await gate.readBatch(), { kind: 'event', channel: 0, event: END_OF_PARTITION });
      const toChannel1 = (): string[] => frames.slice(4).filter((f) => f.startsWith('credit ch1'));
      while (toChannel1().length < 2) await until(frames.length + 1);
      await new Promise((resolve) => setTimeout(resolve, 50));
      assert.deepEqual(toChannel1(), ['credit ch1 +1 consumed 0', 'credit ch1 +1 consumed 0']);
    } finally {
      await gate.close();
      await environment.close();
      close();
    }
  });

  it('an approximate channel that reconnects to a new producer attempt does not hand it credit the old attempt was owed', { timeout: 10_000 }, async () => {
    const { frames, until, write, descriptor, close } = await fakeProducer('PIPELINED_APPROXIMATE');
    const environment = createNetworkShuffleServiceFactory({ buffersPerChannel: 2, floatingBuffersPerGate: 3 }).createShuffleEnvironment({ taskExecutorId: taskExecutorId('consumer') });
    const gate = await environment.createInputGate({ jobId: descriptor.jobId, inputs: [descriptor], subpartitions: { start: 0, end: 0 } });
    try {
      await until(1);
      // the new attempt is at the same address: the gate's one connection carries both
      gate.updatePartitionInfo!({ ...descriptor, producer: { ...descriptor.producer, producerId: 'p#0@1', attempt: 1 } } as ShuffleDescriptor);
      const first = gate.readBatch();
      // in one write: a buffer announcing a backlog (the gate borrows floating buffers for it) and the old
      // attempt's failure
      const payload = framed(10);
      const failed = encodeFrame(FrameType.ERROR, [0], JSON.stringify(serializeError(new ShuffleError('SHF_ERR_PRODUCER_FAILED', 'attempt 0 failed'))));
      write(Buffer.concat([encodeBufferHeader(0, 4, payload.length), payload, failed]));
      assert.equal((await first)?.kind, 'records');
      const gone = await gate.readBatch();
      assert.equal(gone?.kind === 'event' && gone.event.type, 'channel-unavailable');
      await until(3);
      await new Promise((resolve) => setTimeout(resolve, 50));
      // the floating credit went to the old attempt, before its failure was read; nothing follows the new request
      assert.deepEqual(frames, ['request 0 0..0 credit 2', 'credit ch0 +3 consumed 0', 'request 0 0..0 credit 2'], 'the new attempt gets its exclusive credit only');
    } finally {
      await gate.close();
      await environment.close();
      close();
    }
  });
});
