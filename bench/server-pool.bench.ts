// A shuffle server dying mid-job: terasort (`weft run examples/terasort.ts --shuffle-servers redis://…`,
// 2 worker processes) on a pool of three real `weft shuffle-server` processes, each bound to its own
// loopback address (127.0.0.2-4, three "hosts"), with one server SIGKILLed part-way through the job — with
// one copy of each partition (region failover re-runs the lost partitions' producers) and with
// `--shuffle-replicas 2` (readers fall back to the surviving copy). Baseline: the clean run with one copy,
// in the same rounds. Figures: wall time (process start to exit) against the clean run, tasks run again,
// and what replication costs on a clean run. Every run's output is checked byte-identical to the clean
// run's before any figure is printed.
//
//   npm run bench -- server-pool
//   WEFT_BENCH_POOL_RECORDS=500000 WEFT_BENCH_RUNS=1 npm run bench -- server-pool     (quicker)
import { spawn } from 'node:child_process';
import { mkdirSync, readFileSync, rmSync } from 'node:fs';
import { availableParallelism, cpus, totalmem } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { BenchReport, median, startShuffleServerPool } from '@weft/testkit';

const root = fileURLToPath(new URL('..', import.meta.url));
const records = Number(process.env['WEFT_BENCH_POOL_RECORDS'] ?? 2_000_000);
const runs = Number(process.env['WEFT_BENCH_RUNS'] ?? 3);
/** When the server dies, as a share of the clean run's wall time. */
const killAt = Number(process.env['WEFT_BENCH_POOL_KILL_AT'] ?? 0.45);
const parallelism = 4;
const workers = 2;
const hosts = ['127.0.0.2', '127.0.0.3', '127.0.0.4'];
const dir = join(root, '.weft', 'bench', 'server-pool');

interface Scenario {
  readonly name: string;
  readonly label: string;
  readonly replicas: number;
  readonly kill: boolean;
}
const scenarios: Scenario[] = [
  { name: 'clean', label: 'clean run, 1 copy', replicas: 1, kill: false },
  { name: 'kill', label: 'one server killed, 1 copy', replicas: 1, kill: true },
  { name: 'clean-r2', label: 'clean run, 2 replicas', replicas: 2, kill: false },
  { name: 'kill-r2', label: 'one server killed, 2 replicas', replicas: 2, kill: true },
];

interface Failover {
  readonly tasksToRestart: readonly string[];
  readonly tasksRunAgain: readonly string[];
}
interface Outcome {
  readonly seconds: number;
  readonly failovers: readonly Failover[];
  readonly attempts: number;
  readonly tasks: number;
  readonly killed: boolean;
}

async function run(scenario: Scenario, round: number, cleanSeconds: number | undefined): Promise<Outcome> {
  // a fresh pool each run (the default 2 s heartbeat: a killed server's record lives 10 s, as in production)
  await using pool = await startShuffleServerPool({ count: hosts.length, hosts, heartbeatMs: 2_000 });
  const output = join(dir, `${scenario.name}.txt`);
  const args = [
    'packages/cli/bin/weft.js', 'run', 'examples/terasort.ts', '--parallelism', String(parallelism), '--workers', String(workers),
    '--shuffle-servers', pool.redisUrl, '--shuffle-replicas', String(scenario.replicas),
    '--restart-strategy', 'fixed-delay', '--restart-attempts', '5', '--restart-delay', '10', '--json',
    '--', '--records', String(records), '--output', output,
  ];
  const started = performance.now();
  const child = spawn(process.execPath, args, { cwd: root, stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, WEFT_SHUFFLE_SECRET: pool.secret } });
  let killed = false;
  const timer = scenario.kill
    ? setTimeout(() => {
        // the middle server (its own process, not a shim): load-aware placement spreads partitions over all three
        void pool.servers[1]!.kill().then(() => (killed = true));
      }, (cleanSeconds ?? 10) * 1000 * killAt)
    : undefined;
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const code = await new Promise<number | null>((resolve, reject) => {
    child.once('error', reject);
    child.once('exit', (c) => resolve(c));
  });
  clearTimeout(timer);
  const seconds = (performance.now() - started) / 1000;
  if (code !== 0) throw new Error(`${scenario.name} exited with ${code}:\n${stderr}`);
  if (scenario.kill && !killed) throw new Error(`${scenario.name}: the job ended before the server was killed (${seconds.toFixed(2)} s)`);
  const summary = JSON.parse(stdout) as { failovers: Failover[]; attempts: number; tasks: number };
  return { seconds, failovers: summary.failovers, attempts: summary.attempts, tasks: summary.tasks, killed };
}


rmSync(dir, { recursive: true, force: true });
mkdirSync(dir, { recursive: true });
const cpu = cpus()[0]?.model ?? 'unknown CPU';
console.log(`machine: ${availableParallelism()} cores (${cpu}), ${(totalmem() / 2 ** 30).toFixed(0)} GiB, Node ${process.version}`);
console.log(
  `terasort: ${records.toLocaleString('en-US')} records (${((records * 100) / 2 ** 20).toFixed(0)} MiB), parallelism ${parallelism}, ${workers} workers, ` +
    `3 shuffle servers on ${hosts.join(', ')}, kill at ${Math.round(killAt * 100)} % of the clean run, ${runs} interleaved rounds, median wall time\n`,
);

// One untimed clean run first (cold caches), which also times the kill.
const warm = await run(scenarios[0]!, -1, undefined);
const outcomes = new Map<string, Outcome[]>(scenarios.map((s) => [s.name, []]));
for (let round = 0; round < runs; round++) {
  for (const scenario of scenarios) {
    const cleanSoFar = outcomes.get('clean')!.map((o) => o.seconds);
    const outcome = await run(scenario, round, cleanSoFar.length > 0 ? median(cleanSoFar) : warm.seconds);
    outcomes.get(scenario.name)!.push(outcome);
    if (scenario.name !== 'clean' && readFileSync(join(dir, `${scenario.name}.txt`)).compare(readFileSync(join(dir, 'clean.txt'))) !== 0) {
      throw new Error(`${scenario.name}: output differs from the clean run's`);
    }
  }
}
console.log('outputs: every run byte-identical to the clean run\n');

const seconds = (name: string): number => median(outcomes.get(name)!.map((o) => o.seconds));
const runAgain = (o: Outcome): number => o.failovers.reduce((total, f) => total + f.tasksRunAgain.length, 0);
const maxAgain = (name: string): number => Math.max(...outcomes.get(name)!.map(runAgain));
const clean = seconds('clean');
const report = new BenchReport('server-pool');
for (const s of scenarios) {
  const os = outcomes.get(s.name)!;
  report.row(s.label, `${seconds(s.name).toFixed(2)} s`, (seconds(s.name) / clean).toFixed(2), os.map((o) => o.failovers.length).join(', '), os.map(runAgain).join(', '));
}
report.report('kill-wall', 's', seconds('kill'), 'clean-run', clean);
report.report('kill-replicas-2-wall', 's', seconds('kill-r2'), 'clean-run', clean);
report.report('replicas-2-clean-wall', 's', seconds('clean-r2'), 'clean-run', clean);
report.report('kill-replicas-2-tasks-run-again-max', 'tasks', maxAgain('kill-r2'), 'kill-1-copy-tasks-run-again-max', maxAgain('kill'));
report.print('terasort on a 3-server pool, one server SIGKILLed mid-job', ['run', 'median', 'vs clean', 'failovers (each round)', 'tasks run again (each round)']);
rmSync(dir, { recursive: true, force: true });
