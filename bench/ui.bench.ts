// What the UI server costs a job nobody watches (issue 17's target: ≤ 2 % of its wall time): the word-count
// example through `weft run` (the bin shim, worker processes, the embedded default shuffle and its SQLite
// event log), with `--ui 0` and without, in alternating order, the median wall time of each (process
// spawn to exit). Nothing requests the UI during the runs; its server listens, and the job master's
// onProgress keeps the last snapshot for /metrics. Both runs publish their progress to the log once a
// second (the engine does with any log that can take it), so that cost is in the baseline too.
// Besides wall time: the CPU time (user + sys) of the whole process tree, from GNU time (/usr/bin/time;
// workers included — they are waited for by the job master), less moved by other processes' load than
// wall time; and, in this process, what starting the server costs once (importing @weft/ui, listening,
// closing, with the engine and the run's log already loaded as in `weft run`) — the fixed part of what --ui adds.
//
//   npm run bench -- ui
//   WEFT_BENCH_UI_LINES=200000 WEFT_BENCH_RUNS=3 npm run bench -- ui      (quicker)
import { spawnSync } from 'node:child_process';
import { mkdirSync, rmSync } from 'node:fs';
import { availableParallelism, cpus, loadavg, totalmem } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { existsSync } from 'node:fs';
import { BenchReport, median, round } from '@weft/testkit';

const root = fileURLToPath(new URL('..', import.meta.url));
const lines = Number(process.env['WEFT_BENCH_UI_LINES'] ?? 600_000);
const runs = Number(process.env['WEFT_BENCH_RUNS'] ?? 5);
const dir = join(root, '.weft', 'bench', 'ui');
const out = new BenchReport('ui');
const loads: number[] = [];

const gnuTime = existsSync('/usr/bin/time') ? '/usr/bin/time' : undefined;

/** One `weft run` of word count in its own directory (own store and log): wall time and CPU time (user + sys, NaN without GNU time), ms. */
function wordCount(ui: boolean, n: number): { wall: number; cpu: number } {
  const cwd = join(dir, `${ui ? 'ui' : 'plain'}-${n}`);
  rmSync(cwd, { recursive: true, force: true });
  mkdirSync(cwd, { recursive: true });
  const args = [join(root, 'packages/cli/bin/weft.js'), 'run', join(root, 'examples/word-count.ts'), '--parallelism', '2', '--workers', '2', ...(ui ? ['--ui', '0'] : []), '--', '--lines', String(lines), '--output', join(cwd, 'out.tsv')];
  loads.push(loadavg()[0] as number);
  const started = performance.now();
  const result = gnuTime === undefined ? spawnSync(process.execPath, args, { cwd, encoding: 'utf8' }) : spawnSync(gnuTime, ['-f', 'weft-bench-cpu %U %S', process.execPath, ...args], { cwd, encoding: 'utf8' });
  const wall = performance.now() - started;
  const times = /^weft-bench-cpu ([\d.]+) ([\d.]+)$/m.exec(result.stderr);
  const cpu = times === null ? Number.NaN : (Number(times[1]) + Number(times[2])) * 1000;
  if (result.status !== 0) throw new Error(`weft run${ui ? ' --ui 0' : ''} exited ${result.status}: ${result.stderr}`);
  if (ui && !/^ui on http:\/\//m.test(result.stderr)) throw new Error(`weft run --ui printed no "ui on" line: ${result.stderr}`);
  rmSync(cwd, { recursive: true, force: true });
  return { wall, cpu };
}

/**
 * In this process, as `weft run --ui` does it: the engine and the run's SQLite log are already loaded and
 * open (untimed), then import @weft/ui, start the server, close it — ms.
 */
async function serverStartCost(): Promise<number> {
  const [, { createJobEventLog }] = await Promise.all([import('@weft/engine'), import('@weft/job-store')]);
  mkdirSync(dir, { recursive: true });
  const eventLog = await createJobEventLog(`sqlite://${join(dir, 'start-cost.db')}`);
  const started = performance.now();
  const { startUiServer } = await import('@weft/ui');
  const server = await startUiServer({ eventLog, port: 0 });
  await server.close();
  const cost = performance.now() - started;
  await eventLog.close();
  return cost;
}

const plain: { wall: number; cpu: number }[] = [];
const withUi: { wall: number; cpu: number }[] = [];
const s = (ms: number): string => (Number.isNaN(ms) ? '-' : `${round(ms / 1000, 2)} s`);
for (let i = 0; i < runs; i++) {
  // alternate which goes first, so a drift in the machine's load does not favour one side
  const order = i % 2 === 0 ? [false, true] : [true, false];
  for (const ui of order) (ui ? withUi : plain).push(wordCount(ui, i));
  const [p, u] = [plain[i] as { wall: number; cpu: number }, withUi[i] as { wall: number; cpu: number }];
  out.row(String(i + 1), s(p.wall), s(u.wall), round(u.wall / p.wall, 3).toFixed(3), s(p.cpu), s(u.cpu), round(u.cpu / p.cpu, 3).toFixed(3));
}
const startCost = await serverStartCost();
rmSync(dir, { recursive: true, force: true });
const cpu = cpus()[0]?.model ?? 'unknown cpu';
console.log(`machine: ${availableParallelism()} cores (${cpu}), ${Math.round(totalmem() / 2 ** 30)} GiB, Node ${process.version}; load average during the runs ${round(Math.min(...loads), 1)}–${round(Math.max(...loads), 1)}`);
out.report('word count wall time with --ui (nobody watching), median', 'ms', median(withUi.map((r) => r.wall)), 'the same run without --ui, median', median(plain.map((r) => r.wall)));
if (gnuTime !== undefined) out.report('word count CPU time (user + sys, process tree) with --ui, median', 'ms', median(withUi.map((r) => r.cpu)), 'the same run without --ui, median', median(plain.map((r) => r.cpu)));
out.report('starting and closing the UI server once (import @weft/ui, listen, close; engine and log already loaded)', 'ms', startCost, 'word count wall time without --ui, median', median(plain.map((r) => r.wall)));
out.print(`word count, ${lines} generated lines, --parallelism 2 --workers 2, ${runs} alternating pairs (target: ratio ≤ 1.02)`, ['pair', 'wall without --ui', 'wall with --ui 0', 'ratio', 'CPU without', 'CPU with', 'ratio']);
