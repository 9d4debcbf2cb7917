// Adaptive parallelism (issue 14), two parts (WEFT_BENCH_ADAPTIVE_PARTS, default `tpch,zipf`):
//
// tpch: the TPC-H-like join + aggregate (examples/tpch-revenue.ts: ORDERS ⋈ CUSTOMER on the customer key,
// summed per nation and segment) over generated dbgen-style tables of about WEFT_BENCH_ADAPTIVE_MB MiB
// (default 1024), run by `weft run` on 2 worker processes with the local directory + SQLite blocking
// shuffle: `--parallelism auto` (Flink's defaults) against hand-picked parallelisms
// (WEFT_BENCH_ADAPTIVE_PARALLELISMS, default 1,2,4,8), rounds interleaved, median wall time. Figures:
// auto / best hand-picked (target ≤ 1.1) and worst hand-picked / auto (target ≥ 1.5).
//
// zipf: a Zipf-skewed join (bench/jobs/zipf-join.ts: FACTS ⋈ DIMS, keys Zipf s = WEFT_BENCH_SKEW_S,
// default 1.5, over 100,000 keys, then summed per key) over about WEFT_BENCH_SKEW_MB MiB (default 256) on
// WEFT_BENCH_SKEW_WORKERS worker processes (default 4): `--parallelism auto --skewed-threshold 8mb` with
// skew handling against the same with `--skewed-join none`. Figure: without / with (target ≥ 1.5).
//
// Every output is checked equal to its part's first contender's (as sorted lines) before figures print.
//
//   npm run bench -- adaptive
//   WEFT_BENCH_ADAPTIVE_MB=64 WEFT_BENCH_SKEW_MB=64 WEFT_BENCH_RUNS=1 npm run bench -- adaptive      (quicker)
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, statSync } from 'node:fs';
import { cpus, loadavg, totalmem } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { BenchReport, median, round } from '@weft/testkit';
import { writeTpchTables } from '../examples/lib/tpch-data.js';
import { writeZipfTables } from './jobs/zipf-join.js';

const root = fileURLToPath(new URL('..', import.meta.url));
const mib = Number(process.env['WEFT_BENCH_ADAPTIVE_MB'] ?? 1024);
const runs = Number(process.env['WEFT_BENCH_RUNS'] ?? 3);
const parallelisms = (process.env['WEFT_BENCH_ADAPTIVE_PARALLELISMS'] ?? '1,2,4,8').split(',').map(Number);
const workers = 2;
const dir = join(root, '.weft', 'bench', 'adaptive');
const out = new BenchReport('adaptive');
const parts = (process.env['WEFT_BENCH_ADAPTIVE_PARTS'] ?? 'tpch,zipf').split(',');
const loads: number[] = [];
const machine = (): string => `# ${cpus().length} cores (${cpus()[0]?.model ?? '?'}), ${round(totalmem() / 2 ** 30)} GiB, Node ${process.version}; load (1 min) min ${round(Math.min(...loads))} median ${round(median(loads))} max ${round(Math.max(...loads))}`;

/** A dbgen-style orders line is about 32 bytes, a customer line about 37; one customer per 10 orders. */
const orders = Math.max(1000, Math.floor((mib * 1024 * 1024) / 35.7));
const customers = Math.max(100, Math.floor(orders / 10));
const tables = join(dir, `tpch-${mib}mib`);
if (parts.includes('tpch') && !existsSync(join(tables, 'orders.tbl'))) {
  mkdirSync(dir, { recursive: true });
  console.log(`# generating ${orders} orders and ${customers} customers in ${tables}`);
  writeTpchTables(tables, customers, orders);
}
const inputBytes = parts.includes('tpch') ? statSync(join(tables, 'orders.tbl')).size + statSync(join(tables, 'customer.tbl')).size : 0;

interface Summary {
  readonly status: string;
  readonly durationMs: number;
  readonly vertices: readonly { readonly id: string; readonly parallelism: number; readonly decided?: { readonly bytesIn: number; readonly skewedSplits?: readonly unknown[] } }[];
}

function run(name: string, flags: string[], job = 'examples/tpch-revenue.ts', input = tables, workerCount = workers): { wallMs: number; summary: Summary; output: string } {
  const output = join(dir, `out-${name}.tsv`);
  const started = performance.now();
  const child = spawnSync(process.execPath, ['packages/cli/bin/weft.js', 'run', job, ...flags, '--workers', String(workerCount), '--json', '--store', `file://${join(dir, `store-${name}`)}`, '--meta', `sqlite://${join(dir, `meta-${name}.db`)}`, '--', '--input', input, '--output', output], { cwd: root, encoding: 'utf8', maxBuffer: 256 * 1024 * 1024 });
  const wallMs = performance.now() - started;
  loads.push(loadavg()[0] as number);
  if (child.status !== 0) throw new Error(`${name} failed (exit ${child.status}): ${child.stderr}`);
  return { wallMs, summary: JSON.parse(child.stdout) as Summary, output };
}


const sortedLines = (file: string): string => readFileSync(file, 'utf8').trim().split('\n').sort().join('\n');

