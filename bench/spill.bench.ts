// Managed memory and spilling (issue 13): peak RSS of the worker process against the task memory budget,
// for a count of 10 M distinct keys (the reduce side spills sorted runs; the combiner stops combining), a
// sort of 8x the budget (sortBy's external sort) and a left outer join whose build side is 4x the budget
// (the hybrid hash join), each against a naive in-memory JS script doing the same in one process, in the
// same run. `weft run … --parallelism 1 --workers 1 --task-memory B`; every process
// reports its process.resourceUsage().maxRSS on exit (bench/lib/max-rss.mjs, preloaded, inherited by the
// shim, the CLI and its worker through NODE_OPTIONS).
//
//   npm run bench -- spill
//   WEFT_BENCH_SPILL_KEYS=1000000 WEFT_BENCH_SPILL_BUDGET_MB=16 npm run bench -- spill     (quicker)
import { spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { cpus, totalmem } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));
const keys = Number(process.env['WEFT_BENCH_SPILL_KEYS'] ?? 10_000_000);
const budgetMb = Number(process.env['WEFT_BENCH_SPILL_BUDGET_MB'] ?? 64);
const budget = budgetMb * 1024 * 1024;
/** terasort records are 100 bytes with the newline: 8x the budget of them */
const sortRecords = Math.ceil((8 * budget) / 100);
/** bench/jobs/big-join.ts's customers are 78 bytes serialized (key, value and framing): 4x the budget of them */
const joinBuild = Math.ceil((4 * budget) / 78);
const joinProbe = Number(process.env['WEFT_BENCH_SPILL_JOIN_PROBE'] ?? 1_000_000);
const dir = join(root, '.weft', 'bench', 'spill');
const MIB = 1024 * 1024;
/** The bound: peak RSS ≤ budget + this, per worker. */
const FIXED_OVERHEAD_MB = 150;

interface Run {
  readonly wallS: number;
  readonly stdout: string;
  readonly maxRss: { readonly main: number; readonly worker: number };
}

function run(args: readonly string[], env: Readonly<Record<string, string>> = {}): Promise<Run> {
  const rssDir = mkdtempSync(join(dir, 'rss-'));
  return new Promise((resolve, reject) => {
    const started = performance.now();
    const child = spawn(process.execPath, args, { cwd: root, stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, ...env, WEFT_BENCH_RSS_DIR: rssDir } });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    child.on('error', reject);
    child.on('close', (code) => {
      if (code !== 0) {
        reject(new Error(`${args.join(' ')} exited ${code}: ${stderr.slice(-2000)}`));
        return;
      }
      const wallS = (performance.now() - started) / 1000;
      const maxRss = { main: 0, worker: 0 };
      // a worker may exit just after its job master: give it a moment to write its figure
      setTimeout(() => {
        for (const file of readdirSync(rssDir)) {
          const [role, , bytes] = readFileSync(join(rssDir, file), 'utf8').trim().split(' ') as ['main' | 'worker', string, string];
          maxRss[role] = Math.max(maxRss[role], Number(bytes));
        }
        rmSync(rssDir, { recursive: true, force: true });
        resolve({ wallS, stdout, maxRss });
      }, 500);
    });
  });
}

function weft(job: string, jobArgs: readonly string[], name: string): Promise<Run> {
  rmSync(join(dir, name), { recursive: true, force: true });
  // NODE_OPTIONS, not execArgv: the bin shim, the CLI it may re-run on the sources and its workers all get it
  const preload = `--import=${pathToFileURL(join(root, 'bench/lib/max-rss.mjs')).href}`;
  return run([
    'packages/cli/bin/weft.js', 'run', job, '--parallelism', '1', '--workers', '1', '--task-memory', `${budgetMb}m`, '--spill-dir', join(dir, name, 'spill'),
    '--store', pathToFileURL(join(dir, name, 'shuffle')).href, '--meta', `sqlite://${join(dir, name, 'meta.db')}`, '--json', '--', ...jobArgs,
  ], { NODE_OPTIONS: `${process.env['NODE_OPTIONS'] ?? ''} ${preload}`.trim() });
}

function line(bench: string, metric: string, unit: string, value: number, baseline: string, baselineValue: number): void {
  console.log(JSON.stringify({ bench, metric, unit, value: Number(value.toFixed(3)), baseline, baselineValue: Number(baselineValue.toFixed(3)), ratio: Number((value / baselineValue).toFixed(3)) }));
}

mkdirSync(dir, { recursive: true });
console.log(`machine: ${cpus().length} cores (${cpus()[0]?.model ?? '?'}), ${(totalmem() / 2 ** 30).toFixed(0)} GiB, Node ${process.version}`);
console.log(`task memory budget ${budgetMb} MiB; count of ${keys.toLocaleString('en')} distinct keys; sort of ${sortRecords.toLocaleString('en')} records (${((sortRecords * 100) / MIB).toFixed(0)} MiB, 8x the budget); join of ${joinProbe.toLocaleString('en')} orders with ${joinBuild.toLocaleString('en')} customers (${((joinBuild * 78) / MIB).toFixed(0)} MiB serialized, 4x the budget)`);

