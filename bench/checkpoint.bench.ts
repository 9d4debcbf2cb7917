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
// records/s reached, the records that crossed the shuffle, and the last checkpoint's state size and
// duration (trigger to completion). One untimed warm-up run of each first (the JIT), then
// WEFT_BENCH_CHECKPOINT_ROUNDS rounds (default 5), the three runs of each round in a rotating order; the
// ratios are taken within each round (checkpointed against the idle run next to it) and reported as
// median [min – max] over the rounds: a ±10 % noise of single runs on a shared machine must not decide
// the ≤ 1.10 target.
//
//   npm run bench -- checkpoint
//   WEFT_BENCH_CHECKPOINT_RECORDS=1000000 WEFT_BENCH_CHECKPOINT_ROUNDS=1 npm run bench -- checkpoint     (quicker)
import { cpus, totalmem } from 'node:os';
import { type CheckpointingOptions, defineJob, InMemoryCheckpointStorage, type JobResult, runJob } from '@weft/engine';
import { createMemoryShuffleServiceFactory } from '@weft/shuffle-memory';

const records = Number(process.env['WEFT_BENCH_CHECKPOINT_RECORDS'] ?? 5_000_000);
const rate = Number(process.env['WEFT_BENCH_CHECKPOINT_RATE'] ?? 1_000_000);
const intervalMs = Number(process.env['WEFT_BENCH_CHECKPOINT_INTERVAL_MS'] ?? 1000);
const parallelism = Number(process.env['WEFT_BENCH_CHECKPOINT_PARALLELISM'] ?? 2);
const rounds = Number(process.env['WEFT_BENCH_CHECKPOINT_ROUNDS'] ?? 5);
const WORDS = Array.from({ length: 10_000 }, (_, i) => `w${i.toString(36)}`);

const jobOf = (count: number) => defineJob((ctx) => {
  ctx
    .generate((seq) => WORDS[Math.imul(seq, 0x9e3779b1) >>> 18] ?? 'w', { count, ratePerSecond: rate })
    .keyBy((w) => w)
    .count()
    .collect('counts');
}, { name: 'checkpoint-bench' });

async function run(checkpointing: CheckpointingOptions | undefined, count = records): Promise<{ recordsPerS: number; cpuSPerM: number; result: JobResult }> {
  const memory = createMemoryShuffleServiceFactory();
  const started = performance.now();
  const cpu = process.cpuUsage();
  const result = await runJob({ job: jobOf(count), parallelism, exchangeMode: 'ALL_EDGES_PIPELINED', shuffle: { pipelined: memory, blocking: memory }, ...(checkpointing === undefined ? {} : { checkpointing }) });
  const s = (performance.now() - started) / 1000;
  const used = process.cpuUsage(cpu);
  if (result.status !== 'succeeded') throw new Error(`run failed: ${result.error?.message}`);
  return { recordsPerS: count / s, cpuSPerM: (used.user + used.system) / 1e6 / (count / 1e6), result };
}

/** One JSON figure; `ratio`: the median of the per-round ratios where given (not the ratio of the medians). */
function line(metric: string, unit: string, value: number, baseline: string, baselineValue: number, ratio = value / baselineValue): void {
  console.log(JSON.stringify({ bench: 'checkpoint', metric, unit, value: Number(value.toFixed(3)), baseline, baselineValue: Number(baselineValue.toFixed(3)), ratio: Number(ratio.toFixed(3)) }));
}

const median = (xs: readonly number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] as number;
const spread = (xs: readonly number[], digits: number): string => `${median(xs).toFixed(digits)} [${Math.min(...xs).toFixed(digits)} – ${Math.max(...xs).toFixed(digits)}]`;

console.log(`machine: ${cpus().length} cores (${cpus()[0]?.model ?? '?'}), ${(totalmem() / 2 ** 30).toFixed(0)} GiB, Node ${process.version}`);
console.log(`${records.toLocaleString('en')} records at ${rate.toLocaleString('en')}/s, ${WORDS.length.toLocaleString('en')} keys, parallelism ${parallelism}, interval ${intervalMs} ms, ${rounds} round(s), medians [min – max]`);
type Mode = 'batch' | 'idle' | 'checkpointed';
const MODES: readonly Mode[] = ['batch', 'idle', 'checkpointed'];
const checkpointingOf = (mode: Mode): CheckpointingOptions | undefined =>
  mode === 'batch' ? undefined : { intervalMs: mode === 'idle' ? 3_600_000 : intervalMs, storage: new InMemoryCheckpointStorage() };
