// ALL_EDGES_PIPELINED word count: the whole job is one pipelined region. On 1 worker it runs in that one
// process (in-memory pipelined shuffle); on 2 workers its tasks are spread over both processes and the
// pipelined exchanges cross them over TCP (@weft/shuffle-network). Same corpus, same parallelism (2),
// rounds interleaved, each run its own `weft run` process (start-up included), every output checked
// against the hand-written single-process script's — the same-run baseline — before a figure is printed.
//
//   npm run bench -- pipelined
//   WEFT_BENCH_PIPELINED_MB=30 WEFT_BENCH_RUNS=1 npm run bench -- pipelined     (quicker)
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { availableParallelism, cpus, loadavg, totalmem } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { writeCorpus } from '../examples/lib/corpus.js';
import { median } from '@weft/testkit';

const root = fileURLToPath(new URL('..', import.meta.url));
const megabytes = Number(process.env['WEFT_BENCH_PIPELINED_MB'] ?? 100);
const runs = Number(process.env['WEFT_BENCH_RUNS'] ?? 3);
const dir = join(root, '.weft', 'bench');
const corpus = join(dir, `word-count-${megabytes}mb.txt`);
const out = join(dir, 'pipelined-out');

interface Contender {
  readonly name: string;
  readonly label: string;
  readonly command: readonly string[];
  readonly output: string;
}

function weftPipelined(workers: number): Contender {
  const output = join(out, `pipelined-w${workers}.tsv`);
  return {
    name: `pipelined-w${workers}`,
    label: `weft run ALL_EDGES_PIPELINED, p2, ${workers} worker${workers === 1 ? '' : 's'} (${workers === 1 ? 'memory' : 'network'})`,
    command: [
      'packages/cli/bin/weft.js', 'run', 'examples/word-count.ts', '--parallelism', '2', '--workers', String(workers), '--exchange-mode', 'ALL_EDGES_PIPELINED',
      '--store', pathToFileURL(join(dir, 'shuffle')).href, '--meta', `sqlite://${join(dir, 'shuffle-meta.db')}`,
      '--', '--input', corpus, '--output', output,
    ],
    output,
  };
}

const contenders: Contender[] = [
  { name: 'hand-written', label: 'hand-written Node script (1 process)', command: ['bench/word-count-baseline.mjs', corpus, join(out, 'hand-written.tsv')], output: join(out, 'hand-written.tsv') },
  weftPipelined(1),
  weftPipelined(2),
];

/** CPU seconds (user + system) of this process's waited-for children so far: fields 16 and 17 of /proc/self/stat. */
function childrenCpuSeconds(): number {
  const stat = readFileSync('/proc/self/stat', 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(fields[13]) + Number(fields[14])) / 100;
}

function run(command: readonly string[]): Promise<{ wall: number; cpu: number }> {
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

console.log(`machine: ${availableParallelism()} cores (${cpus()[0]?.model ?? 'unknown CPU'}), ${(totalmem() / 2 ** 30).toFixed(0)} GiB, Node ${process.version}`);
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
    const reference = readCounts(join(out, 'hand-written.tsv'));
    for (const c of contenders.filter((c) => c.name !== 'hand-written')) {
      const problem = sameCounts(readCounts(c.output), reference);
      if (problem !== undefined) throw new Error(`${c.name} counted differently from the hand-written script: ${problem}`);
    }
    console.log(`outputs agree: ${reference.size} distinct words\n`);
  }
}

const wallOf = (name: string): number => median(times.get(name) ?? []);
const cpuOf = (name: string): number => median(cpuTimes.get(name) ?? []);
console.log(`${startedAt.toISOString()} – ${new Date().toISOString()}; 1-minute load average after each run: min ${Math.min(...loads).toFixed(2)}, median ${median(loads).toFixed(2)}, max ${Math.max(...loads).toFixed(2)}\n`);
console.log(`${'contender'.padEnd(58)} ${'wall'.padStart(8)} ${'CPU'.padStart(8)} ${'MiB/s'.padStart(7)}  wall runs`);
for (const c of contenders) {
  const s = wallOf(c.name);
  console.log(`${c.label.padEnd(58)} ${`${s.toFixed(2)} s`.padStart(8)} ${`${cpuOf(c.name).toFixed(2)} s`.padStart(8)} ${(bytes / 2 ** 20 / s).toFixed(0).padStart(7)}  ${(times.get(c.name) ?? []).map((t) => t.toFixed(2)).join(' ')}`);
}
console.log(`\nspeed-up of 2 workers over 1 (target ≥ 1.6): ${(wallOf('pipelined-w1') / wallOf('pipelined-w2')).toFixed(2)}×\n`);

const line = (metric: string, unit: string, value: number, baseline: string, baselineValue: number): void => {
  console.log(JSON.stringify({ bench: 'pipelined', metric, unit, value: Number(value.toFixed(3)), baseline, baselineValue: Number(baselineValue.toFixed(3)), ratio: Number((value / baselineValue).toFixed(3)) }));
};
// ratio = speed-up: the 1-worker wall time over the 2-worker one (throughput, MiB/s, so higher is better)
line('pipelined-w2-throughput', 'MiB/s', bytes / 2 ** 20 / wallOf('pipelined-w2'), 'pipelined-w1-throughput', bytes / 2 ** 20 / wallOf('pipelined-w1'));
line('pipelined-w2-wall', 's', wallOf('pipelined-w2'), 'hand-written-node', wallOf('hand-written'));
line('pipelined-w1-wall', 's', wallOf('pipelined-w1'), 'hand-written-node', wallOf('hand-written'));
