// What the kill-a-worker test jobs share: each process marks its pid in a directory (`<kind>-<pid>`) the
// first time it runs a given kind of operator, so a merge can pick another process to SIGKILL; and a busy
// wait, since a merge cannot await.
import { readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

const marked = new Set<string>();

/** Writes `<dir>/<kind>-<pid>` the first time this process calls it for `kind`; true that first time. */
export function markOnce(dir: string, kind: string): boolean {
  if (marked.has(kind)) return false;
  marked.add(kind);
  writeFileSync(join(dir, `${kind}-${process.pid}`), '');
  return true;
}

/** The pids marked with `kind` in `dir`. */
export function pidsOf(dir: string, kind: string): number[] {
  return readdirSync(dir)
    .filter((f) => f.startsWith(`${kind}-`))
    .map((f) => Number(f.slice(kind.length + 1)));
}

/** Busy-waits `ms`. */
export function pause(ms: number): void {
  const until = performance.now() + ms;
  while (performance.now() < until);
}
