// Word count over a generated corpus (200 MB by default): `weft run examples/word-count.ts` at parallelism
// 1 and 2 (worker processes, local-directory + SQLite blocking shuffle) against a naive readline script, a
// hand-written single-process Node script and DuckDB, on the same file, in the same run, rounds
// interleaved. Each contender runs as its own process, start-up included, and writes `word<TAB>count`
// lines; every output is checked against the hand-written script's before any figure is printed. Wall
// time and CPU time (user + system of the process and the children it waited for, from /proc) per run.
//
//   npm run bench -- word-count
//   WEFT_BENCH_WORD_COUNT_MB=50 WEFT_BENCH_RUNS=1 npm run bench -- word-count     (quicker)
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { availableParallelism, cpus, loadavg, totalmem } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { writeCorpus } from '../examples/lib/corpus.js';
import { median } from '@weft/testkit';

const root = fileURLToPath(new URL('..', import.meta.url));
const megabytes = Number(process.env['WEFT_BENCH_WORD_COUNT_MB'] ?? 200);
const runs = Number(process.env['WEFT_BENCH_RUNS'] ?? 3);
const dir = join(root, '.weft', 'bench');
const corpus = join(dir, `word-count-${megabytes}mb.txt`);
const out = join(dir, 'word-count-out');

interface Contender {
  readonly name: string;
  readonly label: string;
  readonly command: readonly string[];
  readonly output: string;
}

function weftRun(parallelism: number): Contender {
  const output = join(out, `engine-p${parallelism}.tsv`);
  return {
    name: `engine-p${parallelism}`,
    label: `weft run, parallelism ${parallelism} (${parallelism} worker${parallelism === 1 ? '' : 's'})`,
    command: [
      'packages/cli/bin/weft.js', 'run', 'examples/word-count.ts', '--parallelism', String(parallelism), '--workers', String(parallelism),
      '--store', pathToFileURL(join(dir, 'shuffle')).href, '--meta', `sqlite://${join(dir, 'shuffle-meta.db')}`,
      '--', '--input', corpus, '--output', output,
    ],
    output,
  };
}

const contenders: Contender[] = [
  { name: 'naive', label: 'naive readline + split + Map (1 process)', command: ['bench/word-count-naive.mjs', corpus, join(out, 'naive.tsv')], output: join(out, 'naive.tsv') },
  { name: 'hand-written', label: 'hand-written Node script (1 process)', command: ['bench/word-count-baseline.mjs', corpus, join(out, 'hand-written.tsv')], output: join(out, 'hand-written.tsv') },
  weftRun(1),
  weftRun(2),
  { name: 'duckdb', label: 'DuckDB (2 threads)', command: ['bench/word-count-duckdb.mjs', corpus, join(out, 'duckdb.tsv'), '2'], output: join(out, 'duckdb.tsv') },
];

