// Peak shuffle storage with partitions released as the job goes (the default: a result's partitions are
// released once every region reading them finished, Flink's RegionPartitionGroupReleaseStrategy) against
// keeping them all until the job ends (`weft run --no-release-during-job`, what Weft did before), for the
// terasort and word count examples on the embedded local store (a local directory + SQLite). While each
// run goes, this process walks the store directory every 20 ms and sums the sizes of the files in it;
// the figure is the largest sum seen. Both settings run in the same rounds, interleaved; outputs checked
// equal between them.
//
//   npm run bench -- peak-storage
//   WEFT_BENCH_STORAGE_RECORDS=200000 WEFT_BENCH_STORAGE_LINES=200000 WEFT_BENCH_RUNS=1 npm run bench -- peak-storage   (quicker)
import { spawn } from 'node:child_process';
import { mkdirSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { availableParallelism, cpus, totalmem } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { BenchReport } from '@weft/testkit';

const root = fileURLToPath(new URL('..', import.meta.url));
const records = Number(process.env['WEFT_BENCH_STORAGE_RECORDS'] ?? 2_000_000);
const lines = Number(process.env['WEFT_BENCH_STORAGE_LINES'] ?? 2_000_000);
const runs = Number(process.env['WEFT_BENCH_RUNS'] ?? 2);
const parallelism = 4;
const workers = 2;
const sampleMs = 20;
const dir = join(root, '.weft', 'bench', 'peak-storage');

interface Job {
  readonly name: string;
  readonly module: string;
  readonly args: readonly string[];
}

const jobs: Job[] = [
  { name: 'terasort', module: 'examples/terasort.ts', args: ['--records', String(records)] },
  { name: 'word-count', module: 'examples/word-count.ts', args: ['--lines', String(lines)] },
];
const settings = [
  { name: 'released', label: 'released as the job goes', flags: [] as string[] },
  { name: 'kept', label: 'kept until the job ends', flags: ['--no-release-during-job'] },
] as const;

/** Total bytes of the files under `path` (0 when it does not exist yet); files may vanish mid-walk. */
function bytesUnder(path: string): number {
  let total = 0;
  let entries;
  try {
    entries = readdirSync(path, { withFileTypes: true });
  } catch {
    return 0;
  }
  for (const entry of entries) {
    const child = join(path, entry.name);
    if (entry.isDirectory()) total += bytesUnder(child);
    else {
      try {
        total += statSync(child).size;
      } catch {
        // deleted between the listing and the stat
      }
    }
  }
  return total;
}

interface Outcome {
  readonly peakBytes: number;
  readonly seconds: number;
  readonly samples: number;
  readonly bytesShuffled: number;
  readonly releasedDuringJob: number;
}

function run(job: Job, setting: (typeof settings)[number], round: number): Promise<Outcome> {
  const store = join(dir, `store-${job.name}-${setting.name}-${round}`);
  const output = join(dir, `${job.name}-${setting.name}.out`);
  const args = [
    'packages/cli/bin/weft.js', 'run', job.module, '--parallelism', String(parallelism), '--workers', String(workers),
    '--store', pathToFileURL(store).href, '--meta', `sqlite://${store}.db`, '--json', ...setting.flags, '--', ...job.args, '--output', output,
  ];
  return new Promise((resolve, reject) => {
    const started = performance.now();
    let peakBytes = 0;
    let samples = 0;
    const timer = setInterval(() => {
      peakBytes = Math.max(peakBytes, bytesUnder(store));
      samples++;
    }, sampleMs);
    const child = spawn(process.execPath, args, { cwd: root, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    child.on('error', reject);
    child.on('exit', (code) => {
      clearInterval(timer);
      const seconds = (performance.now() - started) / 1000;
      rmSync(store, { recursive: true, force: true });
      rmSync(`${store}.db`, { force: true });
      if (code !== 0) {
        reject(new Error(`${job.name} (${setting.name}) exited with ${code}:\n${stderr}`));
        return;
      }
      const summary = JSON.parse(stdout) as { bytesShuffled: number; partitionsReleasedDuringJob: number };
      resolve({ peakBytes, seconds, samples, bytesShuffled: summary.bytesShuffled, releasedDuringJob: summary.partitionsReleasedDuringJob });
    });
  });
}

const median = (values: readonly number[]): number => {
  const sorted = [...values].sort((x, y) => x - y);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? (sorted[mid] as number) : ((sorted[mid - 1] as number) + (sorted[mid] as number)) / 2;
};
const mib = (bytes: number): string => `${(bytes / 2 ** 20).toFixed(1)} MiB`;

rmSync(dir, { recursive: true, force: true });
mkdirSync(dir, { recursive: true });
const cpu = cpus()[0]?.model ?? 'unknown CPU';
console.log(`machine: ${availableParallelism()} cores (${cpu}), ${(totalmem() / 2 ** 30).toFixed(0)} GiB, Node ${process.version}`);
console.log(
  `terasort ${records.toLocaleString('en-US')} records, word count ${lines.toLocaleString('en-US')} generated lines; parallelism ${parallelism}, ${workers} workers, ` +
    `local directory + SQLite; store walked every ${sampleMs} ms; ${runs} interleaved rounds (figures: the median of the rounds)\n`,
);

const outcomes = new Map<string, Outcome[]>();
for (let round = 0; round < runs; round++) {
  for (const job of jobs) {
    for (const setting of settings) {
      const outcome = await run(job, setting, round);
      const key = `${job.name}/${setting.name}`;
      outcomes.set(key, [...(outcomes.get(key) ?? []), outcome]);
    }
    const released = readFileSync(join(dir, `${job.name}-released.out`));
    if (released.compare(readFileSync(join(dir, `${job.name}-kept.out`))) !== 0) throw new Error(`${job.name}: outputs differ between the two settings`);
  }
}

const report = new BenchReport('peak-storage');
for (const job of jobs) {
  const of = (setting: string): Outcome[] => outcomes.get(`${job.name}/${setting}`) ?? [];
  for (const setting of settings) {
    const o = of(setting.name);
    report.row(
      job.name,
      setting.label,
      mib(median(o.map((x) => x.peakBytes))),
      o.map((x) => mib(x.peakBytes)).join(' '),
      mib((o[0] as Outcome).bytesShuffled),
      String((o[0] as Outcome).releasedDuringJob),
      `${median(o.map((x) => x.seconds)).toFixed(2)} s`,
      String(Math.min(...o.map((x) => x.samples))),
    );
  }
  const peak = (setting: string): number => median(of(setting).map((x) => x.peakBytes));
  const seconds = (setting: string): number => median(of(setting).map((x) => x.seconds));
  report.report(`${job.name}-peak-store-bytes`, 'bytes', peak('released'), 'kept-until-job-end', peak('kept'));
  report.report(`${job.name}-wall`, 's', seconds('released'), 'kept-until-job-end', seconds('kept'));
}
report.print('peak bytes in the store directory (median of the rounds), each run listed', ['job', 'partitions', 'peak', 'runs', 'shuffled', 'released during job', 'wall (median)', 'samples (min)']);
rmSync(dir, { recursive: true, force: true });
