// The in-memory shuffle at work: N producers x M consumers exchange generated records all-to-all
// through PIPELINED partitions with credit-based backpressure. Prints what moved, how fast, and whether
// the multiset of records arrived intact.
//
//   node --conditions=source --import tsx examples/memory-shuffle-demo.ts [--producers 4] [--consumers 4] [--records 1000000] [--json]
import { parseArgs } from 'node:util';
import {
  type ShuffleDescriptor,
  executionAttemptId,
  executionVertexId,
  intermediateResultId,
  jobId,
  resultPartitionId,
  taskExecutorId,
} from '@weft/shuffle-api';
import { createMemoryShuffleServiceFactory } from '@weft/shuffle-memory';

export interface DemoResult {
  readonly producers: number;
  readonly consumers: number;
  readonly recordsSent: number;
  readonly recordsReceived: number;
  readonly bytes: number;
  readonly seconds: number;
  /** Sum of 32-bit record fingerprints, sent and received: equal when the multiset arrived intact. */
  readonly sentFingerprint: number;
  readonly receivedFingerprint: number;
  readonly intact: boolean;
}

function fingerprint(bytes: Uint8Array): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < bytes.length; i++) h = Math.imul(h ^ bytes[i]!, 0x01000193);
  return h >>> 0;
}

export async function runDemo(producers: number, consumers: number, recordsPerProducer: number): Promise<DemoResult> {
  const factory = createMemoryShuffleServiceFactory();
  const master = factory.createShuffleMaster();
  await master.start();
  const env = factory.createShuffleEnvironment({ taskExecutorId: taskExecutorId('demo') });
  const job = jobId('memory-shuffle-demo');
  await master.registerJob({ jobId: job });
  const descriptors: ShuffleDescriptor[] = [];
  for (let p = 0; p < producers; p++) {
    descriptors.push(
      await master.registerPartitionWithProducer({
        jobId: job,
        partition: { resultId: intermediateResultId('demo'), partitionId: resultPartitionId('demo', p), partitionIndex: p, partitionType: 'PIPELINED_BOUNDED', numberOfSubpartitions: consumers },
        producer: { producerId: executionAttemptId(executionVertexId('producer', p), 0), attempt: 0, taskExecutorId: taskExecutorId('demo') },
      }),
    );
  }
  let sentFingerprint = 0;
  let receivedFingerprint = 0;
  let recordsReceived = 0;
  let bytes = 0;
  const started = process.hrtime.bigint();
  const produce = descriptors.map(async (descriptor, p) => {
    const writer = await env.createResultPartitionWriter({ descriptor });
    const record = new Uint8Array(64);
    const view = new DataView(record.buffer);
    for (let i = 0; i < recordsPerProducer; i++) {
      view.setUint32(0, p, true);
      view.setUint32(4, i, true);
      view.setFloat64(8, i * 1.5 + p, true);
      record.fill((i + p) & 0xff, 16, 16 + (i % 48));
      const length = 16 + (i % 48);
      const bytesOut = record.subarray(0, length);
      sentFingerprint = (sentFingerprint + fingerprint(bytesOut)) >>> 0;
      if (!writer.emitRecord(bytesOut, (i * 2654435761) % consumers)) await writer.ready();
    }
    await writer.finish();
    await writer.close();
  });
  const consume = Array.from({ length: consumers }, async (_, c) => {
    const gate = await env.createInputGate({ jobId: job, inputs: descriptors, subpartitions: { start: c, end: c } });
    for (let batch = await gate.readBatch(); batch !== null; batch = await gate.readBatch()) {
      if (batch.kind !== 'records') continue;
      for (const record of batch.records) {
        receivedFingerprint = (receivedFingerprint + fingerprint(record)) >>> 0;
        bytes += record.length;
      }
      recordsReceived += batch.records.length;
    }
    await gate.close();
  });
  await Promise.all([...produce, ...consume]);
  const seconds = Number(process.hrtime.bigint() - started) / 1e9;
  await env.close();
  await master.close();
  const recordsSent = producers * recordsPerProducer;
  return {
    producers,
    consumers,
    recordsSent,
    recordsReceived,
    bytes,
    seconds,
    sentFingerprint,
    receivedFingerprint,
    intact: recordsSent === recordsReceived && sentFingerprint === receivedFingerprint,
  };
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      producers: { type: 'string', default: '4' },
      consumers: { type: 'string', default: '4' },
      records: { type: 'string', default: '1000000' },
      json: { type: 'boolean', default: false },
    },
  });
  const producers = Number(values.producers);
  const consumers = Number(values.consumers);
  const total = Number(values.records);
  for (const [name, value] of [['--producers', producers], ['--consumers', consumers], ['--records', total]] as const) {
    if (!Number.isInteger(value) || value < 1) {
      process.stderr.write(`${name} must be a positive integer\n`);
      process.exit(2);
    }
  }
  const result = await runDemo(producers, consumers, Math.ceil(total / producers));
  if (values.json) {
    process.stdout.write(`${JSON.stringify(result)}\n`);
  } else {
    const mb = result.bytes / 1e6;
    process.stdout.write(
      [
        `in-memory shuffle: ${result.producers} producers x ${result.consumers} consumers, all-to-all, PIPELINED_BOUNDED`,
        `moved   ${result.recordsReceived.toLocaleString('en-US')} records, ${mb.toFixed(1)} MB in ${result.seconds.toFixed(2)} s`,
        `speed   ${Math.round(result.recordsReceived / result.seconds).toLocaleString('en-US')} records/s, ${(mb / result.seconds).toFixed(0)} MB/s`,
        `check   ${result.intact ? 'intact' : 'DAMAGED'}: sent ${result.recordsSent.toLocaleString('en-US')} records (fingerprint ${result.sentFingerprint.toString(16)}), received ${result.recordsReceived.toLocaleString('en-US')} (fingerprint ${result.receivedFingerprint.toString(16)})`,
      ].join('\n') + '\n',
    );
  }
  process.exitCode = result.intact ? 0 : 1;
}

if (import.meta.url === `file://${process.argv[1]}`) await main();
