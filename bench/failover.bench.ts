// Failover cost: the terasort example (`weft run examples/terasort.ts`, 2 worker processes, the local
// directory + SQLite blocking shuffle) with one worker killed (SIGKILL) mid-run — in the middle of the
// range-assignment stage, and in the middle of the sort stage — recovering by region failover and by
// restarting all tasks, against a clean run in the same rounds. Figures: time to finish (process start to
// exit) against the clean run, and tasks re-executed by region failover against restart-all — both the
// tasks reset (the blast radius `weft plan --fail` predicts) and the tasks whose work was done again.
// Every run's output is checked byte-identical to the clean run's before any figure is printed.
//
//   npm run bench -- failover
//   WEFT_BENCH_FAILOVER_RECORDS=200000 WEFT_BENCH_RUNS=1 npm run bench -- failover     (quicker)
import { spawn } from 'node:child_process';
import { mkdirSync, readFileSync, rmSync } from 'node:fs';
import { availableParallelism, cpus, totalmem } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { median } from '@weft/testkit';

const root = fileURLToPath(new URL('..', import.meta.url));
const records = Number(process.env['WEFT_BENCH_FAILOVER_RECORDS'] ?? 1_000_000);
const runs = Number(process.env['WEFT_BENCH_RUNS'] ?? 3);
const parallelism = 4;
const workers = 2;
const dir = join(root, '.weft', 'bench', 'failover');
/** A task's share of the records: the kill fires half-way through its input. */
const half = Math.floor(records / parallelism / 2);

interface Scenario {
  readonly name: string;
  readonly label: string;
  readonly flags: readonly string[];
}

const killPoints = [
  { name: 'assign', label: 'range assignment', fault: `kill-worker:sort-assign#1@${half}` },
  { name: 'sort', label: 'sort', fault: `kill-worker:sort#1@${half}` },
];
const scenarios: Scenario[] = [
  { name: 'clean', label: 'clean run', flags: [] },
  ...killPoints.flatMap((k) =>
    (['region', 'all'] as const).map((strategy) => ({
      name: `${k.name}-${strategy}`,
      label: `worker killed mid-${k.label}, ${strategy === 'region' ? 'region failover' : 'restart all'}`,
      flags: ['--inject-faults', `seed=1,${k.fault}`, '--failover-strategy', strategy, '--restart-strategy', 'fixed-delay', '--restart-attempts', '3', '--restart-delay', '10'],
    })),
  ),
];

interface Failover {
  readonly tasksToRestart: readonly string[];
  readonly tasksRunAgain: readonly string[];
  readonly tasksTotal: number;
  readonly tasksDeployed: number;
  readonly failedTask: string;
}

interface Outcome {
  readonly seconds: number;
  readonly failovers: readonly Failover[];
  readonly attempts: number;
  readonly tasks: number;
}

