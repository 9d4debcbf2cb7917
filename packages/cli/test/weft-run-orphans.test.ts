// `weft run` killed with SIGKILL while its workers run tasks, as a user kills it: real processes through
// the bin shim. Every process of the run must be gone soon after (no orphaned job master, no worker left
// writing), and each worker says once, in one line, that its job master is gone — no `write EPIPE`, no
// stack trace.
import assert from 'node:assert/strict';
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { readFileSync, readdirSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';

const bin = fileURLToPath(new URL('../bin/weft.js', import.meta.url));
const terasort = fileURLToPath(new URL('../../../examples/terasort.ts', import.meta.url));
const GONE_LINE = /^weft worker \S+ \(pid \d+\): its job master is gone; stopping \d+ running task\(s\) and exiting$/;

/** The pids below `root` (children, grandchildren, ...), from /proc; zombies count as gone. */
function descendants(root: number): number[] {
  const children = new Map<number, number[]>();
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    const stat = readStat(Number(name));
    if (stat === undefined || stat.state === 'Z') continue;
    children.set(stat.ppid, [...(children.get(stat.ppid) ?? []), Number(name)]);
  }
  const out: number[] = [];
  for (let queue = [root]; queue.length > 0; ) {
    const next = children.get(queue.shift()!) ?? [];
    out.push(...next);
    queue.push(...next);
  }
  return out;
}

function readStat(pid: number): { ppid: number; state: string } | undefined {
  try {
    // "pid (comm) state ppid ..."; comm may hold spaces, so parse after its closing parenthesis
    const text = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const [state, ppid] = text.slice(text.lastIndexOf(')') + 2).split(' ');
    return { ppid: Number(ppid), state: state! };
  } catch {
    return undefined;
  }
}

function alive(pid: number): boolean {
  const stat = readStat(pid);
  return stat !== undefined && stat.state !== 'Z';
}

function isWorker(pid: number): boolean {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes('worker-main');
  } catch {
    return false;
  }
}

async function waitFor<T>(what: string, probe: () => T | undefined, maxMs: number): Promise<T> {
  for (let waited = 0; waited < maxMs; waited += 50) {
    const value = probe();
    if (value !== undefined) return value;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  throw new Error(`timed out waiting for ${what}`);
}

/** Files under `dir`, recursively (none when it does not exist yet). */
function filesUnder(dir: string): number {
  try {
    return readdirSync(dir, { recursive: true, withFileTypes: true }).filter((e) => e.isFile()).length;
  } catch {
    return 0;
  }
}

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
    { cwd: dir, stdio: ['ignore', 'pipe', 'pipe'] },
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
        await waitFor('every process of the run to exit', () => ([shimPid, ...tree].some(alive) ? undefined : true), 10_000).catch(() => {
          assert.fail(`still running 10 s after the kill: ${[shimPid, ...tree].filter(alive).join(', ')}\n${run.stderr()}`);
        });
        await run.closed;
        const stderr = run.stderr();
        assert.doesNotMatch(stderr, /EPIPE/, stderr);
        assert.doesNotMatch(stderr, /^\s+at /m, `no stack trace: ${stderr}`);
        const goneLines = stderr.split('\n').filter((line) => line.includes('its job master is gone'));
        assert.equal(goneLines.length, 2, `one line per worker: ${stderr}`);
        for (const line of goneLines) assert.match(line, GONE_LINE);
        assert.deepEqual(new Set(goneLines.map((line) => Number(/\(pid (\d+)\)/.exec(line)![1]))), new Set(workers));
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
