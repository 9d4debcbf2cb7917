// All-to-all exchange through the in-memory pipelined shuffle, 4 producers x 4 consumers in one process:
// (a) 100-byte records, (b) 32 KiB records: records/s and MB/s against a memcpy of the same bytes in the
// same run; (c) a deliberately slow consumer: peak memory the producers hold against the configured pool.
import {
  type ShuffleDescriptor,
  type ShuffleEnvironment,
  type ShuffleMaster,
  executionAttemptId,
  executionVertexId,
  intermediateResultId,
  jobId,
  resultPartitionId,
  taskExecutorId,
} from '@weft/shuffle-api';
import { createMemoryShuffleServiceFactory } from '@weft/shuffle-memory';
import { BenchReport, round } from '@weft/testkit';

const PRODUCERS = 4;
const CONSUMERS = 4;

const out = new BenchReport('memory-exchange-4x4');
/** Records one figure against its baseline (bench name implied). */
function report(figure: { metric: string; unit: string; value: number; baseline: string; baselineValue: number }): void {
  out.report(figure.metric, figure.unit, figure.value, figure.baseline, figure.baselineValue);
}

async function setup(options: Parameters<typeof createMemoryShuffleServiceFactory>[0], job: string) {
  const factory = createMemoryShuffleServiceFactory(options);
  const master: ShuffleMaster = factory.createShuffleMaster();
  await master.start();
  const env: ShuffleEnvironment = factory.createShuffleEnvironment({ taskExecutorId: taskExecutorId('bench') });
  await master.registerJob({ jobId: jobId(job) });
  const descriptors: ShuffleDescriptor[] = [];
  for (let p = 0; p < PRODUCERS; p++) {
    descriptors.push(
      await master.registerPartitionWithProducer({
        jobId: jobId(job),
        partition: {
          resultId: intermediateResultId('bench'),
          partitionId: resultPartitionId('bench', p),
          partitionIndex: p,
          partitionType: 'PIPELINED_BOUNDED',
          numberOfSubpartitions: CONSUMERS,
        },
        producer: { producerId: executionAttemptId(executionVertexId('src', p), 0), attempt: 0, taskExecutorId: taskExecutorId('bench') },
      }),
    );
  }
  return { master, env, descriptors };
}

interface ExchangeResult {
  seconds: number;
  records: number;
  bytes: number;
  peakBufferedBytes: number;
  memoryLimitBytes: number;
  /** Peak of the process's ArrayBuffer memory (process.memoryUsage().arrayBuffers) during the exchange, above its level without it. */
  peakArrayBufferGrowth: number;
}

async function exchange(recordBytes: number, recordsPerProducer: number, slowConsumer = false): Promise<ExchangeResult> {
  // an independent measure of what the exchange holds: ArrayBuffer memory as V8 counts it, from before
  // the shuffle is created (its buffer pools included), sampled during the exchange
  globalThis.gc?.();
  const arrayBuffersBefore = process.memoryUsage().arrayBuffers;
  const { master, env, descriptors } = await setup({ buffersPerPartition: 64 }, `bench-${recordBytes}-${slowConsumer}`);
  const record = new Uint8Array(recordBytes).fill(7);
  let peakBufferedBytes = 0;
  let memoryLimitBytes = 0;
  let peakArrayBuffers = arrayBuffersBefore;
  const sampleArrayBuffers = (): void => {
    peakArrayBuffers = Math.max(peakArrayBuffers, process.memoryUsage().arrayBuffers);
  };
  const sampler = slowConsumer ? setInterval(sampleArrayBuffers, 2) : undefined;
  const started = process.hrtime.bigint();
  const writers: { metrics: { bufferedBytes: number } }[] = [];
  const sumBuffered = (): number => writers.reduce((a, w) => a + w.metrics.bufferedBytes, 0);
  const producers = descriptors.map(async (descriptor) => {
    const writer = await env.createResultPartitionWriter({ descriptor });
    writers.push(writer);
    memoryLimitBytes += writer.metrics.memoryLimitBytes;
    let s = 0;
    for (let i = 0; i < recordsPerProducer; i++) {
      const more = writer.emitRecord(record, s);
      if (slowConsumer) peakBufferedBytes = Math.max(peakBufferedBytes, sumBuffered());
      if (!more) {
        if (slowConsumer) sampleArrayBuffers();
        await writer.ready();
      }
      s = s === CONSUMERS - 1 ? 0 : s + 1;
    }
    await writer.finish();
    await writer.close();
  });
  let received = 0;
  let receivedBytes = 0;
  const consumers = Array.from({ length: CONSUMERS }, async (_, c) => {
    const gate = await env.createInputGate({ jobId: descriptors[0]!.jobId, inputs: descriptors, subpartitions: { start: c, end: c } });
    let batches = 0;
    for (let batch = await gate.readBatch(); batch !== null; batch = await gate.readBatch()) {
      if (batch.kind !== 'records') continue;
      const records = batch.records;
      for (let i = 0; i < records.length; i++) receivedBytes += records[i]!.length;
      received += records.length;
      if (slowConsumer && ++batches % 4 === 0) await new Promise((resolve) => setTimeout(resolve, 1));
    }
    await gate.close();
  });
  await Promise.all([...producers, ...consumers]);
  const seconds = Number(process.hrtime.bigint() - started) / 1e9;
  clearInterval(sampler);
  await env.close();
  await master.close();
  if (received !== recordsPerProducer * PRODUCERS) throw new Error(`lost records: ${received} of ${recordsPerProducer * PRODUCERS}`);
  // the floor: the lower of the level before and the level once the shuffle is closed and collected
  // (the level before may still hold an earlier exchange's buffers)
  globalThis.gc?.();
  const floor = Math.min(arrayBuffersBefore, process.memoryUsage().arrayBuffers);
  return { seconds, records: received, bytes: receivedBytes, peakBufferedBytes, memoryLimitBytes, peakArrayBufferGrowth: peakArrayBuffers - floor };
}

