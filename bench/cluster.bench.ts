// The cost of the cluster path (issue 12, Targets): word count over a generated corpus on three
// `weft task-executor` processes × 1 slot, each on its own loopback address (127.0.0.2-4), with a real
// redis-server (registry, metadata, event log) and s3rver (blocking partitions) — the fixture the
// cluster tests use (examples/test/support/cluster-fixture.ts) — against the local
// `weft run --workers 3` on the same corpus, in the same run, rounds interleaved. A third contender, the
// local run on the cluster's S3 + Redis shuffle, splits the cost of the store from the cost of the
// executors. Figures: median wall time (process start to exit), and deployment latency per task
// (JobResult.deploymentLatency, `weft run --json`: from the job master handing a deployment to its
// executor to the executor's `running` report, on the job master's clock). Every output is checked equal
// to the local run's before any figure is printed.
//
//   npm run bench -- cluster                                        (1 GiB corpus, 3 rounds)
//   WEFT_BENCH_CLUSTER_MIB=64 WEFT_BENCH_RUNS=1 npm run bench -- cluster     (quicker)
import { execFile } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, statSync } from 'node:fs';
import { availableParallelism, cpus, loadavg, totalmem } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { BenchReport, median } from '@weft/testkit';
import { writeCorpus } from '../examples/lib/corpus.js';
import { TestCluster } from '../examples/test/support/cluster-fixture.js';

const root = fileURLToPath(new URL('..', import.meta.url));
const mib = Number(process.env['WEFT_BENCH_CLUSTER_MIB'] ?? 1024);
const runs = Number(process.env['WEFT_BENCH_RUNS'] ?? 3);
const hosts = ['127.0.0.2', '127.0.0.3', '127.0.0.4'];
const dir = join(root, '.weft', 'bench');
const corpus = join(dir, `cluster-corpus-${mib}mib.txt`);

