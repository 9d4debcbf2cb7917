// flushTimeoutMs (Flink's execution.buffer-timeout): a record in a partly filled buffer of a pipelined
// partition reaches its reader with no further write, once the buffer is that old — or at once with 0.
import { strict as assert } from 'node:assert';
import { describe, it } from 'node:test';
import { isShuffleError, taskExecutorId } from '@weft/shuffle-api';
import { makeRecord, parseRecord, registerPartition } from '@weft/shuffle-api/testing';
import { createMemoryShuffleServiceFactory } from '@weft/shuffle-memory';

/** Writes one small record to a pipelined partition (32 KiB buffers: far from full) and reads what arrives, writing nothing more. */
async function oneRecordArrives(flushTimeoutMs: number): Promise<number[]> {
  const factory = createMemoryShuffleServiceFactory({ flushTimeoutMs });
  const master = factory.createShuffleMaster();
  await master.start();
  const env = factory.createShuffleEnvironment({ taskExecutorId: taskExecutorId('t') });
  try {
    const descriptor = await registerPartition(master, { jobId: `flush-${flushTimeoutMs}`, resultId: 'r', index: 0, type: 'PIPELINED', subpartitions: 2 });
    const writer = await env.createResultPartitionWriter({ descriptor });
    const gate = await env.createInputGate({ jobId: descriptor.jobId, inputs: [descriptor], subpartitions: { start: 1, end: 1 } });
    writer.emitRecord(makeRecord(0, 1, 7, 10), 1);
    // no more writes, no flush(), no finish(): only the timeout hands the buffer over (the guard only stops a hang)
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
    await env.close();
    await master.close();
  }
}

describe('in-memory shuffle flushTimeoutMs', () => {
  it('hands a partly filled buffer to its reader once it is flushTimeoutMs old, with no further write', async () => {
    assert.deepEqual(await oneRecordArrives(20), [7]);
  });

  it('hands every record over at once with 0', async () => {
    assert.deepEqual(await oneRecordArrives(0), [7]);
  });

  it('refuses a negative or fractional flushTimeoutMs, naming it', () => {
    for (const value of [-1, 1.5]) {
      assert.throws(() => createMemoryShuffleServiceFactory({ flushTimeoutMs: value }), (e: unknown) => isShuffleError(e, 'SHF_ERR_INVALID_CONFIG') && e.context['setting'] === 'flushTimeoutMs');
    }
  });
});
