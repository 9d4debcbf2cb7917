// `weft run` with the recovery flags and --inject-faults, as a user runs it (through the bin shim):
// each failover reported (which task failed and why, what restarted, the work saved), --json with the
// failovers, --plan-only feeding `weft plan`, whose prediction equals what the run restarted, the output
// byte-identical to a clean run's, and clear refusals of bad flags.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { runCli } from '@weft/cli';

const bin = fileURLToPath(new URL('../bin/weft.js', import.meta.url));
const terasort = fileURLToPath(new URL('../../../examples/terasort.ts', import.meta.url));
const fixtures = fileURLToPath(new URL('./fixtures/', import.meta.url));

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

function weft(args: string[], cwd: string): Promise<Run> {
  return new Promise((resolve) => {
    execFile(process.execPath, [bin, ...args], { cwd, maxBuffer: 64 * 1024 * 1024 }, (error, stdout, stderr) => {
      resolve({ code: error === null ? 0 : typeof error.code === 'number' ? error.code : null, stdout, stderr });
    });
  });
}

async function inProcess(args: string[], cwd: string): Promise<Run> {
  let stdout = '';
  let stderr = '';
  const code = await runCli(args, { stdout: { write: (t: string) => (stdout += t) }, stderr: { write: (t: string) => (stderr += t) }, cwd, env: {} });
  return { code, stdout, stderr };
}

interface FailoverJson {
  failedTask: string;
  attemptId: string;
  error: { code: string; message: string };
  lostPartitions: string[];
  strategy: string;
  tasksToRestart: string[];
  tasksTotal: number;
  savedTasks: number;
  savedPercent: number;
}

