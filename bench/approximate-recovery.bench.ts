// Approximate local recovery (issue 16): a streaming word count (ctx.generate at a steady rate → keyed count
// without a combiner → collected counts, at-least-once checkpoints every 100 ms) in process over the
// in-memory shuffle, with count#0 throwing at a seeded record, run two ways in the same process:
//   approximate  --exchange-mode ALL_EDGES_PIPELINED_APPROXIMATE: count#0 restarts alone, from the latest
//                checkpoint; the sources and count#1 keep running
//   region       ALL_EDGES_PIPELINED (the baseline): the whole job is one region and restarts from the
//                latest checkpoint, the sources rewinding
// Figures: the time until output flows again — approximate: from the failure until count#0's new attempt
// read a record (JobResult.approximateRecoveries[0].durationMs); region: from the failure until the count
// vertex's records-in (summed over its live attempts, sampled every millisecond) rises again from its
// low after the restart — and the records lost (the records generated minus the sum of the final counts),
// against 2 × rate × recovery time (issue 16's bound). Targets: recovery ≤ 0.3× the region restart's, lost ≤
// 2 × rate × recovery time.
//
//   npm run bench -- approximate-recovery
//   WEFT_BENCH_APPROX_RATE=20000 WEFT_BENCH_APPROX_ROUNDS=3 npm run bench -- approximate-recovery
import { cpus, totalmem } from 'node:os';
import { defineJob, type FaultInjectorFactory, InMemoryCheckpointStorage, type JobProgress, type JobResult, runJob } from '@weft/engine';
import { createMemoryShuffleServiceFactory } from '@weft/shuffle-memory';

const rate = Number(process.env['WEFT_BENCH_APPROX_RATE'] ?? 20_000);
const seconds = Number(process.env['WEFT_BENCH_APPROX_SECONDS'] ?? 3);
const rounds = Number(process.env['WEFT_BENCH_APPROX_ROUNDS'] ?? 3);
const records = Math.round(rate * seconds);
const atRecord = Math.round(records / 4); // count#0 reads about half the records: fails about halfway
const WORDS = Array.from({ length: 1000 }, (_, i) => `w${i.toString(36)}`);

const job = defineJob((ctx) => {
  ctx
    .generate((seq) => WORDS[Math.imul(seq, 0x9e3779b1) >>> 22] ?? 'w', { count: records, splits: 4, ratePerSecond: rate })
    .keyBy((w) => w)
    .count({ combine: false })
    .collect('counts');
}, { name: 'approximate-recovery-bench' });

const fault: FaultInjectorFactory = () => ({ taskFault: ({ executionVertexId, attempt }) => (executionVertexId === 'count#0' && attempt === 0 ? { kind: 'throw', atRecord } : undefined) });

interface Round {
  readonly recoveryMs: number;
  readonly lost: number;
  readonly droppedUpstream: number;
}

async function run(mode: 'ALL_EDGES_PIPELINED_APPROXIMATE' | 'ALL_EDGES_PIPELINED'): Promise<Round> {
  const memory = createMemoryShuffleServiceFactory({ bufferSizeBytes: Number(process.env['WEFT_BENCH_APPROX_BUFFER_BYTES'] ?? 256) });
  const samples: { atMs: number; countIn: number }[] = [];
  const result: JobResult = await runJob({
    job,
    parallelism: 2,
    exchangeMode: mode,
    shuffle: { pipelined: memory, blocking: memory },
    restartStrategy: { type: 'fixed-delay', attempts: 2, delayMs: 0 },
    checkpointing: { intervalMs: 100, mode: 'at-least-once', tolerableFailures: 10, storage: new InMemoryCheckpointStorage() },
    faults: fault,
    progressIntervalMs: 1,
    onProgress: (p: JobProgress) => samples.push({ atMs: p.elapsedMs, countIn: p.vertices?.find((v) => v.id === 'count')?.recordsIn ?? 0 }),
  });
  if (result.status !== 'succeeded') throw new Error(`${mode} failed: ${result.error?.message}`);
  if (result.failovers.length !== 1) throw new Error(`${mode}: ${result.failovers.length} failovers, expected 1`);
  const counted = ((result.collected['counts'] ?? []) as [string, number][]).reduce((a, [, n]) => a + n, 0);
  const lost = Math.max(0, records - counted);
  const failedAt = (result.failovers[0] as { atMs: number }).atMs;
  if (mode === 'ALL_EDGES_PIPELINED_APPROXIMATE') {
    const recovery = result.approximateRecoveries?.[0];
    if (recovery?.durationMs === undefined) throw new Error('the approximate recovery did not complete');
    return { recoveryMs: recovery.durationMs, lost, droppedUpstream: recovery.recordsDroppedUpstream };
  }
  // progress samples and failovers share the job's clock (ms since it started)
  const after = samples.filter((s) => s.atMs >= failedAt);
  let low = Number.POSITIVE_INFINITY;
  let lowAt = -1;
  for (let i = 0; i < after.length; i++) {
    const s = after[i] as { countIn: number };
    if (s.countIn < low) {
      low = s.countIn;
      lowAt = i;
    }
  }
  const resumed = after.slice(lowAt + 1).find((s) => s.countIn > low);
  if (resumed === undefined) throw new Error('the region restart never read again');
  return { recoveryMs: resumed.atMs - failedAt, lost, droppedUpstream: 0 };
}

function line(metric: string, unit: string, value: number, baseline: string, baselineValue: number): void {
  console.log(JSON.stringify({ bench: 'approximate-recovery', metric, unit, value: Number(value.toFixed(3)), baseline, baselineValue: Number(baselineValue.toFixed(3)), ratio: Number((value / baselineValue).toFixed(3)) }));
}

const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] as number;

console.log(`machine: ${cpus().length} cores (${cpus()[0]?.model ?? '?'}), ${(totalmem() / 2 ** 30).toFixed(0)} GiB, Node ${process.version}`);
console.log(`${records.toLocaleString('en')} records at ${rate.toLocaleString('en')}/s, parallelism 2, count#0 throws at its record ${atRecord}, ${rounds} round(s) (median)`);
const approximate: Round[] = [];
const region: Round[] = [];
for (let round = 0; round < rounds; round++) {
  approximate.push(await run('ALL_EDGES_PIPELINED_APPROXIMATE'));
  region.push(await run('ALL_EDGES_PIPELINED'));
}
const a = { recoveryMs: median(approximate.map((r) => r.recoveryMs)), lost: median(approximate.map((r) => r.lost)), dropped: median(approximate.map((r) => r.droppedUpstream)) };
const r = { recoveryMs: median(region.map((x) => x.recoveryMs)), lost: median(region.map((x) => x.lost)) };
console.log('run           recovery ms   records lost   dropped upstream');
console.log(`approximate   ${a.recoveryMs.toFixed(1).padStart(11)}   ${String(a.lost).padStart(12)}   ${String(a.dropped).padStart(16)}`);
console.log(`region        ${r.recoveryMs.toFixed(1).padStart(11)}   ${String(r.lost).padStart(12)}   ${'-'.padStart(16)}`);
line('time until output flows again, approximate', 'ms', a.recoveryMs, 'region restart (ALL_EDGES_PIPELINED)', r.recoveryMs);
line('records lost, approximate', 'records', a.lost, '2 x rate x recovery time', (2 * rate * a.recoveryMs) / 1000);
