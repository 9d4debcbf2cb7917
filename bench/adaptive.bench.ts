// Adaptive parallelism (issue 14): the TPC-H-like join + aggregate (examples/tpch-revenue.ts: ORDERS ⋈
// CUSTOMER on the customer key, summed per nation and segment) over generated dbgen-style tables of
// about WEFT_BENCH_ADAPTIVE_MB MiB (default 1024), run by `weft run` on 2 worker processes with the local
// directory + SQLite blocking shuffle: `--parallelism auto` (Flink's defaults) against hand-picked
// parallelisms (WEFT_BENCH_ADAPTIVE_PARALLELISMS, default 1,2,4,8), rounds interleaved, median wall time.
//
// Figures: auto / best hand-picked (target ≤ 1.1) and worst hand-picked / auto (target ≥ 1.5). Every
// output is checked equal to the auto run's (as sorted lines) before any figure is printed.
//
//   npm run bench -- adaptive
//   WEFT_BENCH_ADAPTIVE_MB=64 WEFT_BENCH_RUNS=1 npm run bench -- adaptive      (quicker)
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, statSync } from 'node:fs';
import { cpus, loadavg, totalmem } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { BenchReport, median, round } from '@weft/testkit';
import { writeTpchTables } from '../examples/lib/tpch-data.js';

const root = fileURLToPath(new URL('..', import.meta.url));
const mib = Number(process.env['WEFT_BENCH_ADAPTIVE_MB'] ?? 1024);
const runs = Number(process.env['WEFT_BENCH_RUNS'] ?? 3);
const parallelisms = (process.env['WEFT_BENCH_ADAPTIVE_PARALLELISMS'] ?? '1,2,4,8').split(',').map(Number);
const workers = 2;
const dir = join(root, '.weft', 'bench', 'adaptive');
const out = new BenchReport('adaptive');
const loads: number[] = [];

/** A dbgen-style orders line is about 32 bytes, a customer line about 37; one customer per 10 orders. */
const orders = Math.max(1000, Math.floor((mib * 1024 * 1024) / 35.7));
const customers = Math.max(100, Math.floor(orders / 10));
const tables = join(dir, `tpch-${mib}mib`);
if (!existsSync(join(tables, 'orders.tbl'))) {
  mkdirSync(dir, { recursive: true });
  console.log(`# generating ${orders} orders and ${customers} customers in ${tables}`);
  writeTpchTables(tables, customers, orders);
}
const inputBytes = statSync(join(tables, 'orders.tbl')).size + statSync(join(tables, 'customer.tbl')).size;

interface Summary {
  readonly status: string;
  readonly durationMs: number;
  readonly vertices: readonly { readonly id: string; readonly parallelism: number; readonly decided?: { readonly bytesIn: number } }[];
}

function run(name: string, flags: string[]): { wallMs: number; summary: Summary; output: string } {
  const output = join(dir, `revenue-${name}.tsv`);
  const started = performance.now();
  const child = spawnSync(process.execPath, ['packages/cli/bin/weft.js', 'run', 'examples/tpch-revenue.ts', ...flags, '--workers', String(workers), '--json', '--store', `file://${join(dir, `store-${name}`)}`, '--meta', `sqlite://${join(dir, `meta-${name}.db`)}`, '--', '--input', tables, '--output', output], { cwd: root, encoding: 'utf8', maxBuffer: 256 * 1024 * 1024 });
  const wallMs = performance.now() - started;
  loads.push(loadavg()[0] as number);
  if (child.status !== 0) throw new Error(`${name} failed (exit ${child.status}): ${child.stderr}`);
  return { wallMs, summary: JSON.parse(child.stdout) as Summary, output };
}

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
const sortedLines = (file: string): string => readFileSync(file, 'utf8').trim().split('\n').sort().join('\n');
const expected = sortedLines(outputs.get('auto') as string);
for (const [name, file] of outputs) if (sortedLines(file) !== expected) throw new Error(`${name}'s output differs from the auto run's`);

const medians = new Map([...walls].map(([name, w]) => [name, median(w)]));
const hand = [...medians].filter(([name]) => name !== 'auto').sort((a, b) => a[1] - b[1]);
const best = hand[0] as [string, number];
const worst = hand[hand.length - 1] as [string, number];
const autoMs = medians.get('auto') as number;
for (const [name, flags] of contenders) out.row(name, flags.join(' '), `${round(medians.get(name) as number)} ms`, (walls.get(name) as number[]).map((w) => round(w)).join(' / '));
console.log(`# ${cpus().length} cores (${cpus()[0]?.model ?? '?'}), ${round(totalmem() / 2 ** 30)} GiB, Node ${process.version}; load (1 min) min ${round(Math.min(...loads))} median ${round(median(loads))} max ${round(Math.max(...loads))}`);
console.log(`# input ${round(inputBytes / 2 ** 20)} MiB (${orders} orders, ${customers} customers); auto decided: ${(autoSummary?.vertices ?? []).map((v) => `${v.id}=${v.parallelism}${v.decided === undefined ? '' : '*'}`).join(', ')} (* from bytes)`);
out.report('auto-wall', 'ms', autoMs, `best hand-picked (${best[0]})`, best[1]);
out.report('worst-hand-picked-wall', 'ms', worst[1], 'auto', autoMs);
out.print(`tpch-revenue, ${round(inputBytes / 2 ** 20)} MiB, ${workers} workers, median of ${runs}`, ['contender', 'flags', 'median wall', 'walls']);