interface Summary {
  readonly status: string;
  readonly executor: { readonly kind: string };
  readonly deploymentLatency: { readonly tasks: number; readonly p50Ms: number; readonly p99Ms: number; readonly maxMs: number };
}
interface Outcome {
  readonly seconds: number;
  readonly summary: Summary;
}
interface Contender {
  readonly name: string;
  readonly label: string;
  run(output: string): Promise<Outcome>;
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
const wanted = mib * 1024 * 1024;
if (!existsSync(corpus) || statSync(corpus).size < wanted || statSync(corpus).size > wanted + 4096) {
  console.log(`generating ${mib} MiB corpus at ${corpus} …`);
  writeCorpus(corpus, wanted);
}

await using cluster = await TestCluster.start();
await Promise.all(hosts.map((host) => cluster.startExecutor(host)));
const metaUrl = `redis://127.0.0.1:${cluster.redis.port}/0`;

/** `weft run examples/word-count.ts --parallelism 3 --workers 3 <shuffle> --json` in the cluster's directory. */
function localRun(shuffle: () => readonly string[]): (output: string) => Promise<Outcome> {
  return (output) =>
    new Promise((resolve, reject) => {
      const started = performance.now();
      execFile(
        process.execPath,
        [join(root, 'packages', 'cli', 'bin', 'weft.js'), 'run', join(root, 'examples', 'word-count.ts'), '--parallelism', '3', '--workers', '3', ...shuffle(), '--json', '--', '--input', corpus, '--output', output],
        { cwd: cluster.dir, maxBuffer: 256 * 1024 * 1024, env: { ...process.env, ...cluster.env } },
        (error, stdout, stderr) => {
          const seconds = (performance.now() - started) / 1000;
          if (error !== null) reject(new Error(`local run failed: ${error.message}\n${stderr}`));
          else resolve({ seconds, summary: JSON.parse(stdout) as Summary });
        },
      );
    });
}

const contenders: Contender[] = [
  {
    name: 'local',
    label: 'weft run --workers 3 (local dir + SQLite shuffle)',
    run: localRun(() => ['--store', pathToFileURL(join(cluster.dir, 'local-shuffle')).href, '--meta', `sqlite://${join(cluster.dir, 'local-meta.db')}`]),
  },
  {
    name: 'local-s3',
    label: 'weft run --workers 3 (S3 + Redis shuffle)',
    run: localRun(() => ['--store', `s3://weft-cluster/local-${Math.random().toString(36).slice(2)}`, '--meta', metaUrl]),
  },
  {
    name: 'cluster',
    label: 'weft run --cluster, 3 executors x 1 slot (S3 + Redis)',
    run: async (output) => {
      const started = performance.now();
      const run = await cluster.run('word-count.ts', ['--parallelism', '3'], ['--input', corpus, '--output', output]);
      const seconds = (performance.now() - started) / 1000;
      if (run.code !== 0) throw new Error(`cluster run exited with ${run.code}:\n${run.stderr}`);
      const summary = JSON.parse(run.stdout) as Summary;
      if (summary.executor.kind !== 'cluster') throw new Error(`the cluster run ran on ${summary.executor.kind}`);
      return { seconds, summary };
    },
  },
];

const cpu = cpus()[0]?.model ?? 'unknown CPU';
const machine = `${availableParallelism()} cores (${cpu}), ${(totalmem() / 2 ** 30).toFixed(0)} GiB, Node ${process.version}, load average ${loadavg().map((l) => l.toFixed(2)).join(' ')} at start`;
console.log(`machine: ${machine}`);
console.log(`word count over ${(statSync(corpus).size / 2 ** 20).toFixed(0)} MiB, parallelism 3, ${runs} interleaved rounds after one untimed warm-up round, median wall time per contender\n`);

const output = (c: Contender, round: number): string => join(cluster.dir, `${c.name}-${round}.tsv`);
// warm-up: page cache, tsx's compile cache, the executors' bundle cache
for (const c of contenders) await c.run(output(c, -1));
const outcomes = new Map<string, Outcome[]>(contenders.map((c) => [c.name, []]));
for (let round = 0; round < runs; round++) {
  for (const c of contenders) outcomes.get(c.name)!.push(await c.run(output(c, round)));
  const reference = readCounts(output(contenders[0]!, round));
  for (const c of contenders.slice(1)) {
    const problem = sameCounts(readCounts(output(c, round)), reference);
    if (problem !== undefined) throw new Error(`${c.name} counted differently from the local run: ${problem}`);
  }
}
console.log(`outputs: every run counts the same as the local run; load average ${loadavg().map((l) => l.toFixed(2)).join(' ')} at the end\n`);

const wall = (name: string): number => median(outcomes.get(name)!.map((o) => o.seconds));
const latency = (name: string, key: 'p50Ms' | 'p99Ms'): number => median(outcomes.get(name)!.map((o) => o.summary.deploymentLatency[key]));
const report = new BenchReport('cluster');
for (const c of contenders) {
  const os = outcomes.get(c.name)!;
  report.row(c.label, `${wall(c.name).toFixed(2)} s`, (wall(c.name) / wall('local')).toFixed(2), `${latency(c.name, 'p50Ms').toFixed(1)} / ${latency(c.name, 'p99Ms').toFixed(1)} ms`, String(os[0]?.summary.deploymentLatency.tasks ?? 0), os.map((o) => o.seconds.toFixed(2)).join(' '));
}
report.report('cluster-wall', 's', wall('cluster'), 'local-workers-3-wall', wall('local'));
report.report('cluster-wall-vs-same-store', 's', wall('cluster'), 'local-workers-3-s3-redis-wall', wall('local-s3'));
report.report('cluster-deploy-latency-p50', 'ms', latency('cluster', 'p50Ms'), 'local-workers-3-deploy-latency-p50', latency('local', 'p50Ms'));
report.report('cluster-deploy-latency-p99', 'ms', latency('cluster', 'p99Ms'), 'local-workers-3-deploy-latency-p99', latency('local', 'p99Ms'));
report.print('word count: 3 cluster executors x 1 slot against the local --workers 3', ['contender', 'median', 'vs local', 'deploy latency p50 / p99', 'tasks', 'runs (s)']);