/** CPU seconds (user + system) of this process's waited-for children so far: fields 16 and 17 of /proc/self/stat. */
function childrenCpuSeconds(): number {
  const stat = readFileSync('/proc/self/stat', 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  // after "pid (comm) ", field 3 (state) is index 0: cutime is field 16, cstime 17
  return (Number(fields[13]) + Number(fields[14])) / CLOCK_TICKS;
}
/** USER_HZ: 100 on every Linux we run on (sysconf(_SC_CLK_TCK) is not reachable from Node). */
const CLOCK_TICKS = 100;

interface Measured {
  readonly wall: number;
  readonly cpu: number;
}

/**
 * Runs one contender; wall time from spawn to exit, CPU time of its process tree (the children it waited
 * for: the CLI reaps its workers before it exits, so theirs is included).
 */
function run(command: readonly string[]): Promise<Measured> {
  return new Promise((resolve, reject) => {
    const cpuBefore = childrenCpuSeconds();
    const started = performance.now();
    const child = spawn(process.execPath, command, { cwd: root, stdio: ['ignore', 'ignore', 'pipe'] });
    let stderr = '';
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    child.on('error', reject);
    child.on('exit', (code) => {
      const wall = (performance.now() - started) / 1000;
      if (code === 0) resolve({ wall, cpu: childrenCpuSeconds() - cpuBefore });
      else reject(new Error(`${command.join(' ')} exited with ${code}:\n${stderr}`));
    });
  });
}

function readCounts(path: string): Map<string, number> {
  const counts = new Map<string, number>();
  for (const line of readFileSync(path, 'utf8').split('\n')) {
    if (line === '') continue;
    const tab = line.lastIndexOf('\t');
    counts.set(line.slice(0, tab), Number(line.slice(tab + 1)));
  }
  return counts;
}

function sameCounts(a: Map<string, number>, b: Map<string, number>): string | undefined {
  if (a.size !== b.size) return `${a.size} distinct words instead of ${b.size}`;
  for (const [word, n] of b) if (a.get(word) !== n) return `${JSON.stringify(word)}: ${a.get(word)} instead of ${n}`;
  return undefined;
}


mkdirSync(dir, { recursive: true });
const wanted = megabytes * 1024 * 1024;
if (!existsSync(corpus) || statSync(corpus).size < wanted || statSync(corpus).size > wanted + 4096) {
  console.log(`generating ${megabytes} MB corpus at ${corpus} …`);
  writeCorpus(corpus, wanted);
}
const bytes = statSync(corpus).size;
rmSync(out, { recursive: true, force: true });
mkdirSync(out, { recursive: true });

const cpuModel = cpus()[0]?.model ?? 'unknown CPU';
console.log(`machine: ${availableParallelism()} cores (${cpuModel}), ${(totalmem() / 2 ** 30).toFixed(0)} GiB, Node ${process.version}`);
console.log(`corpus: ${(bytes / 2 ** 20).toFixed(0)} MiB, ${runs} interleaved rounds, median wall time per contender (process start included)\n`);

const times = new Map<string, number[]>(contenders.map((c) => [c.name, []]));
const cpuTimes = new Map<string, number[]>(contenders.map((c) => [c.name, []]));
const loads: number[] = [];
const startedAt = new Date();
for (let round = 0; round < runs; round++) {
  for (const c of contenders) {
    const m = await run(c.command);
    times.get(c.name)?.push(m.wall);
    cpuTimes.get(c.name)?.push(m.cpu);
    loads.push(loadavg()[0] ?? 0);
  }
  if (round === 0) {
    const reference = readCounts(contenders.find((c) => c.name === 'hand-written')?.output as string);
    for (const c of contenders.filter((c) => c.name !== 'hand-written')) {
      const problem = sameCounts(readCounts(c.output), reference);
      if (problem !== undefined) throw new Error(`${c.name} counted differently from the hand-written script: ${problem}`);
    }
    console.log(`outputs agree: ${reference.size} distinct words, ${[...reference.values()].reduce((a, b) => a + b, 0)} words\n`);
  }
}

const seconds = new Map(contenders.map((c) => [c.name, median(times.get(c.name) ?? [])]));
const cpu = new Map(contenders.map((c) => [c.name, median(cpuTimes.get(c.name) ?? [])]));
const wallOf = (name: string): number => seconds.get(name) as number;
const cpuOf = (name: string): number => cpu.get(name) as number;
const base = wallOf('hand-written');
console.log(`${startedAt.toISOString()} – ${new Date().toISOString()}; 1-minute load average after each run: min ${Math.min(...loads).toFixed(2)}, median ${median(loads).toFixed(2)}, max ${Math.max(...loads).toFixed(2)}\n`);
console.log(`${'contender'.padEnd(44)} ${'wall'.padStart(8)} ${'CPU'.padStart(8)} ${'MiB/s'.padStart(7)} ${'vs hand-written'.padStart(16)}  wall runs / CPU runs`);
for (const c of contenders) {
  const s = wallOf(c.name);
  const runsText = `${(times.get(c.name) ?? []).map((t) => t.toFixed(2)).join(' ')} / ${(cpuTimes.get(c.name) ?? []).map((t) => t.toFixed(2)).join(' ')}`;
  console.log(`${c.label.padEnd(44)} ${`${s.toFixed(2)} s`.padStart(8)} ${`${cpuOf(c.name).toFixed(2)} s`.padStart(8)} ${(bytes / 2 ** 20 / s).toFixed(0).padStart(7)} ${(s / base).toFixed(2).padStart(16)}  ${runsText}`);
}
console.log('');

const line = (metric: string, value: number, baseline: string, baselineValue: number): void => {
  console.log(JSON.stringify({ bench: 'word-count', metric, unit: 's', value: Number(value.toFixed(3)), baseline, baselineValue: Number(baselineValue.toFixed(3)), ratio: Number((value / baselineValue).toFixed(3)) }));
};
line('engine-p1-wall', wallOf('engine-p1'), 'hand-written-node', base);
line('engine-p2-wall', wallOf('engine-p2'), 'hand-written-node', base);
line('engine-p1-wall-vs-naive', wallOf('engine-p1'), 'naive-readline-node', wallOf('naive'));
line('engine-p2-wall-vs-duckdb', wallOf('engine-p2'), 'duckdb-2-threads', wallOf('duckdb'));
line('engine-p2-cpu-vs-duckdb', cpuOf('engine-p2'), 'duckdb-2-threads-cpu', cpuOf('duckdb'));
line('engine-p1-cpu-vs-naive', cpuOf('engine-p1'), 'naive-readline-node-cpu', cpuOf('naive'));
line('duckdb-wall', wallOf('duckdb'), 'hand-written-node', base);
