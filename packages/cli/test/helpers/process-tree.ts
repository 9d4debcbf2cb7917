// The processes of a run as /proc shows them, for tests that kill `weft run` and check nothing stays.
import assert from 'node:assert/strict';
import { readFileSync, readdirSync } from 'node:fs';

/** The pids below `root` (children, grandchildren, ...), from /proc; zombies count as gone. */
export function descendants(root: number): number[] {
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

export function readStat(pid: number): { ppid: number; state: string } | undefined {
  try {
    // "pid (comm) state ppid ..."; comm may hold spaces, so parse after its closing parenthesis
    const text = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const [state, ppid] = text.slice(text.lastIndexOf(')') + 2).split(' ');
    return { ppid: Number(ppid), state: state! };
  } catch {
    return undefined;
  }
}

export function alive(pid: number): boolean {
  const stat = readStat(pid);
  return stat !== undefined && stat.state !== 'Z';
}

export function isWorker(pid: number): boolean {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes('worker-main');
  } catch {
    return false;
  }
}

export async function waitFor<T>(what: string, probe: () => T | undefined, maxMs: number): Promise<T> {
  for (let waited = 0; waited < maxMs; waited += 50) {
    const value = probe();
    if (value !== undefined) return value;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  throw new Error(`timed out waiting for ${what}`);
}

/** Files under `dir`, recursively (none when it does not exist yet). */
export function filesUnder(dir: string): number {
  try {
    return readdirSync(dir, { recursive: true, withFileTypes: true }).filter((e) => e.isFile()).length;
  } catch {
    return 0;
  }
}

/** The line a worker writes when its job master vanished. */
export const GONE_LINE = /^weft worker \S+ \(pid \d+\): its job master is gone; stopping \d+ running task\(s\) and exiting$/;

/**
 * After a run was SIGKILLed: every process of it (`pids`) exits within 10 s and its stderr closes, with no
 * EPIPE and no stack trace, and each of `workers` said once, in one line, that its job master is gone.
 */
export async function assertRunGone(run: { readonly pids: readonly number[]; readonly workers: readonly number[]; readonly closed: Promise<void>; readonly stderr: () => string }): Promise<void> {
  await waitFor('every process of the run to exit', () => (run.pids.some(alive) ? undefined : true), 10_000).catch(() => {
    assert.fail(`still running 10 s after the kill: ${run.pids.filter(alive).join(', ')}\n${run.stderr()}`);
  });
  await run.closed;
  const stderr = run.stderr();
  assert.doesNotMatch(stderr, /EPIPE/, stderr);
  assert.doesNotMatch(stderr, /^\s+at /m, `no stack trace: ${stderr}`);
  const goneLines = stderr.split('\n').filter((line) => line.includes('its job master is gone'));
  assert.equal(goneLines.length, 2, `one line per worker: ${stderr}`);
  for (const line of goneLines) assert.match(line, GONE_LINE);
  assert.deepEqual(new Set(goneLines.map((line) => Number(/\(pid (\d+)\)/.exec(line)![1]))), new Set(run.workers));
}
