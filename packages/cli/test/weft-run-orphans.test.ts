// `weft run` killed with SIGKILL while its workers run tasks, as a user kills it: real processes through
// the bin shim. Every process of the run must be gone soon after (no orphaned job master, no worker left
// writing), and each worker says once, in one line, that its job master is gone — no `write EPIPE`, no
// stack trace. From source (WEFT_FROM_SOURCE=1), where the shim runs the job master as its child: the
// shim, the job master and its workers are three generations to kill apart. (From a fresh build the shim
// is the job master itself; the seeded kill tests SIGKILL that process, built, and check no worker stays.)
import assert from 'node:assert/strict';
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { alive, assertRunGone, descendants, filesUnder, isWorker, readStat, waitFor } from './helpers/process-tree.js';

const bin = fileURLToPath(new URL('../bin/weft.js', import.meta.url));
const terasort = fileURLToPath(new URL('../../../examples/terasort.ts', import.meta.url));

interface Started {
  readonly shim: ChildProcess;
  readonly stderr: () => string;
  readonly closed: Promise<void>;
}

function startRun(dir: string, executor: 'workers' | 'inprocess'): Started {
  const shim = spawn(
    process.execPath,
    [bin, 'run', terasort, '--executor', executor, ...(executor === 'workers' ? ['--workers', '2'] : []), '--parallelism', '2',
      '--store', `file://${join(dir, 'store')}`, '--meta', `sqlite://${join(dir, 'meta.db')}`, '--', '--records', '2000000', '--output', join(dir, 'out')],
    { cwd: dir, stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, WEFT_FROM_SOURCE: '1' } },
  );
  let stderr = '';
  shim.stderr!.setEncoding('utf8').on('data', (text: string) => (stderr += text));
  shim.stdout!.resume();
  // the pipe closes once every process holding it (shim, job master, workers) is gone
  const closed = new Promise<void>((resolve) => shim.stderr!.on('close', () => resolve()));
  return { shim, stderr: () => stderr, closed };
}

describe('weft run SIGKILLed while its tasks run', { skip: process.platform !== 'linux' || spawnSync('sh', ['-c', 'test -r /proc/self/stat']).status !== 0 }, () => {
  let dir: string;
  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'weft-orphans-'));
  });
  after(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  for (const target of ['the weft command', 'the job master'] as const) {
    it(`leaves no process running when ${target} is killed, and each worker says once that its job master is gone`, { timeout: 120_000 }, async () => {
      const runDir = await mkdtemp(join(dir, 'run-'));
      const run = startRun(runDir, 'workers');
      const shimPid = run.shim.pid!;
      let tree: number[] = [];
      try {
        // the job master and both workers exist, and the workers are writing partitions
        tree = await waitFor('two workers', () => {
          const pids = descendants(shimPid);
          return pids.filter(isWorker).length === 2 ? pids : undefined;
        }, 60_000);
        await waitFor('partition data in the store', () => (filesUnder(join(runDir, 'store')) > 0 ? true : undefined), 60_000);
        tree = descendants(shimPid);
        const workers = tree.filter(isWorker);
        assert.equal(workers.length, 2);
        const master = tree.find((pid) => !isWorker(pid) && readStat(pid)?.ppid === shimPid);
        assert.ok(master !== undefined, 'the job master runs under the shim');
        process.kill(target === 'the weft command' ? shimPid : master, 'SIGKILL');
        await assertRunGone({ pids: [shimPid, ...tree], workers, closed: run.closed, stderr: run.stderr });
      } finally {
        for (const pid of [shimPid, ...tree]) if (alive(pid)) process.kill(pid, 'SIGKILL');
      }
    });
  }

  it('leaves no job master running when the weft command of an in-process run is killed', { timeout: 120_000 }, async () => {
    const runDir = await mkdtemp(join(dir, 'run-'));
    const run = startRun(runDir, 'inprocess');
    const shimPid = run.shim.pid!;
    let tree: number[] = [];
    try {
      await waitFor('partition data in the store', () => (filesUnder(join(runDir, 'store')) > 0 ? true : undefined), 60_000);
      tree = descendants(shimPid);
      assert.equal(tree.length, 1, 'the job master alone, under the shim');
      process.kill(shimPid, 'SIGKILL');
      await waitFor('the job master to exit', () => (tree.some(alive) ? undefined : true), 10_000).catch(() => {
        assert.fail(`the job master still runs 10 s after its weft command was killed\n${run.stderr()}`);
      });
      await run.closed;
      assert.match(run.stderr(), /^weft: the weft command \(pid \d+\) that started this process is gone; stopping$/m);
      assert.doesNotMatch(run.stderr(), /^\s+at /m);
    } finally {
      for (const pid of [shimPid, ...tree]) if (alive(pid)) process.kill(pid, 'SIGKILL');
    }
  });
});
