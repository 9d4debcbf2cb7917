// Word count over a generated corpus (200 MB by default): `weft run examples/word-count.ts` at parallelism
// 1 and 2 (worker processes, local-directory + SQLite blocking shuffle) against a hand-written
// single-process Node script and DuckDB, on the same file, in the same run, rounds interleaved. Each
// contender runs as its own process, start-up included, and writes `word<TAB>count` lines; every output is
// checked against the hand-written script's before any figure is printed.
//
//   npm run bench -- word-count
//   WEFT_BENCH_WORD_COUNT_MB=50 WEFT_BENCH_RUNS=1 npm run bench -- word-count     (quicker)
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { availableParallelism, cpus, totalmem } from 'node:os';
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
  { name: 'hand-written', label: 'hand-written Node script (1 process)', command: ['bench/word-count-baseline.mjs', corpus, join(out, 'hand-written.tsv')], output: join(out, 'hand-written.tsv') },
  weftRun(1),
  weftRun(2),
  { name: 'duckdb', label: 'DuckDB (2 threads)', command: ['bench/word-count-duckdb.mjs', corpus, join(out, 'duckdb.tsv'), '2'], output: join(out, 'duckdb.tsv') },
];

function run(command: readonly string[]): Promise<number> {
  return new Promise((resolve, reject) => {
    const started = performance.now();
    const child = spawn(process.execPath, command, { cwd: root, stdio: ['ignore', 'ignore', 'pipe'] });
    let stderr = '';
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    child.on('error', reject);
    child.on('exit', (code) => {
      const seconds = (performance.now() - started) / 1000;
      if (code === 0) resolve(seconds);
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

const cpu = cpus()[0]?.model ?? 'unknown CPU';
console.log(`machine: ${availableParallelism()} cores (${cpu}), ${(totalmem() / 2 ** 30).toFixed(0)} GiB, Node ${process.version}`);
console.log(`corpus: ${(bytes / 2 ** 20).toFixed(0)} MiB, ${runs} interleaved rounds, median wall time per contender (process start included)\n`);

const times = new Map<string, number[]>(contenders.map((c) => [c.name, []]));
for (let round = 0; round < runs; round++) {
  for (const c of contenders) times.get(c.name)?.push(await run(c.command));
  if (round === 0) {
    const reference = readCounts(contenders[0]?.output as string);
    for (const c of contenders.slice(1)) {
      const problem = sameCounts(readCounts(c.output), reference);
      if (problem !== undefined) throw new Error(`${c.name} counted differently from the hand-written script: ${problem}`);
    }
    console.log(`outputs agree: ${reference.size} distinct words, ${[...reference.values()].reduce((a, b) => a + b, 0)} words\n`);
  }
}

const seconds = new Map(contenders.map((c) => [c.name, median(times.get(c.name) ?? [])]));
const base = seconds.get('hand-written') as number;
const duck = seconds.get('duckdb') as number;
console.log(`${'contender'.padEnd(44)} ${'median'.padStart(8)} ${'MiB/s'.padStart(7)} ${'vs hand-written'.padStart(16)}  runs`);
for (const c of contenders) {
  const s = seconds.get(c.name) as number;
  console.log(`${c.label.padEnd(44)} ${`${s.toFixed(2)} s`.padStart(8)} ${(bytes / 2 ** 20 / s).toFixed(0).padStart(7)} ${(s / base).toFixed(2).padStart(16)}  ${(times.get(c.name) ?? []).map((t) => t.toFixed(2)).join(' ')}`);
}
console.log('');

const line = (metric: string, value: number, baseline: string, baselineValue: number): void => {
  console.log(JSON.stringify({ bench: 'word-count', metric, unit: 's', value: Number(value.toFixed(3)), baseline, baselineValue: Number(baselineValue.toFixed(3)), ratio: Number((value / baselineValue).toFixed(3)) }));
};
line('engine-p1-wall', seconds.get('engine-p1') as number, 'hand-written-node', base);
line('engine-p2-wall', seconds.get('engine-p2') as number, 'hand-written-node', base);
line('engine-p2-wall-vs-duckdb', seconds.get('engine-p2') as number, 'duckdb-2-threads', duck);
line('duckdb-wall', duck, 'hand-written-node', base);
