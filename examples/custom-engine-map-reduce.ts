// A hand-written map -> reduce engine in one file, using only @weft/shuffle-api and an implementation
// handed to it (here @weft/shuffle-memory): the proof that someone else's engine plugs in.
//
//   node --conditions=source --import tsx examples/custom-engine-map-reduce.ts [--input lines.txt] [--output counts.tsv]
//        [--mappers 3] [--reducers 2] [--type PIPELINED]
//
// Mappers split lines into words and route each word to a reducer by hash; reducers count. With a
// BLOCKING type the mappers finish before the reducers start, as a batch engine schedules them.
import { readFile, writeFile } from 'node:fs/promises';
import { pathToFileURL } from 'node:url';
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

/** The types the in-memory shuffle this script hands over supports. */
const PARTITION_TYPES: readonly ResultPartitionType[] = ['PIPELINED', 'PIPELINED_BOUNDED', 'BLOCKING', 'BLOCKING_PERSISTENT'];

const USAGE = `Usage: custom-engine-map-reduce.ts [--input <path>] [--output <path>] [--mappers N] [--reducers N] [--type TYPE]

Counts the words (maximal runs of non-whitespace, counted as written) of --input's lines, or of a few
built-in lines when it is absent, with --mappers map tasks and --reducers reduce tasks joined by the
in-memory shuffle. Writes one word<TAB>count line per distinct word to --output, or to stdout.

Options:
  --input <path>    a text file to read (default: built-in lines)
  --output <path>   where to write the counts (default: stdout, largest count first)
  --mappers N       map tasks, an integer >= 1 (default 3)
  --reducers N      reduce tasks, an integer >= 1 (default 2)
  --type TYPE       ${PARTITION_TYPES.join(' | ')} (default PIPELINED)
  -h, --help        show this help

Exit codes: 0 counted; 1 the shuffle failed; 2 bad usage or an unreadable --input.
`;

const BUILT_IN_LINES = [
  'the quick brown fox jumps over the lazy dog',
  'the dog barks',
  'a fox is quick and a dog is lazy',
];

/** Bad usage or bad input: a message for a person and exit code 2, never a stack. */
class UsageError extends Error {}

function positiveInteger(flag: string, value: string): number {
  const n = Number(value);
  if (value.trim() === '' || !Number.isSafeInteger(n) || n < 1) throw new UsageError(`${flag} must be an integer >= 1, got ${JSON.stringify(value)}`);
  return n;
}

/** The command line, checked: `UsageError` naming the flag for anything malformed. */
export function parseMapReduceArgs(argv: readonly string[]): { help: boolean; input?: string; output?: string; mappers: number; reducers: number; partitionType: ResultPartitionType } {
  let values: Record<string, string | boolean | undefined>;
  try {
    ({ values } = parseArgs({
      args: [...argv],
      options: {
        input: { type: 'string' },
        output: { type: 'string' },
        mappers: { type: 'string', default: '3' },
        reducers: { type: 'string', default: '2' },
        type: { type: 'string', default: 'PIPELINED' },
        help: { type: 'boolean', short: 'h', default: false },
      },
    }));
  } catch (error) {
    throw new UsageError((error as Error).message);
  }
  const type = values['type'] as string;
  if (!(PARTITION_TYPES as readonly string[]).includes(type)) throw new UsageError(`--type must be one of ${PARTITION_TYPES.join(', ')}, got ${JSON.stringify(type)}`);
  return {
    help: values['help'] === true,
    ...(values['input'] === undefined ? {} : { input: values['input'] as string }),
    ...(values['output'] === undefined ? {} : { output: values['output'] as string }),
    mappers: positiveInteger('--mappers', values['mappers'] as string),
    reducers: positiveInteger('--reducers', values['reducers'] as string),
    partitionType: type as ResultPartitionType,
  };
}

async function readLines(path: string): Promise<string[]> {
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    const reason = code === 'ENOENT' ? 'no such file' : code === 'EISDIR' ? 'it is a directory' : (error as Error).message;
    throw new UsageError(`--input: cannot read ${path}: ${reason}`);
  }
  const lines = text.split('\n');
  if (lines[lines.length - 1] === '') lines.pop();
  return lines;
}

async function main(argv: readonly string[]): Promise<number> {
  let args: ReturnType<typeof parseMapReduceArgs>;
  let lines: readonly string[];
  try {
    args = parseMapReduceArgs(argv);
    if (args.help) {
      process.stdout.write(USAGE);
      return 0;
    }
    lines = args.input === undefined ? BUILT_IN_LINES : await readLines(args.input);
  } catch (error) {
    if (!(error instanceof UsageError)) throw error;
    process.stderr.write(`custom-engine-map-reduce: ${error.message}\n\n${USAGE}`);
    return 2;
  }
  const counts = await runMapReduce({
    lines,
    mappers: args.mappers,
    reducers: args.reducers,
    partitionType: args.partitionType,
    shuffle: createMemoryShuffleServiceFactory(),
  });
  const top = [...counts].sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0));
  const text = top.map(([word, n]) => `${word}\t${n}\n`).join('');
  if (args.output === undefined) {
    process.stdout.write(text);
  } else {
    await writeFile(args.output, text);
    process.stdout.write(`${counts.size} distinct words written to ${args.output}\n`);
  }
  return 0;
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) process.exitCode = await main(process.argv.slice(2));
