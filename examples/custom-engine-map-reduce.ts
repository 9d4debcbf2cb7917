// A hand-written map -> reduce engine in one file, using only @weft/shuffle-api and an implementation
// handed to it (here @weft/shuffle-memory): the proof that someone else's engine plugs in.
//
//   node --conditions=source --import tsx examples/custom-engine-map-reduce.ts [--mappers 3] [--reducers 2] [--type PIPELINED]
//
// Mappers split lines into words and route each word to a reducer by hash; reducers count. With a
// BLOCKING type the mappers finish before the reducers start, as a batch engine schedules them.
import { parseArgs } from 'node:util';
import {
  type ResultPartitionType,
  type ShuffleDescriptor,
  type ShuffleServiceFactory,
  executionAttemptId,
  executionVertexId,
  intermediateResultId,
  jobId,
  resultPartitionId,
  resultPartitionTypeProperties,
  taskExecutorId,
} from '@weft/shuffle-api';
import { createMemoryShuffleServiceFactory } from '@weft/shuffle-memory';

export interface MapReduceOptions {
  readonly lines: readonly string[];
  readonly mappers: number;
  readonly reducers: number;
  readonly partitionType: ResultPartitionType;
  readonly shuffle: ShuffleServiceFactory;
}

function hashWord(word: string): number {
  let h = 0;
  for (let i = 0; i < word.length; i++) h = (Math.imul(h, 31) + word.charCodeAt(i)) | 0;
  return h >>> 0;
}

/** Counts the words of `lines` with `mappers` map tasks and `reducers` reduce tasks joined by a shuffle. */
export async function runMapReduce(options: MapReduceOptions): Promise<Map<string, number>> {
  const { mappers, reducers, shuffle } = options;
  const master = shuffle.createShuffleMaster();
  await master.start();
  const environment = shuffle.createShuffleEnvironment({ taskExecutorId: taskExecutorId('custom-engine') });
  const job = jobId(`map-reduce-${Date.now()}`);
  try {
    await master.registerJob({ jobId: job });
    const descriptors: ShuffleDescriptor[] = [];
    for (let m = 0; m < mappers; m++) {
      descriptors.push(
        await master.registerPartitionWithProducer({
          jobId: job,
          partition: {
            resultId: intermediateResultId('map->reduce'),
            partitionId: resultPartitionId('map->reduce', m),
            partitionIndex: m,
            partitionType: options.partitionType,
            numberOfSubpartitions: reducers,
          },
          producer: { producerId: executionAttemptId(executionVertexId('map', m), 0), attempt: 0, taskExecutorId: taskExecutorId('custom-engine') },
        }),
      );
    }

    const encoder = new TextEncoder();
    const map = async (m: number): Promise<void> => {
      const writer = await environment.createResultPartitionWriter({ descriptor: descriptors[m]! });
      try {
        for (let i = m; i < options.lines.length; i += mappers) {
          for (const word of options.lines[i]!.split(/\s+/)) {
            if (word.length === 0) continue;
            if (!writer.emitRecord(encoder.encode(word), hashWord(word) % reducers)) await writer.ready();
          }
        }
        await writer.finish();
      } catch (error) {
        writer.fail(error);
        throw error;
      } finally {
        await writer.close();
      }
    };

    const decoder = new TextDecoder();
    const reduce = async (r: number): Promise<Map<string, number>> => {
      const gate = await environment.createInputGate({ jobId: job, inputs: descriptors, subpartitions: { start: r, end: r } });
      const counts = new Map<string, number>();
      try {
        for (let batch = await gate.readBatch(); batch !== null; batch = await gate.readBatch()) {
          if (batch.kind !== 'records') continue;
          for (const record of batch.records) {
            const word = decoder.decode(record);
            counts.set(word, (counts.get(word) ?? 0) + 1);
          }
        }
      } finally {
        await gate.close();
      }
      return counts;
    };

    const mapTasks = Array.from({ length: mappers }, (_, m) => map(m));
    const pipelined = resultPartitionTypeProperties(options.partitionType).canBePipelined;
    if (!pipelined) await Promise.all(mapTasks);
    const partials = await Promise.all(Array.from({ length: reducers }, (_, r) => reduce(r)));
    await Promise.all(mapTasks);
    const result = new Map<string, number>();
    for (const partial of partials) for (const [word, n] of partial) result.set(word, n);
    return result;
  } finally {
    await master.unregisterJob(job).catch(() => {});
    await environment.close();
    await master.close();
  }
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      mappers: { type: 'string', default: '3' },
      reducers: { type: 'string', default: '2' },
      type: { type: 'string', default: 'PIPELINED' },
    },
  });
  const lines = [
    'the quick brown fox jumps over the lazy dog',
    'the dog barks',
    'a fox is quick and a dog is lazy',
  ];
  const counts = await runMapReduce({
    lines,
    mappers: Number(values.mappers),
    reducers: Number(values.reducers),
    partitionType: values.type as ResultPartitionType,
    shuffle: createMemoryShuffleServiceFactory(),
  });
  const top = [...counts].sort((a, b) => b[1] - a[1] || a[0].localeCompare(b[0]));
  for (const [word, n] of top) process.stdout.write(`${word}\t${n}\n`);
}

if (import.meta.url === `file://${process.argv[1]}`) await main();
