import { strict as assert } from 'node:assert';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, it } from 'node:test';
import { isShuffleError, taskExecutorId } from '@weft/shuffle-api';
import { drain, emitAll, makeRecord, registerPartition, rejectionOf } from '@weft/shuffle-api/testing';
import { DEFAULT_MEMORY_SHUFFLE_OPTIONS, createMemoryShuffleServiceFactory, resolveMemoryShuffleOptions } from '@weft/shuffle-memory';

async function harness(options: Parameters<typeof createMemoryShuffleServiceFactory>[0] = {}) {
  const factory = createMemoryShuffleServiceFactory(options);
  const master = factory.createShuffleMaster();
  await master.start();
  const env = factory.createShuffleEnvironment({ taskExecutorId: taskExecutorId('t') });
  return {
    master,
    env,
    async [Symbol.asyncDispose]() {
      await env.close();
      await master.close();
    },
  };
}

describe('in-memory shuffle', () => {
  it('refuses bad options with SHF_ERR_INVALID_CONFIG naming the option', () => {
    for (const [option, value] of [['bufferSizeBytes', 0], ['bufferSizeBytes', 2 ** 40], ['buffersPerPartition', -3], ['buffersPerChannel', 1.5], ['maxRecordBytes', -1]] as const) {
      assert.throws(
        () => createMemoryShuffleServiceFactory({ [option]: value }),
        (e: unknown) => isShuffleError(e, 'SHF_ERR_INVALID_CONFIG') && e.context['setting'] === option,
      );
    }
  });

  it('refuses an unknown option, or options that are not an object, with SHF_ERR_INVALID_CONFIG naming it', () => {
    for (const [options, setting] of [
      [{ bufferSize: 4096 }, 'bufferSize'],
      [{ buffersPerPartition: 8, maxRecordbytes: 1 }, 'maxRecordbytes'],
      [42, 'options'],
      [[], 'options'],
      ['bufferSizeBytes=1', 'options'],
    ] as const) {
      assert.throws(
        () => createMemoryShuffleServiceFactory(options as never),
        (e: unknown) => isShuffleError(e, 'SHF_ERR_INVALID_CONFIG') && e.context['setting'] === setting && e.message.includes(setting),
        `should refuse ${JSON.stringify(options)} naming ${setting}`,
      );
    }
    assert.deepEqual(resolveMemoryShuffleOptions({ bufferSizeBytes: undefined, buffersPerChannel: 3 }), { ...DEFAULT_MEMORY_SHUFFLE_OPTIONS, buffersPerChannel: 3 });
    assert.equal(createMemoryShuffleServiceFactory(null).shuffleServiceId, 'memory', 'null options are the defaults');
  });

  it('documents every option in README.md with its actual default', () => {
    const readme = readFileSync(fileURLToPath(new URL('../README.md', import.meta.url)), 'utf8');
    const documented = new Map([...readme.matchAll(/^\| `([A-Za-z]+)` \| (\d+)/gm)].map((m) => [m[1]!, Number(m[2])]));
    assert.deepEqual(Object.fromEntries(documented), { ...DEFAULT_MEMORY_SHUFFLE_OPTIONS });
  });

  it('refuses a gate whose inputs belong to another job than the request names', async () => {
    await using h = await harness();
    const mine = await registerPartition(h.master, { jobId: 'gate-job-a', resultId: 'r', index: 0, type: 'BLOCKING', subpartitions: 1 });
    const theirs = await registerPartition(h.master, { jobId: 'gate-job-b', resultId: 'r', index: 1, type: 'BLOCKING', subpartitions: 1 });
    const field = async (request: Parameters<typeof h.env.createInputGate>[0]): Promise<unknown> => {
      const error = await rejectionOf(h.env.createInputGate(request));
      assert.ok(isShuffleError(error, 'SHF_ERR_INVALID_ARGUMENT'), String(error));
      return error.context['field'];
    };
    assert.equal(await field({ jobId: mine.jobId, inputs: [mine, theirs], subpartitions: { start: 0, end: 0 } }), 'inputs[1].jobId');
    assert.equal(await field({ jobId: theirs.jobId, inputs: [mine], subpartitions: { start: 0, end: 0 } }), 'inputs[0].jobId');
    assert.equal(await field({ jobId: '../x' as never, inputs: [mine], subpartitions: { start: 0, end: 0 } }), 'jobId');
    assert.equal(await field({ jobId: undefined as never, inputs: [mine], subpartitions: { start: 0, end: 0 } }), 'jobId');
  });

  it('gives a partition with many subpartitions enough buffers to hold one being filled per subpartition', async () => {
    await using h = await harness({ buffersPerPartition: 2 });
    const descriptor = await registerPartition(h.master, { jobId: 'many', resultId: 'r', index: 0, type: 'PIPELINED', subpartitions: 50 });
    const writer = await h.env.createResultPartitionWriter({ descriptor });
    assert.equal(writer.metrics.memoryLimitBytes, 51 * 32 * 1024);
    await writer.close();
  });

  it('lets a producer go on when its consumer closed early, without blocking or holding buffers', async () => {
    await using h = await harness({ buffersPerPartition: 4 });
    const descriptor = await registerPartition(h.master, { jobId: 'early', resultId: 'r', index: 0, type: 'PIPELINED', subpartitions: 1 });
    const writer = await h.env.createResultPartitionWriter({ descriptor });
    const gate = await h.env.createInputGate({ jobId: descriptor.jobId, inputs: [descriptor], subpartitions: { start: 0, end: 0 } });
    await gate.close();
    await emitAll(writer, Array.from({ length: 10_000 }, (_, i) => ({ subpartition: 0, record: makeRecord(0, 0, i, 100) })));
    await writer.finish();
    assert.ok(writer.metrics.bufferedBytes <= 32 * 1024, `writer still holds ${writer.metrics.bufferedBytes} bytes`);
    await writer.close();
  });

  it('tells the consumer SHF_ERR_PRODUCER_FAILED caused by SHF_ERR_CLOSED when a writer is closed before finish', async () => {
    await using h = await harness();
    const descriptor = await registerPartition(h.master, { jobId: 'abort', resultId: 'r', index: 0, type: 'PIPELINED', subpartitions: 1 });
    const writer = await h.env.createResultPartitionWriter({ descriptor });
    writer.emitRecord(makeRecord(0, 0, 0), 0);
    await writer.close();
    const gate = await h.env.createInputGate({ jobId: descriptor.jobId, inputs: [descriptor], subpartitions: { start: 0, end: 0 } });
    const error = await rejectionOf(drain(gate));
    await gate.close();
    assert.ok(isShuffleError(error, 'SHF_ERR_PRODUCER_FAILED'));
    assert.ok(isShuffleError(error.cause, 'SHF_ERR_CLOSED'));
  });

  it('refuses a second writer for the same attempt of a partition', async () => {
    await using h = await harness();
    const descriptor = await registerPartition(h.master, { jobId: 'twice', resultId: 'r', index: 0, type: 'BLOCKING', subpartitions: 1 });
    const writer = await h.env.createResultPartitionWriter({ descriptor });
    const error = await rejectionOf(h.env.createResultPartitionWriter({ descriptor }));
    assert.ok(isShuffleError(error, 'SHF_ERR_INVALID_ARGUMENT'));
    await writer.close();
  });

  it('keeps BLOCKING_PERSISTENT partitions when the job is unregistered, and releases BLOCKING ones', async () => {
    await using h = await harness();
    const persistent = await registerPartition(h.master, { jobId: 'keep', resultId: 'p', index: 0, type: 'BLOCKING_PERSISTENT', subpartitions: 1 });
    const plain = await registerPartition(h.master, { jobId: 'keep', resultId: 'b', index: 0, type: 'BLOCKING', subpartitions: 1 });
    for (const descriptor of [persistent, plain]) {
      const writer = await h.env.createResultPartitionWriter({ descriptor });
      writer.emitRecord(makeRecord(0, 0, 0), 0);
      await writer.finish();
      await writer.close();
    }
    await h.master.unregisterJob(persistent.jobId);
    const listed = (await h.master.listPartitions(persistent.jobId)).map((p) => p.descriptor.partition.partitionId);
    assert.deepEqual(listed, [persistent.partition.partitionId]);
  });
});