if (parts.includes('tpch')) {
  const contenders: [string, string[]][] = [['auto', ['--parallelism', 'auto']], ...parallelisms.map((p): [string, string[]] => [`p${p}`, ['--parallelism', String(p)]])];
  const walls = new Map<string, number[]>(contenders.map(([name]) => [name, []]));
  const outputs = new Map<string, string>();
  let autoSummary: Summary | undefined;
  for (let round = 0; round < runs; round++) {
    for (const [name, flags] of contenders) {
      const r = run(name, flags);
      (walls.get(name) as number[]).push(r.wallMs);
      outputs.set(name, r.output);
      if (name === 'auto') autoSummary = r.summary;
    }
  }
  const expected = sortedLines(outputs.get('auto') as string);
  for (const [name, file] of outputs) if (sortedLines(file) !== expected) throw new Error(`${name}'s output differs from the auto run's`);

  const medians = new Map([...walls].map(([name, w]) => [name, median(w)]));
  const hand = [...medians].filter(([name]) => name !== 'auto').sort((a, b) => a[1] - b[1]);
  const best = hand[0] as [string, number];
  const worst = hand[hand.length - 1] as [string, number];
  const autoMs = medians.get('auto') as number;
  for (const [name, flags] of contenders) out.row(name, flags.join(' '), `${round(medians.get(name) as number)} ms`, (walls.get(name) as number[]).map((w) => round(w)).join(' / '));
  console.log(machine());
  console.log(`# input ${round(inputBytes / 2 ** 20)} MiB (${orders} orders, ${customers} customers); auto decided: ${(autoSummary?.vertices ?? []).map((v) => `${v.id}=${v.parallelism}${v.decided === undefined ? '' : '*'}`).join(', ')} (* from bytes)`);
  out.report('auto-wall', 'ms', autoMs, `best hand-picked (${best[0]})`, best[1]);
  out.report('worst-hand-picked-wall', 'ms', worst[1], 'auto', autoMs);
  out.print(`tpch-revenue, ${round(inputBytes / 2 ** 20)} MiB, ${workers} workers, median of ${runs}`, ['contender', 'flags', 'median wall', 'walls']);
}

if (parts.includes('zipf')) {
  const skewMib = Number(process.env['WEFT_BENCH_SKEW_MB'] ?? 256);
  const s = Number(process.env['WEFT_BENCH_SKEW_S'] ?? 1.5);
  const skewWorkers = Number(process.env['WEFT_BENCH_SKEW_WORKERS'] ?? 4);
  const keys = 100_000;
  // a fact line is `k<key>|<amount>`: about 7.3 bytes with Zipf keys (mostly short ones)
  const facts = Math.max(10_000, Math.floor((skewMib * 1024 * 1024) / 7.3));
  const zipfTables = join(dir, `zipf-${skewMib}mib-s${s}`);
  if (!existsSync(join(zipfTables, 'dims.tbl'))) {
    console.log(`# generating ${facts} facts over ${keys} keys (Zipf s = ${s}) in ${zipfTables}`);
    await writeZipfTables(zipfTables, { facts, keys, s });
  }
  const zipfBytes = statSync(join(zipfTables, 'facts.tbl')).size + statSync(join(zipfTables, 'dims.tbl')).size;
  const common = ['--parallelism', 'auto', '--skewed-threshold', '8mb'];
  const skewContenders: [string, string[]][] = [['skew-split', common], ['skew-none', [...common, '--skewed-join', 'none']]];
  const skewWalls = new Map<string, number[]>(skewContenders.map(([name]) => [name, []]));
  const skewOutputs = new Map<string, string>();
  let splitSummary: Summary | undefined;
  loads.length = 0;
  for (let r = 0; r < runs; r++) {
    for (const [name, flags] of skewContenders) {
      const result = run(name, flags, 'bench/jobs/zipf-join.ts', zipfTables, skewWorkers);
      (skewWalls.get(name) as number[]).push(result.wallMs);
      skewOutputs.set(name, result.output);
      if (name === 'skew-split') splitSummary = result.summary;
    }
  }
  const first = sortedLines(skewOutputs.get('skew-split') as string);
  if (sortedLines(skewOutputs.get('skew-none') as string) !== first) throw new Error("the zipf join's output differs with and without skew handling");
  const splitMs = median(skewWalls.get('skew-split') as number[]);
  const noneMs = median(skewWalls.get('skew-none') as number[]);
  const join_ = splitSummary?.vertices.find((v) => v.id === 'join');
  const skewReport = new BenchReport('adaptive');
  for (const [name, flags] of skewContenders) skewReport.row(name, flags.join(' '), `${round(median(skewWalls.get(name) as number[]))} ms`, (skewWalls.get(name) as number[]).map((w) => round(w)).join(' / '));
  console.log(machine());
  console.log(`# input ${round(zipfBytes / 2 ** 20)} MiB (${facts} facts, ${keys} keys, Zipf s = ${s}), ${skewWorkers} workers; join decided to ${join_?.parallelism ?? '?'} subtasks, splits: ${JSON.stringify(join_?.decided?.skewedSplits ?? [])}`);
  skewReport.report('zipf-join-skew-none-wall', 'ms', noneMs, 'skew handling (--skewed-join auto)', splitMs);
  skewReport.print(`zipf-join, ${round(zipfBytes / 2 ** 20)} MiB, ${skewWorkers} workers, median of ${runs}`, ['contender', 'flags', 'median wall', 'walls']);
}