function run(scenario: Scenario, round: number): Promise<Outcome> {
  const output = join(dir, `${scenario.name}.txt`);
  const store = join(dir, `store-${scenario.name}-${round}`);
  const args = [
    'packages/cli/bin/weft.js', 'run', 'examples/terasort.ts', '--parallelism', String(parallelism), '--workers', String(workers),
    '--store', pathToFileURL(store).href, '--meta', `sqlite://${store}.db`, '--json', ...scenario.flags, '--', '--records', String(records), '--output', output,
  ];
  return new Promise((resolve, reject) => {
    const started = performance.now();
    const child = spawn(process.execPath, args, { cwd: root, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    child.on('error', reject);
    child.on('exit', (code) => {
      const seconds = (performance.now() - started) / 1000;
      rmSync(store, { recursive: true, force: true });
      rmSync(`${store}.db`, { force: true });
      if (code !== 0) {
        reject(new Error(`${scenario.name} exited with ${code}:\n${stderr}`));
        return;
      }
      const summary = JSON.parse(stdout) as { failovers: Failover[]; attempts: number; tasks: number };
      resolve({ seconds, failovers: summary.failovers, attempts: summary.attempts, tasks: summary.tasks });
    });
  });
}


rmSync(dir, { recursive: true, force: true });
mkdirSync(dir, { recursive: true });
const cpu = cpus()[0]?.model ?? 'unknown CPU';
console.log(`machine: ${availableParallelism()} cores (${cpu}), ${(totalmem() / 2 ** 30).toFixed(0)} GiB, Node ${process.version}`);
console.log(`terasort: ${records.toLocaleString('en-US')} records (${((records * 100) / 2 ** 20).toFixed(0)} MiB), parallelism ${parallelism}, ${workers} workers, ${runs} interleaved rounds, median wall time (process start included)\n`);

// One untimed run first: the first process to load the TypeScript sources pays for cold caches.
await run(scenarios[0] as Scenario, -1);
const outcomes = new Map<string, Outcome[]>(scenarios.map((s) => [s.name, []]));
for (let round = 0; round < runs; round++) {
  for (const scenario of scenarios) {
    const outcome = await run(scenario, round);
    if (scenario.name !== 'clean' && outcome.failovers.length === 0) throw new Error(`${scenario.name}: the worker was not killed (no failover)`);
    outcomes.get(scenario.name)?.push(outcome);
    if (scenario.name !== 'clean' && readFileSync(join(dir, `${scenario.name}.txt`)).compare(readFileSync(join(dir, 'clean.txt'))) !== 0) {
      throw new Error(`${scenario.name}: output differs from the clean run's`);
    }
  }
}
console.log('outputs: every run byte-identical to the clean run\n');

const seconds = (name: string): number => median((outcomes.get(name) ?? []).map((o) => o.seconds));
const first = (name: string): Outcome => (outcomes.get(name) ?? [])[0] as Outcome;
const sum = (name: string, pick: (f: Failover) => number): number => first(name).failovers.reduce((total, f) => total + pick(f), 0);
const clean = seconds('clean');

console.log(`${'run'.padEnd(52)} ${'median'.padStart(8)} ${'vs clean'.padStart(9)} ${'tasks reset'.padStart(12)} ${'run again'.padStart(10)}  attempts`);
for (const s of scenarios) {
  const o = first(s.name);
  const reset = s.name === 'clean' ? '-' : `${sum(s.name, (f) => f.tasksToRestart.length)} of ${o.tasks}`;
  const again = s.name === 'clean' ? '-' : `${sum(s.name, (f) => f.tasksRunAgain.length)}`;
  console.log(`${s.label.padEnd(52)} ${`${seconds(s.name).toFixed(2)} s`.padStart(8)} ${(seconds(s.name) / clean).toFixed(2).padStart(9)} ${reset.padStart(12)} ${again.padStart(10)}  ${o.attempts}`);
}
for (const k of killPoints) {
  const f = first(`${k.name}-region`).failovers[0];
  if (f !== undefined) console.log(`  mid-${k.label}: ${f.failedTask} failed; region failover reset ${f.tasksToRestart.join(', ')}`);
}
console.log('');

const line = (metric: string, unit: string, value: number, baseline: string, baselineValue: number): void => {
  console.log(JSON.stringify({ bench: 'failover', metric, unit, value: Number(value.toFixed(3)), baseline, baselineValue: Number(baselineValue.toFixed(3)), ratio: Number((value / baselineValue).toFixed(3)) }));
};
for (const k of killPoints) {
  line(`${k.name}-kill-region-wall`, 's', seconds(`${k.name}-region`), 'clean-run', clean);
  line(`${k.name}-kill-all-wall`, 's', seconds(`${k.name}-all`), 'clean-run', clean);
  line(`${k.name}-kill-region-wall-vs-all`, 's', seconds(`${k.name}-region`), 'restart-all', seconds(`${k.name}-all`));
  line(`${k.name}-kill-tasks-reset`, 'tasks', sum(`${k.name}-region`, (f) => f.tasksToRestart.length), 'restart-all', sum(`${k.name}-all`, (f) => f.tasksToRestart.length));
  line(`${k.name}-kill-tasks-run-again`, 'tasks', sum(`${k.name}-region`, (f) => f.tasksRunAgain.length), 'restart-all', sum(`${k.name}-all`, (f) => f.tasksRunAgain.length));
}
// The outputs (about 100 MB each) are not kept.
rmSync(dir, { recursive: true, force: true });
