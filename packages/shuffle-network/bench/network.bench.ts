// The network pipelined shuffle between two processes on loopback: a producer process (bench-producer.ts)
// writes one partition, this process reads it through a network shuffle gate. Each figure is paired with a
// raw TCP copy of the same bytes between the same two processes, measured in the same run (alternating, median of ROUNDS):
// (a) bytes/s with 32 KiB - 4 B records (one record per buffer) vs the raw copy of the same framed bytes;
// (b) records/s of 100-byte records vs the raw copy of their framed bytes, as records/s.
// Environment: WEFT_BENCH_OPTIONS (network shuffle options as JSON, default {}: the defaults), WEFT_BENCH_BYTES (default 2 GiB for (a)), WEFT_BENCH_RECORDS (default 10,000,000 for (b)),
// WEFT_BENCH_CHILD_NODE_ARGS (extra node flags for the producer process, e.g. --cpu-prof).
import { type ChildProcess, fork } from 'node:child_process';
import { once } from 'node:events';
import { connect } from 'node:net';
import { cpus, loadavg } from 'node:os';
import { fileURLToPath } from 'node:url';
import { type ShuffleDescriptor, jobId, taskExecutorId } from '@weft/shuffle-api';
import { registerPartition } from '@weft/shuffle-api/testing';
import { type TaskExecutorAddress, createNetworkShuffleServiceFactory } from '@weft/shuffle-network';
import { BenchReport, round } from '@weft/testkit';

const BYTES = Number(process.env['WEFT_BENCH_BYTES'] ?? 2 * 1024 ** 3);
const RECORDS = Number(process.env['WEFT_BENCH_RECORDS'] ?? 10_000_000);
const ROUNDS = 3;
const BIG = 32 * 1024 - 4;
const SMALL = 100;
const CHILD = fileURLToPath(new URL('./bench-producer.ts', import.meta.url));
const OPTIONS = JSON.parse(process.env['WEFT_BENCH_OPTIONS'] ?? '{}') as object;