type Figure = { recordsPerS: number[]; cpuSPerM: number[]; shuffled: number[] };
const figures: Record<Mode, Figure> = { batch: { recordsPerS: [], cpuSPerM: [], shuffled: [] }, idle: { recordsPerS: [], cpuSPerM: [], shuffled: [] }, checkpointed: { recordsPerS: [], cpuSPerM: [], shuffled: [] } };
const ratios = { idle: [] as number[], batch: [] as number[], throughput: [] as number[] };
const checkpoints = { completed: [] as number[], stateBytes: [] as number[], durationMs: [] as number[] };
let last: JobResult | undefined;
// warm-up: the first runs of a process pay the JIT; not counted
for (const mode of MODES) await run(checkpointingOf(mode), Math.min(records, 2 * rate));
for (let round = 0; round < rounds; round++) {
  const order = MODES.map((_, i) => MODES[(i + round) % MODES.length] as Mode);
  const inRound = {} as Record<Mode, { recordsPerS: number; cpuSPerM: number }>;
  for (const mode of order) {
    const r = await run(checkpointingOf(mode));
    inRound[mode] = r;
    figures[mode].recordsPerS.push(r.recordsPerS);
    figures[mode].cpuSPerM.push(r.cpuSPerM);
    figures[mode].shuffled.push(r.result.recordsShuffled);
    if (mode === 'checkpointed') {
      last = r.result;
      const c = r.result.checkpoints;
      checkpoints.completed.push(c?.completed ?? 0);
      checkpoints.stateBytes.push(c?.latestStateBytes ?? 0);
      checkpoints.durationMs.push(c?.latestDurationMs ?? 0);
    }
  }
  ratios.idle.push(inRound.checkpointed.cpuSPerM / inRound.idle.cpuSPerM);
  ratios.batch.push(inRound.checkpointed.cpuSPerM / inRound.batch.cpuSPerM);
  ratios.throughput.push(inRound.checkpointed.recordsPerS / inRound.idle.recordsPerS);
  console.log(`round ${round + 1} (${order.join(', ')}): CPU s per M records ${MODES.map((m) => `${m} ${inRound[m].cpuSPerM.toFixed(3)}`).join(', ')}; checkpointed / idle ${(ratios.idle.at(-1) as number).toFixed(3)}`);
}
const c = last?.checkpoints;
console.log(`run           records/s   CPU s per M records       records shuffled`);
for (const [name, note] of [['batch', ''], ['idle', '   (streaming mode, no checkpoint taken)'], ['checkpointed', `   (${spread(checkpoints.completed, 0)} completed, ${c?.aborted ?? 0} aborted in the last round; latest ${spread(checkpoints.stateBytes, 0)} B of state in ${spread(checkpoints.durationMs, 0)} ms)`]] as const) {
  const f = figures[name];
  console.log(`${name.padEnd(12)}  ${Math.round(median(f.recordsPerS)).toLocaleString('en').padStart(10)}   ${spread(f.cpuSPerM, 3).padStart(22)}   ${Math.round(median(f.shuffled)).toLocaleString('en').padStart(10)}${note}`);
}
console.log(`checkpointed / idle CPU, per round: ${spread(ratios.idle, 3)} (target <= 1.10); against batch ${spread(ratios.batch, 3)}`);
const [idle, batch, checkpointed] = [median(figures.idle.cpuSPerM), median(figures.batch.cpuSPerM), median(figures.checkpointed.cpuSPerM)];
line('CPU per million records, checkpointed', 's', checkpointed, 'idle (streaming mode, no checkpoint taken)', idle, median(ratios.idle));
line('CPU per million records, checkpointed', 's', checkpointed, 'batch (no checkpoints)', batch, median(ratios.batch));
line('throughput checkpointed', 'records/s', median(figures.checkpointed.recordsPerS), 'idle (no checkpoint taken)', median(figures.idle.recordsPerS), median(ratios.throughput));
line('records shuffled, checkpointed', 'records', median(figures.checkpointed.shuffled), 'idle (no checkpoint taken)', median(figures.idle.shuffled));
line('latest checkpoint state', 'bytes', median(checkpoints.stateBytes), 'records', records);
line('latest checkpoint duration', 'ms', median(checkpoints.durationMs), 'interval', intervalMs);
