// flushTimeoutMs (Flink's execution.buffer-timeout) over TCP: a record in a partly filled buffer of a
// pipelined partition reaches a reader with no further write — once the buffer is that old, or at once with 0.
import { strict as assert } from 'node:assert';
import { describe, it } from 'node:test';
import { taskExecutorId } from '@weft/shuffle-api';
import { makeRecord, parseRecord, registerPartition } from '@weft/shuffle-api/testing';
import { createNetworkShuffleServiceFactory } from '@weft/shuffle-network';

async function oneRecordArrives(flushTimeoutMs: number): Promise<number[]> {
  const factory = createNetworkShuffleServiceFactory({ flushTimeoutMs });
  const master = factory.createShuffleMaster();
  const environment = factory.createShuffleEnvironment({ taskExecutorId: taskExecutorId('conformance') });
  // the reader's own environment: its gate reaches the producer over TCP (its own would connect in process)
  const reader = factory.createShuffleEnvironment({ taskExecutorId: taskExecutorId('reader') });
  await environment.start();
  await reader.start();
  try {
    const descriptor = await registerPartition(master, { jobId: `flush-${flushTimeoutMs}`, resultId: 'f', index: 0, type: 'PIPELINED_BOUNDED', subpartitions: 1 });
    const writer = await environment.createResultPartitionWriter({ descriptor });
    const gate = await reader.createInputGate({ jobId: descriptor.jobId, inputs: [descriptor], subpartitions: { start: 0, end: 0 } });
    writer.emitRecord(makeRecord(0, 0, 3, 10), 0);
    // nothing more is written, flushed or finished: only the timeout sends the buffer (the guard only stops a hang)
    let guard: ReturnType<typeof setTimeout> | undefined;
    const batch = await Promise.race([gate.readBatch(), new Promise<'hung'>((resolve) => (guard = setTimeout(() => resolve('hung'), 10_000)))]);
    clearTimeout(guard);
    assert.notEqual(batch, 'hung', 'the record never arrived');
    assert.ok(batch !== null && batch !== 'hung' && batch.kind === 'records', `expected records, got ${JSON.stringify(batch)}`);
    await writer.finish();
    await writer.close();
    await gate.close();
    return batch.records.map((r) => parseRecord(r).seq);
  } finally {
    await reader.close();
    await environment.close();
    await master.close();
  }
}

describe('network shuffle flushTimeoutMs', () => {
  it('sends a partly filled buffer once it is flushTimeoutMs old, with no further write', async () => {
    assert.deepEqual(await oneRecordArrives(20), [3]);
  });

  it('sends every record at once with 0', async () => {
    assert.deepEqual(await oneRecordArrives(0), [3]);
  });
});