const childArgs = (process.env['WEFT_BENCH_CHILD_NODE_ARGS'] ?? '').split(' ').filter((a) => a !== '');
const child: ChildProcess = fork(CHILD, [], { execArgv: [...childArgs, '--conditions=source', '--import', 'tsx'], stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
const inbox: Record<string, unknown>[] = [];
let wake: (() => void) | undefined;
child.on('message', (message: Record<string, unknown>) => {
  inbox.push(message);
  wake?.();
});
async function next(op: string): Promise<Record<string, unknown>> {
  for (;;) {
    const i = inbox.findIndex((m) => m['op'] === op || m['op'] === 'error');
    if (i >= 0) {
      const [m] = inbox.splice(i, 1);
      if (m!['op'] === 'error') throw new Error(String(m!['message']));
      return m!;
    }
    await new Promise<void>((resolve) => (wake = resolve));
  }
}

const factory = createNetworkShuffleServiceFactory(OPTIONS);
const master = factory.createShuffleMaster();
await master.start();
const consumer = factory.createShuffleEnvironment({ taskExecutorId: taskExecutorId('bench-consumer') });
child.send({ op: 'start', options: OPTIONS });
// registerPartition (the conformance helper) names task executor "conformance": the producer process is that one
master.registerTaskExecutor((await next('address'))['address'] as TaskExecutorAddress);
let partitions = 0;

interface Run {
  readonly seconds: number;
  /** CPU time of both processes together. */
  readonly cpuSeconds: number;
}

/** Time to move `records` records of `recordBytes` through the network shuffle. */
async function shuffleRun(records: number, recordBytes: number): Promise<Run> {
  const descriptor: ShuffleDescriptor = await registerPartition(master, { jobId: 'bench', resultId: 'b', index: partitions++, type: 'PIPELINED_BOUNDED', subpartitions: 1 });
  const gate = await consumer.createInputGate({ jobId: jobId('bench'), inputs: [descriptor], subpartitions: { start: 0, end: 0 } });
  const started = process.hrtime.bigint();
  const cpu = process.cpuUsage();
  child.send({ op: 'produce', descriptor, records, recordBytes });
  let received = 0;
  let bytes = 0;
  for (let batch = await gate.readBatch(); batch !== null; batch = await gate.readBatch()) {
    if (batch.kind !== 'records') continue;
    received += batch.records.length;
    for (const r of batch.records) bytes += r.length;
  }
  const seconds = Number(process.hrtime.bigint() - started) / 1e9;
  const used = process.cpuUsage(cpu);
  await gate.close();
  const producer = (await next('produced'))['cpuMicros'] as number;
  if (received !== records || bytes !== records * recordBytes) throw new Error(`received ${received} records (${bytes} bytes), expected ${records}`);
  return { seconds, cpuSeconds: (used.user + used.system + producer) / 1e6 };
}

/** Time to copy `bytes` bytes over a bare TCP socket from the producer process to this one. */
async function rawRun(bytes: number): Promise<Run> {
  child.send({ op: 'raw', bytes });
  const port = (await next('raw-port'))['port'] as number;
  const started = process.hrtime.bigint();
  const cpu = process.cpuUsage();
  // the strongest plain reader: one reused 256 KiB buffer per read (the shuffle's gate reads into 256 KiB slabs too)
  let got = 0;
  const socket = connect({
    host: '127.0.0.1',
    port,
    onread: {
      buffer: Buffer.allocUnsafe(256 * 1024),
      callback: (bytes: number) => {
        got += bytes;
        return true;
      },
    },
  });
  await once(socket, 'end');
  const seconds = Number(process.hrtime.bigint() - started) / 1e9;
  const used = process.cpuUsage(cpu);
  socket.destroy();
  const producer = (await next('raw-done'))['cpuMicros'] as number;
  if (got !== bytes) throw new Error(`raw copy got ${got} bytes of ${bytes}`);
  return { seconds, cpuSeconds: (used.user + used.system + producer) / 1e6 };
}

const median = (runs: Run[], key: keyof Run = 'seconds'): number => runs.map((r) => r[key]).sort((a, b) => a - b)[Math.floor(runs.length / 2)]!;
const out = new BenchReport('shuffle-network/two-processes');
const bigRecords = Math.floor(BYTES / (BIG + 4));
const framedBig = bigRecords * (BIG + 4);
const framedSmall = RECORDS * (SMALL + 4);
await shuffleRun(200_000, SMALL); // warm-up
await rawRun(64 * 1024 * 1024);
const times = { bigShuffle: [] as Run[], bigRaw: [] as Run[], smallShuffle: [] as Run[], smallRaw: [] as Run[] };
const load: number[] = [];
for (let round = 0; round < ROUNDS; round++) {
  load.push(loadavg()[0]!);
  if (round % 2 === 0) {
    times.bigShuffle.push(await shuffleRun(bigRecords, BIG));
    times.bigRaw.push(await rawRun(framedBig));
    times.smallShuffle.push(await shuffleRun(RECORDS, SMALL));
    times.smallRaw.push(await rawRun(framedSmall));
  } else {
    times.bigRaw.push(await rawRun(framedBig));
    times.bigShuffle.push(await shuffleRun(bigRecords, BIG));
    times.smallRaw.push(await rawRun(framedSmall));
    times.smallShuffle.push(await shuffleRun(RECORDS, SMALL));
  }
}
const MB = 1e6;
const report = (metric: string, unit: string, value: number, baseline: string, baselineValue: number): void => {
  out.report(metric, unit, value, baseline, baselineValue);
  out.row(metric, `${round(value, 1)} ${unit}`, `${round(baselineValue, 1)} ${unit}`, baseline, `${round(value / baselineValue, 3)}`);
};
report('32KiB records throughput', 'MB/s', framedBig / MB / median(times.bigShuffle), 'raw TCP copy of the same bytes', framedBig / MB / median(times.bigRaw));
report('100B records/s', 'records/s', RECORDS / median(times.smallShuffle), 'raw TCP copy of the same framed bytes, as records/s', RECORDS / median(times.smallRaw));
report('100B records throughput', 'MB/s', framedSmall / MB / median(times.smallShuffle), 'raw TCP copy of the same bytes', framedSmall / MB / median(times.smallRaw));
// CPU time of both processes per GB moved: less sensitive than wall time to a machine shared with other work
report('32KiB records CPU per GB (both processes)', 's/GB', median(times.bigShuffle, 'cpuSeconds') / (framedBig / 1e9), 'raw TCP copy of the same bytes', median(times.bigRaw, 'cpuSeconds') / (framedBig / 1e9));
report('100B records CPU per GB (both processes)', 's/GB', median(times.smallShuffle, 'cpuSeconds') / (framedSmall / 1e9), 'raw TCP copy of the same bytes', median(times.smallRaw, 'cpuSeconds') / (framedSmall / 1e9));
out.print(
  `network shuffle, two processes on loopback, options ${JSON.stringify(OPTIONS)} (${cpus().length} CPUs, load ${load.map((l) => round(l, 1)).join('/')}; ${round(framedBig / 1024 ** 3, 2)} GiB of 32 KiB records, ${RECORDS} records of 100 B; median of ${ROUNDS})`,
  ['metric', 'network shuffle', 'baseline', 'baseline is', 'ratio'],
);
await consumer.close();
await master.close();
child.disconnect();
