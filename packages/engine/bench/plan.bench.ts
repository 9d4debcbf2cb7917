// Planning at 100,000 execution vertices: computePipelinedRegions in-process, a region failover, and
// `weft plan --json` end to end (spawned through the bin shim, as `npx weft` runs it — no build).
// Baselines measured in the same run: JSON.parse + JSON.stringify of the topology and of the region
// output (the least any planner that reads and prints them pays), and a bare `node -e 0` process start.
// Target: `weft plan --json` on 100,000 execution vertices in under 2 s.
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { BenchReport } from '@weft/testkit';
import { computePipelinedRegions, createFailoverStrategy, ExecutionTopology, type JobTopologyJson } from '@weft/engine';

const BENCH = 'engine/plan';
const out = new BenchReport(BENCH);
const report = (metric: string, value: number, baseline: string, baselineValue: number): void => void out.report(metric, 'ms', value, baseline, baselineValue);

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)] as number;
}

function time(runs: number, work: () => void): number {
  work(); // warm-up
  const samples: number[] = [];
  for (let i = 0; i < runs; i++) {
    const start = performance.now();
    work();
    samples.push(performance.now() - start);
  }
  return median(samples);
}

/** 100,000 execution vertices: pointwise and all-to-all edges, pipelined, bounded, blocking and hybrid. */
function topology(): JobTopologyJson {
  return {
    vertices: [
      { id: 'source', parallelism: 25_000 },
      { id: 'map', parallelism: 25_000 },
      { id: 'dim', parallelism: 20_000 },
      { id: 'reduce', parallelism: 20_000 },
      { id: 'sink', parallelism: 10_000 },
    ],
    edges: [
      { source: 'source', target: 'map', distribution: 'POINTWISE', partitionType: 'PIPELINED' },
      { source: 'map', target: 'reduce', distribution: 'ALL_TO_ALL', partitionType: 'BLOCKING' },
      { source: 'dim', target: 'reduce', distribution: 'POINTWISE', partitionType: 'PIPELINED_BOUNDED' },
      { source: 'reduce', target: 'sink', distribution: 'POINTWISE', partitionType: 'BLOCKING' },
      { source: 'map', target: 'sink', distribution: 'ALL_TO_ALL', partitionType: 'HYBRID_FULL' },
    ],
  };
}

const job = topology();
const text = JSON.stringify(job);
const execution = ExecutionTopology.from(job);
const regions = computePipelinedRegions(job);

const regionsMs = time(9, () => computePipelinedRegions(JSON.parse(text)));
const jsonMs = time(9, () => {
  JSON.stringify(JSON.parse(text));
  JSON.stringify({ regions: JSON.parse(JSON.stringify(regions)) as unknown });
});
report('computePipelinedRegions, 100k execution vertices (parse + plan + ids)', regionsMs, 'JSON.parse+stringify of topology and regions', jsonMs);

const failover = createFailoverStrategy(execution);
const failoverMs = time(9, () => failover.verticesToRestart({ failedVertex: 'reduce#5', lostPartitions: ['map->reduce#3'] }));
const restartCount = failover.verticesToRestart({ failedVertex: 'reduce#5', lostPartitions: ['map->reduce#3'] }).length;
report('region failover, 100k execution vertices (fail reduce#5, lose map->reduce#3)', failoverMs, 'JSON.parse+stringify of topology and regions', jsonMs);

const dir = mkdtempSync(join(tmpdir(), 'weft-plan-bench-'));
let cliMs = 0;
let nodeMs = 0;
let tinyMs = 0;
let outputBytes = 0;
try {
  const file = join(dir, 'topology.json');
  writeFileSync(file, text);
  const bin = fileURLToPath(new URL('../../cli/bin/weft.js', import.meta.url));
  const spawnMs = (args: string[]): number => {
    const start = performance.now();
    const run = spawnSync(process.execPath, args, { encoding: 'utf8', maxBuffer: 256 * 1024 * 1024 });
    const elapsed = performance.now() - start;
    if (run.status !== 0) throw new Error(`${args.join(' ')} exited ${run.status}: ${run.stderr}`);
    outputBytes = Math.max(outputBytes, run.stdout.length);
    return elapsed;
  };
  nodeMs = median([0, 1, 2, 3, 4, 5].map(() => spawnMs(['-e', '0'])));
  spawnMs([bin, 'plan', file, '--json']); // warm tsx's transform cache
  const tiny = join(dir, 'tiny.json');
  writeFileSync(tiny, JSON.stringify({ vertices: [{ id: 'a', parallelism: 1 }], edges: [] }));
  tinyMs = median([0, 1, 2, 3, 4].map(() => spawnMs([bin, 'plan', tiny, '--json'])));
  cliMs = median([0, 1, 2, 3, 4].map(() => spawnMs([bin, 'plan', file, '--json', '--fail', 'reduce#5', '--lost', 'map->reduce#3'])));
} finally {
  rmSync(dir, { recursive: true, force: true });
}
report('weft plan --json --fail, 100k execution vertices, end to end (spawned, no build)', cliMs, 'node -e 0 process start', nodeMs);

const rows: Array<[string, string]> = [
  ['execution vertices', String(execution.executionVertexCount)],
  ['result partitions', String(execution.partitionCount)],
  ['pipelined regions', String(regions.length)],
  ['tasks restarted by the failover', String(restartCount)],
  ['computePipelinedRegions (median of 9)', `${regionsMs.toFixed(1)} ms`],
  ['  baseline: JSON parse+stringify of topology and regions', `${jsonMs.toFixed(1)} ms`],
  ['region failover (median of 9)', `${failoverMs.toFixed(2)} ms`],
  ['weft plan --json --fail, end to end (median of 5)', `${cliMs.toFixed(0)} ms  (target < 2000 ms: ${cliMs < 2000 ? 'met' : 'MISSED'})`],
  ['  weft plan --json on a 1-task topology (fixed cost)', `${tinyMs.toFixed(0)} ms`],
  ['  baseline: node -e 0 (median of 6)', `${nodeMs.toFixed(0)} ms`],
  ['  weft plan output', `${(outputBytes / 1e6).toFixed(1)} MB`],
];
const width = Math.max(...rows.map(([k]) => k.length));
console.log(rows.map(([k, v]) => `${k.padEnd(width)}  ${v}`).join('\n'));
out.printFigures();
