// Checkpoints of a streaming job (issue 15): a keyed word count (map-side combining, then the count in
// keyed state) over a bounded ctx.generate stream held at a steady rate (default 1 M records/s, issue 15's
// target load), in process over the in-memory pipelined shuffle, run three ways in the same process:
//   batch        the same job without checkpoints (ALL_EDGES_PIPELINED, the batch aggregate) — the baseline
//   idle         checkpointed (keyed state backend, barrier handlers on every input) with an interval
//                longer than the job: the cost of streaming mode without a single checkpoint
//   checkpointed an aligned (exactly-once) checkpoint every WEFT_BENCH_CHECKPOINT_INTERVAL_MS (default 1000)
// At a fixed rate the wall time is the rate's; what checkpoints cost shows as CPU time (this process's
// user + system, all tasks run in it) per million records: checkpointed against idle is what alignment
// and snapshots add (issue 15's "≤ 10 % at 1 s" target), against batch what streaming mode adds. Also the
// records/s reached, and the last checkpoint's state size and duration (trigger to completion).
//
//   npm run bench -- checkpoint
//   WEFT_BENCH_CHECKPOINT_RECORDS=1000000 npm run bench -- checkpoint     (quicker)
import { cpus, totalmem } from 'node:os';
import { type CheckpointingOptions, defineJob, InMemoryCheckpointStorage, type JobResult, runJob } from '@weft/engine';
import { createMemoryShuffleServiceFactory } from '@weft/shuffle-memory';

const records = Number(process.env['WEFT_BENCH_CHECKPOINT_RECORDS'] ?? 5_000_000);
const rate = Number(process.env['WEFT_BENCH_CHECKPOINT_RATE'] ?? 1_000_000);
const intervalMs = Number(process.env['WEFT_BENCH_CHECKPOINT_INTERVAL_MS'] ?? 1000);
const parallelism = Number(process.env['WEFT_BENCH_CHECKPOINT_PARALLELISM'] ?? 2);
const rounds = Number(process.env['WEFT_BENCH_CHECKPOINT_ROUNDS'] ?? 1);
const WORDS = Array.from({ length: 10_000 }, (_, i) => `w${i.toString(36)}`);

const job = defineJob((ctx) => {
  ctx
    .generate((seq) => WORDS[Math.imul(seq, 0x9e3779b1) >>> 18] ?? 'w', { count: records, ratePerSecond: rate })
    .keyBy((w) => w)
    .count()
    .collect('counts');
}, { name: 'checkpoint-bench' });

async function run(checkpointing: CheckpointingOptions | undefined): Promise<{ recordsPerS: number; cpuSPerM: number; result: JobResult }> {
  const memory = createMemoryShuffleServiceFactory();
  const started = performance.now();
  const cpu = process.cpuUsage();
  const result = await runJob({ job, parallelism, exchangeMode: 'ALL_EDGES_PIPELINED', shuffle: { pipelined: memory, blocking: memory }, ...(checkpointing === undefined ? {} : { checkpointing }) });
  const s = (performance.now() - started) / 1000;
  const used = process.cpuUsage(cpu);
  if (result.status !== 'succeeded') throw new Error(`run failed: ${result.error?.message}`);
  return { recordsPerS: records / s, cpuSPerM: (used.user + used.system) / 1e6 / (records / 1e6), result };
}

function line(metric: string, unit: string, value: number, baseline: string, baselineValue: number): void {
  console.log(JSON.stringify({ bench: 'checkpoint', metric, unit, value: Number(value.toFixed(3)), baseline, baselineValue: Number(baselineValue.toFixed(3)), ratio: Number((value / baselineValue).toFixed(3)) }));
}

const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] as number;

console.log(`machine: ${cpus().length} cores (${cpus()[0]?.model ?? '?'}), ${(totalmem() / 2 ** 30).toFixed(0)} GiB, Node ${process.version}`);
console.log(`${records.toLocaleString('en')} records at ${rate.toLocaleString('en')}/s, ${WORDS.length.toLocaleString('en')} keys, parallelism ${parallelism}, interval ${intervalMs} ms, ${rounds} round(s) (median)`);
type Figure = { recordsPerS: number[]; cpuSPerM: number[] };
const figures: Record<'batch' | 'idle' | 'checkpointed', Figure> = { batch: { recordsPerS: [], cpuSPerM: [] }, idle: { recordsPerS: [], cpuSPerM: [] }, checkpointed: { recordsPerS: [], cpuSPerM: [] } };
let last: JobResult | undefined;
for (let round = 0; round < rounds; round++) {
  for (const [name, checkpointing] of [
    ['batch', undefined],
    ['idle', { intervalMs: 3_600_000, storage: new InMemoryCheckpointStorage() }],
    ['checkpointed', { intervalMs, storage: new InMemoryCheckpointStorage() }],
  ] as const) {
    const r = await run(checkpointing);
    figures[name].recordsPerS.push(r.recordsPerS);
    figures[name].cpuSPerM.push(r.cpuSPerM);
    if (name === 'checkpointed') last = r.result;
  }
}
const m = (name: keyof typeof figures) => ({ recordsPerS: median(figures[name].recordsPerS), cpuSPerM: median(figures[name].cpuSPerM) });
const [batch, idle, checkpointed] = [m('batch'), m('idle'), m('checkpointed')];
const c = last?.checkpoints;
console.log(`run           records/s   CPU s per M records`);
for (const [name, f, note] of [['batch', batch, ''], ['idle', idle, '   (streaming mode, no checkpoint taken)'], ['checkpointed', checkpointed, `   (${c?.completed ?? 0} completed, ${c?.aborted ?? 0} aborted in the last round; latest ${c?.latestStateBytes ?? 0} B of state in ${c?.latestDurationMs ?? 0} ms)`]] as const) {
  console.log(`${name.padEnd(12)}  ${Math.round(f.recordsPerS).toLocaleString('en').padStart(10)}   ${f.cpuSPerM.toFixed(3).padStart(8)}${note}`);
}
line('CPU per million records, checkpointed', 's', checkpointed.cpuSPerM, 'idle (streaming mode, no checkpoint taken)', idle.cpuSPerM);
line('CPU per million records, checkpointed', 's', checkpointed.cpuSPerM, 'batch (no checkpoints)', batch.cpuSPerM);
line('throughput checkpointed', 'records/s', checkpointed.recordsPerS, 'idle (no checkpoint taken)', idle.recordsPerS);
line('latest checkpoint state', 'bytes', c?.latestStateBytes ?? 0, 'records', records);
line('latest checkpoint duration', 'ms', c?.latestDurationMs ?? 0, 'interval', intervalMs);
