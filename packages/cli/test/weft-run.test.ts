// Spawns `weft run` through the bin shim, as a user would: usage, bad input (exit 2), a failing job
// (exit 1, the operator, the subtask and the original error with its stack, no output), and success.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';

const bin = fileURLToPath(new URL('../bin/weft.js', import.meta.url));
const fixtures = fileURLToPath(new URL('./fixtures/', import.meta.url));

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

function weft(args: string[], cwd: string, env: Record<string, string> = {}): Promise<Run> {
  return new Promise((resolve) => {
    execFile(process.execPath, [bin, ...args], { cwd, maxBuffer: 64 * 1024 * 1024, env: { ...process.env, ...env } }, (error, stdout, stderr) => {
      resolve({ code: error === null ? 0 : typeof error.code === 'number' ? error.code : null, stdout, stderr });
    });
  });
}

describe('weft run', () => {
  let dir = '';
  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'weft-run-'));
  });
  after(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('prints its usage with --help, and is listed by weft --help', async () => {
    const help = await weft(['run', '--help'], dir);
    assert.equal(help.code, 0);
    assert.match(help.stdout, /^Usage: weft run <job module> \[--parallelism N\] \[--store URL\] \[--meta URL\]/);
    assert.match(help.stdout, /--executor KIND/);
    assert.match((await weft(['--help'], dir)).stdout, /^\s+run\s+run a batch job module/m);
  });

  it('exits 2 on an unknown flag, a bad flag value, a missing module and an invalid job, naming the problem', async () => {
    const cases: [string[], RegExp][] = [
      [['run', join(fixtures, 'failing-job.ts'), '--fast'], /Unknown option '--fast'/],
      [['run', join(fixtures, 'failing-job.ts'), '--parallelism', '0'], /--parallelism must be an integer >= 1, got "0"/],
      [['run', join(fixtures, 'failing-job.ts'), '--executor', 'gpu'], /--executor must be inprocess or workers/],
      [['run', join(fixtures, 'failing-job.ts'), '--exchange-mode', 'SOMETIMES'], /--exchange-mode must be one of ALL_EDGES_BLOCKING/],
      [['run', join(fixtures, 'failing-job.ts'), '--meta', 'mysql://db'], /--meta: .*unsupported scheme mysql:/],
      [['run'], /missing <job module>/],
      [['run', 'no-such-job.ts'], /cannot read job module no-such-job\.ts: no such file/],
      [['run', join(fixtures, 'zero-parallelism-job.ts'), '--executor', 'inprocess'], /invalid job: operator "double" \(map\): parallelism: expected an integer >= 1, got 0/],
    ];
    for (const [args, pattern] of cases) {
      const run = await weft(args, dir);
      assert.equal(run.code, 2, `${args.join(' ')}: ${run.stderr}`);
      assert.match(run.stderr, pattern, args.join(' '));
    }
  });

  it('names WEFT_STORE / WEFT_META, not the flags, when a bad store or metadata URL came from the environment', async () => {
    const cases: [string[], Record<string, string>, RegExp][] = [
      [[], { WEFT_STORE: 'ftp://x' }, /^weft run: WEFT_STORE: .*unsupported scheme ftp:/],
      [[], { WEFT_META: 'mysql://x' }, /^weft run: WEFT_META: .*unsupported scheme mysql:/],
      [['--store', 'ftp://flag'], { WEFT_STORE: 's3://fine/prefix' }, /^weft run: --store: .*"ftp:\/\/flag"/],
      [['--meta', 'mysql://flag'], {}, /^weft run: --meta: .*unsupported scheme mysql:/],
      [['--meta', 'sqlite:///tmp/x.db'], { WEFT_SHUFFLE_SERVERS: 'redis://127.0.0.1:1/0' }, /^weft run: --meta cannot be combined with WEFT_SHUFFLE_SERVERS/],
      [[], { WEFT_SHUFFLE_SERVERS: 'http://x', WEFT_SHUFFLE_SECRET: 'a'.repeat(64) }, /^weft run: WEFT_SHUFFLE_SERVERS: .*unsupported scheme http: .*expected redis:\/\/\[user:password@\]host:port\/db/],
      [['--shuffle-servers', 'redis://127.0.0.1:1/0', '--shuffle-replicas', '0'], {}, /^weft run: --shuffle-replicas must be an integer >= 1, got "0"/],
      [['--shuffle-servers', 'redis://127.0.0.1:1/0', '--shuffle-replicas', 'two'], {}, /^weft run: --shuffle-replicas must be an integer >= 1, got "two"/],
      [['--shuffle-servers', 'redis://127.0.0.1:1/0', '--shuffle-replicas', '1.5'], {}, /^weft run: --shuffle-replicas must be an integer >= 1, got "1.5"/],
      [['--shuffle-servers', 'redis://127.0.0.1:1/0', '--shuffle-replicas', '9'], {}, /^weft run: --shuffle-replicas must be at most 8, got 9/],
      [['--shuffle-replicas', '2'], {}, /^weft run: --shuffle-replicas needs --shuffle-servers/],
      // the flag names the setting once, and an unreachable Redis says why (before: "--shuffle-servers: invalid
      // setting redis: …", "--shuffle-servers: invalid setting --shuffle-servers: … Connection is closed.")
      [['--shuffle-servers', 'http://127.0.0.1:1'], { WEFT_SHUFFLE_SECRET: 'a'.repeat(64) }, /^weft run: --shuffle-servers: unsupported scheme http: in http:\/\/127\.0\.0\.1:1;/],
      [['--shuffle-servers', 'redis://127.0.0.1:1/0'], { WEFT_SHUFFLE_SECRET: 'a'.repeat(64) }, /^weft run: --shuffle-servers: cannot reach Redis at redis:\/\/127\.0\.0\.1:1\/0: .*ECONNREFUSED/],
    ];
    for (const [flags, env, pattern] of cases) {
      const run = await weft(['run', join(fixtures, 'failing-job.ts'), '--executor', 'inprocess', ...flags], dir, env);
      assert.equal(run.code, 2, `${JSON.stringify(env)} ${flags.join(' ')}: ${run.stderr}`);
      assert.match(run.stderr, pattern, `${JSON.stringify(env)} ${flags.join(' ')}`);
    }
  });

  it('exits 2 before running when the job cannot read its --input, naming the source operator and the path', async () => {
    await writeFile(join(dir, 'plain.txt'), 'one\ntwo\n');
    const cases: [string[], string, string][] = [
      [['--executor', 'inprocess'], 'missing.txt', 'no such file or directory'],
      [['--workers', '2'], 'missing.txt', 'no such file or directory'],
      [['--workers', '2'], join('plain.txt', 'inside.txt'), 'ENOTDIR'],
    ];
    for (const [flags, input, reason] of cases) {
      const run = await weft(['run', join(fixtures, 'lines-job.ts'), ...flags, '--', '--input', input], dir);
      assert.equal(run.code, 2, `${flags.join(' ')} ${input}: ${run.stderr}`);
      assert.ok(run.stderr.startsWith(`weft run: operator "read-lines" cannot read ${join(dir, input)}: `), run.stderr);
      assert.ok(run.stderr.includes(reason), run.stderr);
      assert.doesNotMatch(run.stderr, /internal error|\n\s+at /, 'a message, not a stack');
      assert.equal(run.stdout, '', 'nothing ran, so no summary');
    }
    const ok = await weft(['run', join(fixtures, 'lines-job.ts'), '--executor', 'inprocess', '--json', '--', '--input', 'plain.txt'], dir);
    assert.equal(ok.code, 0, ok.stderr);
    assert.deepEqual((JSON.parse(ok.stdout) as { collected: unknown }).collected, { lines: [['lines', 2]] });
    const plan = await weft(['run', join(fixtures, 'lines-job.ts'), '--plan-only', '--json', '--', '--input', 'missing.txt'], dir);
    assert.equal(plan.code, 0, `--plan-only shows a plan whose input does not exist yet: ${plan.stderr}`);
  });

  it('--plan-only shows the exchanges the run uses: blocking, pipelined once checkpointed, approximate with --approximate-recovery', async () => {
    const job = join(fixtures, 'approximate-job.ts');
    const typesOf = (stdout: string): string[] => (JSON.parse(stdout) as { edges: { partitionType: string }[] }).edges.map((e) => e.partitionType);
    for (const flags of [[], ['--checkpoint-interval', '100ms'], ['--approximate-recovery'], ['--checkpoint-interval', '100ms', '--exchange-mode', 'ALL_EDGES_PIPELINED_APPROXIMATE']]) {
      const plan = await weft(['run', job, '--plan-only', '--json', ...flags], dir);
      assert.equal(plan.code, 0, plan.stderr);
      // the independent answer: what the run itself reports it used
      const run = await weft(['run', job, '--executor', 'inprocess', '--json', ...flags, '--', '--count', '400'], dir);
      assert.equal(run.code, 0, run.stderr);
      assert.deepEqual(typesOf(plan.stdout), typesOf(run.stdout), flags.join(' '));
    }
    // a job whose own definition names its mode: checkpointing keeps it (not pipelined over it)
    const own = join(fixtures, 'approximate-defined-job.ts');
    for (const flags of [['--checkpoint-interval', '100ms'], ['--checkpoint-interval', '100ms', '--exchange-mode', 'ALL_EDGES_PIPELINED']]) {
      const plan = await weft(['run', own, '--plan-only', '--json', ...flags], dir);
      assert.equal(plan.code, 0, plan.stderr);
      const run = await weft(['run', own, '--executor', 'inprocess', '--json', ...flags, '--', '--count', '400'], dir);
      assert.equal(run.code, 0, run.stderr);
      assert.deepEqual(typesOf(plan.stdout), typesOf(run.stdout), `own mode, ${flags.join(' ')}`);
      assert.deepEqual(typesOf(plan.stdout), [flags.length === 2 ? 'PIPELINED_APPROXIMATE' : 'PIPELINED_BOUNDED'], flags.join(' '));
    }
  });

  it('--plan-only refuses what the run refuses, with the run\'s exit code and message', async () => {
    const cases: [string, string[], RegExp][] = [
      // an exactly-once sink under approximate recovery
      [join(fixtures, 'two-phase-commit-workers-job.ts'), ['--approximate-recovery'], /cannot be combined with the exactly-once sink "sinkTo"/],
      // a sink that commits only at checkpoints after an unbounded source, without checkpoints
      [join(fixtures, 'unbounded-commit-job.ts'), [], /source "lines" \(generator-source\) is unbounded, and sinkTo commits at each completed checkpoint/],
    ];
    for (const [job, flags, message] of cases) {
      const run = await weft(['run', job, '--executor', 'inprocess', ...flags], dir);
      const plan = await weft(['run', job, '--plan-only', '--json', ...flags], dir);
      assert.equal(run.code, 2, `the run refuses ${flags.join(' ')}: ${run.stderr}`);
      assert.match(run.stderr, message);
      assert.equal(plan.code, 2, `--plan-only ${flags.join(' ')} printed a plan the run refuses: ${plan.stdout}`);
      assert.equal(plan.stdout, '');
      assert.equal(plan.stderr, run.stderr, 'the same refusal');
    }
  });

  it('exits 1 when a user function throws: operator, subtask and the original error with its stack; no output left', async () => {
    const run = await weft(['run', join(fixtures, 'failing-job.ts'), '--parallelism', '2', '--workers', '2', '--', '--fail-at', '123', '--output', 'sums.tsv'], dir);
    assert.equal(run.code, 1, run.stderr);
    assert.match(run.stderr, /job failed: job "failing-job" failed: recovery is suppressed by NoRestartBackoffTimeStrategy: task numbers#0@0 failed: operator "picky-map" \(map\) function threw in subtask 0 of 2 \(attempt 0\): TypeError: cannot handle 123/);
    assert.match(run.stderr, /caused by: TypeError: cannot handle 123\n\s+at .*failing-job\.ts:\d+/);
    assert.match(run.stdout, /Job failing-job failed in/);
    assert.equal(existsSync(join(dir, 'sums.tsv')), false);
    assert.deepEqual((await readdir(dir)).filter((f) => f.includes('sums')), []);
  });

  it('runs a job on workers and prints a summary, or JSON with --json', async () => {
    const run = await weft(['run', join(fixtures, 'failing-job.ts'), '--parallelism', '2', '--workers', '2', '--json', '--', '--count', '5000', '--output', 'out/sums.tsv'], dir);
    assert.equal(run.code, 0, run.stderr);
    const summary = JSON.parse(run.stdout) as Record<string, unknown>;
    assert.equal(summary['status'], 'succeeded');
    assert.equal(summary['recordsRead'], 5000);
    assert.deepEqual(summary['executor'], { kind: 'workers', executors: 2, slots: 1 });
    assert.equal((summary['edges'] as { partitionType: string }[])[0]?.partitionType, 'BLOCKING');
    assert.match(run.stderr, /Job failing-job succeeded in .*\n\s+\d+ tasks in \d+ pipelined regions/);
    const lines = (await readFile(join(dir, 'out', 'sums.tsv'), 'utf8')).trim().split('\n');
    assert.equal(lines.length, 10);
    assert.ok(existsSync(join(dir, '.weft', 'shuffle-meta.db')), 'the embedded default stores under ./.weft/');
  });
});