/**
 * The memcpy baseline: copies `totalBytes` in 32 KiB chunks with Uint8Array.set, from a 64 MiB source to a
 * 64 MiB target (larger than the caches, as the exchange's buffers are in aggregate).
 */
const SPAN = 64 * 1024 * 1024;
const copySource = new Uint8Array(SPAN).fill(1);
const copyTarget = new Uint8Array(SPAN);
function memcpy(totalBytes: number): number {
  const chunk = 32 * 1024;
  const rounds = Math.ceil(totalBytes / chunk);
  const started = process.hrtime.bigint();
  for (let i = 0, offset = 0; i < rounds; i++) {
    copyTarget.set(copySource.subarray(offset, offset + chunk), (offset * 7) % (SPAN - chunk) & ~(chunk - 1));
    offset += chunk;
    if (offset >= SPAN) offset = 0;
  }
  return Number(process.hrtime.bigint() - started) / 1e9;
}

async function main(): Promise<void> {
  await exchange(100, 200_000); // warm-up
  const small = await exchange(100, 2_500_000);
  const smallCopy = memcpy(small.bytes);
  const smallMBs = small.bytes / 1e6 / small.seconds;
  const copyMBs = small.bytes / 1e6 / smallCopy;
  report({ metric: '100B records/s', unit: 'records/s', value: Math.round(small.records / small.seconds), baseline: 'memcpy records/s (same bytes)', baselineValue: Math.round(small.records / smallCopy) });
  report({ metric: '100B throughput', unit: 'MB/s', value: round(smallMBs, 1), baseline: 'memcpy', baselineValue: round(copyMBs, 1) });

  const large = await exchange(32 * 1024, 40_000);
  const largeCopy = memcpy(large.bytes);
  report({ metric: '32KiB records/s', unit: 'records/s', value: Math.round(large.records / large.seconds), baseline: 'memcpy records/s (same bytes)', baselineValue: Math.round(large.records / largeCopy) });
  report({ metric: '32KiB throughput', unit: 'MB/s', value: round(large.bytes / 1e6 / large.seconds, 1), baseline: 'memcpy', baselineValue: round(large.bytes / 1e6 / largeCopy, 1) });

  const slow = await exchange(1024, 100_000, true);
  report({ metric: 'slow consumer: peak producer buffered bytes', unit: 'bytes', value: slow.peakBufferedBytes, baseline: 'configured pool (4 partitions x 64 x 32 KiB)', baselineValue: slow.memoryLimitBytes });
  report({ metric: 'slow consumer: peak growth of process ArrayBuffer memory', unit: 'bytes', value: slow.peakArrayBufferGrowth, baseline: 'configured pool (4 partitions x 64 x 32 KiB)', baselineValue: slow.memoryLimitBytes });

  console.log('| metric | value | baseline | ratio |');
  console.log('|---|---|---|---|');
  for (const f of out.figures) console.log(`| ${f.metric} | ${f.value} ${f.unit} | ${f.baseline}: ${f.baselineValue} | ${f.ratio} |`);
  out.printFigures();
}

await main();
