// Shared by the fault-run tests: the examples with small inputs, one fault run (a seeded FaultHarness on
// the persisted blocking shuffle), and the checks every run must pass — output equal to a fault-free
// run's, each failover restarting exactly what `weft plan --fail` predicts, nothing left behind.
import assert from 'node:assert/strict';
import { readdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { runCli } from '@weft/cli';
import { FaultHarness, type FaultActions, type FaultSpec, remotePartitionDamage } from '@weft/cli/faults';
import { type ExchangeMode, type FailoverRecord, type FailoverStrategyName, type JobResult, type JobTopology, runJob } from '@weft/engine';
import { createMemoryShuffleServiceFactory } from '@weft/shuffle-memory';
import { createRemoteShuffleServiceFactory, type RemoteShuffleServiceFactory } from '@weft/shuffle-remote';

const examples = fileURLToPath(new URL('../../', import.meta.url));

export interface ExampleCase {
  readonly name: string;
  readonly module: string;
  readonly args: (output: string) => string[];
}

export const EXAMPLES: readonly ExampleCase[] = [
  { name: 'word-count', module: join(examples, 'word-count.ts'), args: (output) => ['--lines', '3000', '--output', output] },
  { name: 'terasort', module: join(examples, 'terasort.ts'), args: (output) => ['--records', '6000', '--output', output] },
  { name: 'tpch-revenue', module: join(examples, 'tpch-revenue.ts'), args: (output) => ['--customers', '600', '--orders', '6000', '--output', output] },
];

export interface RunRequest {
  readonly example: ExampleCase;
  /** The run's directory: store, metadata and outputs live here. */
  readonly dir: string;
  readonly output: string;
  readonly spec?: FaultSpec;
  readonly executor?: 'inprocess' | 'workers';
  readonly failover?: FailoverStrategyName;
  readonly exchangeMode?: ExchangeMode;
  /** @defaultValue sqlite in `dir` */
  readonly meta?: string;
  readonly restartMetadataStore?: () => Promise<string>;
  readonly parallelism?: number;
  /** @defaultValue true (RunJobOptions.releasePartitionsDuringJob) */
  readonly releasePartitionsDuringJob?: boolean;
}

export interface RunOutcome {
  readonly result: JobResult;
  readonly harness: FaultHarness | undefined;
  readonly storeDir: string;
  readonly blocking: RemoteShuffleServiceFactory;
}

export function blockingShuffle(dir: string, meta?: string): RemoteShuffleServiceFactory {
  return createRemoteShuffleServiceFactory({ store: `file://${join(dir, 'store')}`, meta: meta ?? `sqlite://${join(dir, 'meta.db')}`, sweepIntervalMs: 0 });
}

/** One run of an example, with the faults of `spec` when given, on the persisted blocking shuffle. */
export async function runExample(request: RunRequest): Promise<RunOutcome> {
  const blocking = blockingShuffle(request.dir, request.meta);
  let harness: FaultHarness | undefined;
  if (request.spec !== undefined) {
    const actions: FaultActions = { ...remotePartitionDamage(blocking), ...(request.restartMetadataStore === undefined ? {} : { restartMetadataStore: request.restartMetadataStore }) };
    harness = new FaultHarness(request.spec, actions);
  }
  const executor = request.executor ?? 'inprocess';
  const result = await runJob({
    job: request.example.module,
    args: request.example.args(request.output),
    parallelism: request.parallelism ?? 3,
    executor,
    ...(executor === 'workers' ? { workers: 2, heartbeatTimeoutMs: 10_000 } : { slotsPerExecutor: 2 }),
    shuffle: { pipelined: createMemoryShuffleServiceFactory(), blocking },
    cwd: request.dir,
    restartStrategy: { type: 'fixed-delay', attempts: 8, delayMs: 1 },
    ...(request.failover === undefined ? {} : { failoverStrategy: request.failover }),
    ...(request.exchangeMode === undefined ? {} : { exchangeMode: request.exchangeMode }),
    ...(request.releasePartitionsDuringJob === undefined ? {} : { releasePartitionsDuringJob: request.releasePartitionsDuringJob }),
    ...(harness === undefined ? {} : { faults: harness.factory }),
  });
  return { result, harness, storeDir: join(request.dir, 'store'), blocking };
}

/**
 * Fails unless `actual` is byte for byte the fault-free run's output `expected` (naming the first
 * differing line). Byte equality holds for every example, not just terasort, though word count and the
 * TPC-H job promise their lines in any order: the order of an output is fixed by the input and the
 * parallelism on this shuffle. The inputs are generated the same way each run; each producer writes a
 * partition's records in the order it emits them; the persisted (sort-merge) blocking shuffle's gate reads
 * its inputs one after another, in the order of its descriptors, never by arrival — so a consumer sees
 * the same record sequence from a new attempt as from the old; the keyed operators (count, aggregate,
 * join) keep insertion-ordered tables and emit in that order; and the sink joins its parts in subtask
 * order. A shuffle whose gate interleaves channels as data arrives (the InputGate contract leaves it
 * open) would fix only the multiset of lines. (Under ALL_EDGES_BLOCKING, pointwise edges with equal
 * parallelism on both sides, the only pipelined exchanges besides those inside a chain, have one channel
 * per gate: nothing to interleave.) Under ALL_EDGES_PIPELINED the in-memory gates do take channels as
 * data arrives; there byte equality rests on the in-process executor running the job's one region on one
 * event loop, its tasks started in the same order on every attempt, so each gate sees its channels' data
 * in the same order (180 of 180 seeded runs with a task throwing, plus 90 of 90 with both cores kept
 * busy, matched the fault-free run byte for byte).
 */
export async function assertSameOutput(path: string, expected: Buffer, label: string): Promise<void> {
  const actual = await readFile(path);
  if (actual.equals(expected)) return;
  const a = actual.toString('utf8').split('\n');
  const e = expected.toString('utf8').split('\n');
  let line = 0;
  while (line < Math.min(a.length, e.length) && a[line] === e[line]) line++;
  assert.fail(`${label}: output differs from the fault-free run's (${actual.length} vs ${expected.length} bytes) at line ${line + 1}: ${JSON.stringify(a[line])} vs ${JSON.stringify(e[line])}`);
}

/** The collected values, exactly (same order: each subtask's values in emission order, subtasks in order). */
export function comparableCollected(result: JobResult): string {
  return JSON.stringify(result.collected);
}

/** Every file left under `dir` (recursively). */
export async function filesUnder(dir: string): Promise<string[]> {
  const out: string[] = [];
  const walk = async (path: string): Promise<void> => {
    let entries;
    try {
      entries = await readdir(path, { withFileTypes: true });
    } catch {
      return;
    }
    for (const entry of entries) {
      if (entry.isDirectory()) await walk(join(path, entry.name));
      else out.push(join(path, entry.name));
    }
  };
  await walk(dir);
  return out;
}

/** `weft plan <topology> --json --fail … --lost … --strategy …`, run in this process; its `restart` list. */
export async function predictedRestart(topologyFile: string, failover: FailoverRecord): Promise<string[]> {
  assert.ok(failover.failedTask !== undefined, `a task failover (this one is global: ${failover.error.message})`);
  let stdout = '';
  let stderr = '';
  const args = ['plan', topologyFile, '--json', '--fail', failover.failedTask, ...failover.lostPartitions.flatMap((p) => ['--lost', p]), '--strategy', failover.strategy];
  const code = await runCli(args, { stdout: { write: (t: string) => (stdout += t) }, stderr: { write: (t: string) => (stderr += t) }, cwd: process.cwd(), env: {} });
  assert.equal(code, 0, `weft ${args.join(' ')}: ${stderr}`);
  return (JSON.parse(stdout) as { restart: string[] }).restart;
}

/** Writes the job's topology where `weft plan` can read it. */
export async function writeTopology(path: string, topology: JobTopology): Promise<string> {
  await writeFile(path, JSON.stringify(topology));
  return path;
}

/**
 * The tasks re-executed equal the predicted blast radius: every failover restarted exactly what
 * `weft plan` prints for it, and each task's last attempt number is the number of failovers that
 * restarted it (so nothing else was reset). Returns the tasks restarted, summed over failovers.
 */
export async function checkBlastRadius(result: JobResult, topologyFile: string, label: string): Promise<BlastRadius> {
  let restarted = 0;
  let total = 0;
  let runAgain = 0;
  let deployed = 0;
  const resets = new Map<string, number>();
  for (const failover of result.failovers) {
    const predicted = await predictedRestart(topologyFile, failover);
    assert.deepEqual([...failover.tasksToRestart].sort(), [...predicted].sort(), `${label}: failover of ${failover.failedTask} restarted what weft plan predicts`);
    for (const task of failover.tasksToRestart) resets.set(task, (resets.get(task) ?? 0) + 1);
    restarted += failover.tasksToRestart.length;
    total += failover.tasksTotal;
    runAgain += failover.tasksRunAgain.length;
    deployed += failover.tasksDeployed;
    assert.ok(failover.tasksRunAgain.every((t) => failover.tasksToRestart.includes(t)), `${label}: tasks run again are among those restarted`);
    assert.ok(failover.failedTask !== undefined && failover.tasksRunAgain.includes(failover.failedTask), `${label}: the failed task had run`);
  }
  for (const [task, attempt] of Object.entries(result.taskAttempts)) assert.equal(attempt, resets.get(task) ?? 0, `${label}: ${task} was reset exactly by the failovers that named it`);
  return { restarted, total, runAgain, deployed };
}

/** Summed over a run's failovers: tasks reset (blast radius) of all tasks, and tasks run again of those that had started. */
export interface BlastRadius {
  readonly restarted: number;
  readonly total: number;
  readonly runAgain: number;
  readonly deployed: number;
}
