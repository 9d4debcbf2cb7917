import type { ChildProcess } from 'node:child_process';

// Servers started by this process. If the process exits without stopping them (a crashed test run),
// they are killed on the way out so no redis-server or s3rver outlives the tests.
const children = new Set<ChildProcess>();
let hooked = false;

function killAll(): void {
  for (const child of children) {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  }
  children.clear();
}

export function trackChild(child: ChildProcess): void {
  if (!hooked) {
    hooked = true;
    process.once('exit', killAll);
  }
  children.add(child);
  child.once('exit', () => children.delete(child));
}

/** Resolves once `child` has exited (at once if it already has). */
export function exited(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => child.once('exit', () => resolve()));
}

/** Sends `signal`, then SIGKILL after `graceMs` if the child is still running; resolves on exit. */
export async function stopChild(child: ChildProcess, signal: NodeJS.Signals, graceMs: number): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const done = exited(child);
  child.kill(signal);
  const timer = setTimeout(() => child.kill('SIGKILL'), graceMs);
  try {
    await done;
  } finally {
    clearTimeout(timer);
  }
}
