// What the UI server costs a job nobody watches (issue 17's target: ≤ 2 % of its wall time): the word-count
// example through `weft run` (the bin shim, worker processes, the embedded default shuffle and its SQLite
// event log), with `--ui 0` and without, in alternating order, the median wall time of each (process
// spawn to exit). Nothing requests the UI during the runs; its server listens, and the job master's
// onProgress keeps the last snapshot for /metrics. Both runs publish their progress to the log once a
// second (the engine does with any log that can take it), so that cost is in the baseline too.
//
//   npm run bench -- ui
//   WEFT_BENCH_UI_LINES=200000 WEFT_BENCH_RUNS=3 npm run bench -- ui      (quicker)
import { spawnSync } from 'node:child_process';
import { mkdirSync, rmSync } from 'node:fs';
import { availableParallelism, cpus, loadavg, totalmem } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { BenchReport, median, round } from '@weft/testkit';

const root = fileURLToPath(new URL('..', import.meta.url));
const lines = Number(process.env['WEFT_BENCH_UI_LINES'] ?? 600_000);
const runs = Number(process.env['WEFT_BENCH_RUNS'] ?? 5);
const dir = join(root, '.weft', 'bench', 'ui');
const out = new BenchReport('ui');
const loads: number[] = [];

/** One `weft run` of word count in its own directory (own store and log); its wall time in ms. */
function wordCount(ui: boolean, n: number): number {
  const cwd = join(dir, `${ui ? 'ui' : 'plain'}-${n}`);
  rmSync(cwd, { recursive: true, force: true });
  mkdirSync(cwd, { recursive: true });
  const args = [join(root, 'packages/cli/bin/weft.js'), 'run', join(root, 'examples/word-count.ts'), '--parallelism', '2', '--workers', '2', ...(ui ? ['--ui', '0'] : []), '--', '--lines', String(lines), '--output', join(cwd, 'out.tsv')];
  loads.push(loadavg()[0] as number);
  const started = performance.now();
  const result = spawnSync(process.execPath, args, { cwd, encoding: 'utf8' });
  const wall = performance.now() - started;
  if (result.status !== 0) throw new Error(`weft run${ui ? ' --ui 0' : ''} exited ${result.status}: ${result.stderr}`);
  if (ui && !/^ui on http:\/\//m.test(result.stderr)) throw new Error(`weft run --ui printed no "ui on" line: ${result.stderr}`);
  rmSync(cwd, { recursive: true, force: true });
  return wall;
}

const plain: number[] = [];
const withUi: number[] = [];
for (let i = 0; i < runs; i++) {
  // alternate which goes first, so a drift in the machine's load does not favour one side
  const order = i % 2 === 0 ? [false, true] : [true, false];
  for (const ui of order) (ui ? withUi : plain).push(wordCount(ui, i));
  out.row(String(i + 1), `${round((plain[i] as number) / 1000, 2)} s`, `${round((withUi[i] as number) / 1000, 2)} s`, round((withUi[i] as number) / (plain[i] as number), 3).toFixed(3));
}
rmSync(dir, { recursive: true, force: true });
const cpu = cpus()[0]?.model ?? 'unknown cpu';
console.log(`machine: ${availableParallelism()} cores (${cpu}), ${Math.round(totalmem() / 2 ** 30)} GiB, Node ${process.version}; load average during the runs ${round(Math.min(...loads), 1)}–${round(Math.max(...loads), 1)}`);
out.report('word count wall time with --ui (nobody watching), median', 'ms', median(withUi), 'the same run without --ui, median', median(plain));
out.print(`word count, ${lines} generated lines, --parallelism 2 --workers 2, ${runs} alternating pairs (target: ratio ≤ 1.02)`, ['pair', 'without --ui', 'with --ui 0', 'ratio']);