describe('weft run --inject-faults', () => {
  let dir = '';
  const job = ['--', '--records', '6000', '--output', 'sorted.txt'];
  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'weft-run-faults-'));
  });
  after(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('reports a killed worker’s failover — what failed and why, what restarted, the work saved — and restarts exactly what weft plan predicts', async () => {
    const clean = await weft(['run', terasort, '--parallelism', '3', '--executor', 'inprocess', '--', '--records', '6000', '--output', 'clean.txt'], dir);
    assert.equal(clean.code, 0, clean.stderr);
    const run = await weft(['run', terasort, '--parallelism', '3', '--workers', '2', '--inject-faults', 'seed=3,kill-worker', '--restart-strategy', 'fixed-delay', '--restart-attempts', '3', '--restart-delay', '10', '--json', ...job], dir);
    assert.equal(run.code, 0, run.stderr);
    assert.equal(await readFile(join(dir, 'sorted.txt'), 'utf8'), await readFile(join(dir, 'clean.txt'), 'utf8'), 'byte-identical to the clean run');
    const summary = JSON.parse(run.stdout) as { failovers: FailoverJson[]; faults: { spec: string; injected: { kind: string; target: string; fired: boolean }[] }; topology: unknown; executorsLost: { replaced: boolean }[] };
    assert.equal(summary.faults.spec, 'seed=3,kill-worker');
    const [fault] = summary.faults.injected;
    assert.equal(fault?.fired, true);
    assert.equal(summary.failovers.length, 1);
    const [failover] = summary.failovers as [FailoverJson];
    assert.equal(failover.failedTask, fault?.target, 'the task on the killed worker failed');
    assert.equal(failover.error.code, 'WEFT_ERR_TASK_EXECUTOR_LOST');
    assert.match(failover.error.message, /task executor worker-\d was lost: worker process \d+ exited with SIGKILL/);
    assert.equal(failover.savedTasks, failover.tasksTotal - failover.tasksToRestart.length);
    assert.equal(failover.savedPercent, Math.round((1000 * failover.savedTasks) / failover.tasksTotal) / 10);
    assert.equal(summary.executorsLost[0]?.replaced, true);

    // The human summary (on stderr with --json) says the same.
    assert.match(run.stderr, /failovers \(region strategy, FixedDelayRestartBackoffTimeStrategy\(attempts=3, delayMs=10\)\):/);
    assert.match(run.stderr, new RegExp(`1\\. at [\\d.]+ m?s: task ${failover.attemptId.replace(/[#@]/g, '\\$&')} failed: WEFT_ERR_TASK_EXECUTOR_LOST: task executor worker-\\d was lost`));
    assert.match(run.stderr, new RegExp(`restarted ${failover.tasksToRestart.length} of 14 tasks: `));
    assert.match(run.stderr, new RegExp(`saved ${failover.savedTasks} of 14 tasks \\(${failover.savedPercent}%\\) against restarting all of them`));
    assert.match(run.stderr, /injected faults \(replay with --inject-faults 'seed=3,kill-worker'\):\n {4}kill-worker \S+: kills its worker at record \d+/);

    // --plan-only prints the topology weft plan reads; its prediction is what the run restarted.
    const plan = await weft(['run', terasort, '--parallelism', '3', '--plan-only', '--json', ...job], dir);
    assert.equal(plan.code, 0, plan.stderr);
    assert.deepEqual(JSON.parse(plan.stdout), summary.topology);
    await writeFile(join(dir, 'topology.json'), plan.stdout);
    const predicted = await weft(['plan', 'topology.json', '--json', '--fail', failover.failedTask, ...failover.lostPartitions.flatMap((p) => ['--lost', p])], dir);
    assert.equal(predicted.code, 0, predicted.stderr);
    assert.deepEqual([...(JSON.parse(predicted.stdout) as { restart: string[] }).restart].sort(), [...failover.tasksToRestart].sort());
  });

  it('names a deleted partition in the failover and restarts its producer', async () => {
    const run = await inProcess(['run', terasort, '--parallelism', '3', '--executor', 'inprocess', '--inject-faults', 'delete-partition:sort-assign->sort#1', '--json', ...job], dir);
    assert.equal(run.code, 0, run.stderr);
    const [failover] = (JSON.parse(run.stdout) as { failovers: FailoverJson[] }).failovers;
    assert.equal(failover?.error.code, 'SHF_ERR_PARTITION_NOT_FOUND');
    // Named first; then the partitions released as the job went that the failover needs (sort-assign#1's
    // inputs, then sort-boundaries#0's once it re-runs): every sort-assign task had finished before a sort
    // task could start, so all of them are released, while sort-assign->sort still is read.
    assert.deepEqual(failover?.lostPartitions, [
      'sort-assign->sort#1',
      'generate-records->sort-boundaries#0',
      'generate-records->sort-boundaries#1',
      'generate-records->sort-boundaries#2',
      'generate-records->sort-assign#0',
      'generate-records->sort-assign#1',
      'generate-records->sort-assign#2',
      'sort-boundaries->sort-assign#0',
    ]);
    assert.ok(failover?.tasksToRestart.includes('sort-assign#1'), 'the producer of the lost partition runs again');
    assert.match(run.stderr, /lost partitions: sort-assign->sort#1/);
    // reported as it happened, before the summary
    const live = new RegExp(`failover at [\\d.]+ m?s: task ${failover?.attemptId.replace(/[#@]/g, '\\$&')} failed \\(SHF_ERR_PARTITION_NOT_FOUND\\): restarting ${failover?.tasksToRestart.length} of 14 tasks \\(\\d+ had started\\), [\\d.]+% saved against restarting all, in \\d+ ms\\n`);
    const at = run.stderr.search(live);
    assert.ok(at >= 0, run.stderr);
    assert.ok(at < run.stderr.indexOf('failovers ('), 'the live line comes before the summary');
  });

  it('fails with "recovery is suppressed by <strategy>" and the root cause when restarts are off', async () => {
    const run = await inProcess(['run', join(fixtures, 'failing-job.ts'), '--parallelism', '2', '--executor', 'inprocess', '--inject-faults', 'throw:numbers#1@10', '--restart-strategy', 'none', '--', '--output', 'never.tsv'], dir);
    assert.equal(run.code, 1);
    assert.match(run.stderr, /job failed: job "failing-job" failed: recovery is suppressed by NoRestartBackoffTimeStrategy: task numbers#1@0 failed: injected fault: task numbers#1@0 threw at record 10/);
  });

  it('fails a run whose worker was killed with restarts off by the lost worker\'s code and message, no stack trace', async () => {
    const run = await weft(['run', terasort, '--parallelism', '2', '--workers', '2', '--inject-faults', 'seed=3,kill-worker', '--restart-strategy', 'none', ...job], dir);
    assert.equal(run.code, 1, run.stderr);
    assert.match(run.stderr, /recovery is suppressed by NoRestartBackoffTimeStrategy/);
    assert.match(run.stderr, /^caused by: WEFT_ERR_TASK_EXECUTOR_LOST: worker process \d+ exited with SIGKILL$/m);
    assert.doesNotMatch(run.stderr, /^\s+at /m, 'an expected fault prints no stack');
  });

  it('prints the fault spec grammar and every recovery flag in --help', async () => {
    const help = await inProcess(['run', '--help'], dir);
    assert.equal(help.code, 0);
    for (const text of ['SPEC   := ITEM [,ITEM]...', 'kill-worker', 'delete-partition', 'corrupt-partition', 'restart-redis', 'kill-shuffle-server', 'pause-shuffle-server', 'POINT: push', 'WEFT_SERVER_FAULT_HOOKS=1', 'seed=N', '--restart-strategy S', '--failover-strategy F', '--heartbeat-timeout MS', '--cancel-timeout MS', '--plan-only']) {
      assert.ok(help.stdout.includes(text), `--help mentions ${text}`);
    }
  });

  const refusals: [string, string[], RegExp][] = [
    ['an unknown restart strategy', ['--restart-strategy', 'sometimes'], /--restart-strategy must be one of none, fixed-delay, failure-rate, exponential-delay, got "sometimes"/],
    ['a strategy option without a strategy', ['--jitter', '0.5'], /--jitter needs --restart-strategy/],
    ['an option of another strategy', ['--restart-strategy', 'fixed-delay', '--jitter', '0.5'], /--jitter does not apply to --restart-strategy fixed-delay/],
    ['an invalid strategy option', ['--restart-strategy', 'exponential-delay', '--backoff-multiplier', '0.5'], /--restart-strategy exponential-delay: invalid options\.backoffMultiplier/],
    ['a malformed number', ['--restart-strategy', 'fixed-delay', '--restart-delay', 'soon'], /--restart-delay must be an integer >= 0, got "soon"/],
    ['an unknown failover strategy', ['--failover-strategy', 'some'], /--failover-strategy must be one of region, all, individual, got "some"/],
    ['individual failover on a job with edges', ['--failover-strategy', 'individual', '--executor', 'inprocess'], /the individual failover strategy restarts only the failed task/],
    ['a zero heartbeat timeout', ['--heartbeat-timeout', '0'], /--heartbeat-timeout must be an integer >= 1, got "0"/],
    ['an unknown fault', ['--inject-faults', 'explode'], /--inject-faults: unknown fault "explode"; expected one of throw, kill-worker, kill-worker-after-pre-commit, kill-worker-before-commit, delete-partition, corrupt-partition, restart-redis/],
    ['a bad seed', ['--inject-faults', 'seed=x,throw'], /--inject-faults: seed must be an integer >= 0, got "x"/],
    ['killing a worker in process', ['--inject-faults', 'kill-worker', '--executor', 'inprocess'], /invalid --inject-faults: kill-worker needs worker processes/],
    ['an unknown task', ['--inject-faults', 'throw:nope#0', '--executor', 'inprocess'], /nope#0/],
    ['restarting Redis without Redis', ['--inject-faults', 'restart-redis', '--executor', 'inprocess'], /restart-redis needs Redis metadata/],
    ['an unknown server fault point', ['--inject-faults', 'seed=1,kill-shuffle-server:sort-assign->sort#0@later'], /--inject-faults: unknown point "later" in "kill-shuffle-server:sort-assign->sort#0@later"; expected one of push, commit, committed, fetch/],
    ['a pause that is not a number', ['--inject-faults', 'pause-shuffle-server@fetch~long'], /--inject-faults: the ~ of "pause-shuffle-server@fetch~long" must be an integer >= 0, got "long"/],
    ['killing a shuffle server without a pool', ['--inject-faults', 'kill-shuffle-server@commit', '--executor', 'inprocess'], /invalid --inject-faults: kill-shuffle-server needs a shuffle-server pool/],
  ];
  for (const [what, flags, message] of refusals) {
    it(`exits 2 for ${what}`, async () => {
      const run = await inProcess(['run', terasort, '--parallelism', '2', ...flags, ...job], dir);
      assert.equal(run.code, 2, run.stderr);
      assert.match(run.stderr, message);
    });
  }
});