const count = await weft('bench/jobs/distinct-count.ts', ['--keys', String(keys)], 'count');
const counted = (JSON.parse(count.stdout) as { collected?: Record<string, [string, number][]> }).collected?.['keys counted']?.[0]?.[1];
if (counted !== keys) throw new Error(`the engine counted ${String(counted)} keys, expected ${keys}`);
const naiveCount = await run(['bench/naive-distinct-count.mjs', String(keys)]);
const naiveCountRss = (JSON.parse(naiveCount.stdout) as { maxRssBytes: number }).maxRssBytes;

const sortOut = join(dir, 'sorted.txt');
const sort = await weft('examples/terasort.ts', ['--records', String(sortRecords), '--output', sortOut], 'sort');
const naiveSort = await run(['bench/naive-sort.mjs', String(sortRecords)]);
const naiveSortRss = (JSON.parse(naiveSort.stdout) as { maxRssBytes: number }).maxRssBytes;
rmSync(sortOut, { force: true });

const join_ = await weft('bench/jobs/big-join.ts', ['--build', String(joinBuild), '--probe', String(joinProbe)], 'join');
const pairs = new Map((JSON.parse(join_.stdout) as { collected?: Record<string, [string, number][]> }).collected?.['pairs'] ?? []);
const naiveJoin = await run(['bench/naive-join.mjs', String(joinBuild), String(joinProbe)]);
const naiveJoinOut = JSON.parse(naiveJoin.stdout) as { matched: number; unmatched: number; maxRssBytes: number };
if (pairs.get('matched') !== naiveJoinOut.matched || pairs.get('unmatched') !== naiveJoinOut.unmatched) {
  throw new Error(`the engine's join gave ${JSON.stringify([...pairs])}, the naive one ${naiveJoinOut.matched} matched / ${naiveJoinOut.unmatched} unmatched`);
}
const naiveJoinRss = naiveJoinOut.maxRssBytes;

const rows: [string, Run, number][] = [
  [`count ${keys.toLocaleString('en')} keys`, count, naiveCountRss],
  [`sort ${sortRecords.toLocaleString('en')} records`, sort, naiveSortRss],
  [`left outer join, build side ${joinBuild.toLocaleString('en')} records (4x)`, join_, naiveJoinRss],
];
console.log('\n| job | worker peak RSS | budget + 150 MiB | holds | naive script peak RSS | weft wall | naive wall |');
console.log('|---|---|---|---|---|---|---|');
const walls = [naiveCount.wallS, naiveSort.wallS, naiveJoin.wallS];
rows.forEach(([label, r, naive], i) => {
  const bound = budget + FIXED_OVERHEAD_MB * MIB;
  console.log(`| ${label} | ${(r.maxRss.worker / MIB).toFixed(0)} MiB | ${(bound / MIB).toFixed(0)} MiB | ${r.maxRss.worker <= bound ? 'yes' : 'NO'} | ${(naive / MIB).toFixed(0)} MiB | ${r.wallS.toFixed(1)} s | ${(walls[i] as number).toFixed(1)} s |`);
});
line('spill', 'count-worker-peak-rss', 'MiB', count.maxRss.worker / MIB, 'naive in-memory Map script', naiveCountRss / MIB);
line('spill', 'count-wall', 's', count.wallS, 'naive in-memory Map script', naiveCount.wallS);
line('spill', 'sort-worker-peak-rss', 'MiB', sort.maxRss.worker / MIB, 'naive in-memory sort script', naiveSortRss / MIB);
line('spill', 'sort-wall', 's', sort.wallS, 'naive in-memory sort script', naiveSort.wallS);
line('spill', 'join-worker-peak-rss', 'MiB', join_.maxRss.worker / MIB, 'naive in-memory Map join script', naiveJoinRss / MIB);
line('spill', 'join-wall', 's', join_.wallS, 'naive in-memory Map join script', naiveJoin.wallS);
line('spill', 'count-worker-peak-rss-over-budget', 'MiB', count.maxRss.worker / MIB - budgetMb, 'stated fixed overhead', FIXED_OVERHEAD_MB);
line('spill', 'sort-worker-peak-rss-over-budget', 'MiB', sort.maxRss.worker / MIB - budgetMb, 'stated fixed overhead', FIXED_OVERHEAD_MB);
line('spill', 'join-worker-peak-rss-over-budget', 'MiB', join_.maxRss.worker / MIB - budgetMb, 'stated fixed overhead', FIXED_OVERHEAD_MB);
