// Shared by the stale job master tests: `weft run` processes whose job master is the spawned pid, and
// the assertions both stores' cases make about the stale run A and the run B that took over.
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import type { LoggedJobEvent } from '@weft/engine';
import type { WeftOutcome } from './kill-and-resume.js';
import { alive } from './process-tree.js';
// @ts-expect-error plain JavaScript next to the shim, no declarations
import { weftNodeArgs } from '../../bin/built-code.js';

// runs start the command's main module themselves (bin/weft.js from source would re-run it as its child),
// so the pid SIGSTOPped is the job master's own: the built main when fresh, else the sources through tsx
const cliDir = fileURLToPath(new URL('../..', import.meta.url));

export interface Running {
  readonly child: ChildProcess;
  readonly done: Promise<WeftOutcome>;
}

/** Starts `weft <args>` (its job master is `child`), collecting its output. */
export function start(args: readonly string[], cwd: string, env: NodeJS.ProcessEnv = process.env): Running {
  const child = spawn(process.execPath, [...(weftNodeArgs(cliDir) as string[]), ...args], { cwd, env, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout!.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const done = new Promise<WeftOutcome>((resolve) => child.once('close', (code) => resolve({ code, stdout, stderr })));
  return { child, done };
}

/** Polls `probe` every 50 ms until it is true; throws after `maxMs`. */
export async function until(what: string, probe: () => Promise<boolean>, maxMs = 60_000): Promise<void> {
  for (let waited = 0; waited < maxMs; waited += 50) {
    if (await probe()) return;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  throw new Error(`timed out waiting for ${what}`);
}

/** No epoch-1 event after epoch 2's first one, in the log's order. */
export function assertNoStaleEventAfterTakeover(history: readonly LoggedJobEvent[]): void {
  const firstOfTwo = history.findIndex((e) => e.epoch === 2);
  assert.ok(firstOfTwo >= 0, 'run B logged events under epoch 2');
  const stale = history.slice(firstOfTwo).filter((e) => e.epoch < 2);
  assert.deepEqual(stale.map((e) => `${e.seq}:${e.type}@${e.epoch}`), [], 'no event of epoch 1 after epoch 2 took over');
}

/** A exited 1 with one line naming the fencing (no stack trace), and nothing it started still runs. */
export function assertFencedExit(a: WeftOutcome, descendantsOfA: readonly number[]): void {
  assert.equal(a.code, 1, `the stale master exits 1; stderr: ${a.stderr}`);
  const lines = a.stderr.split('\n').filter((line) => line.trim() !== '');
  const fenced = lines.filter((line) => /WEFT_ERR_FENCED|SHF_ERR_FENCED/.test(line));
  assert.equal(fenced.length, 1, `one line names the fencing; stderr:\n${a.stderr}`);
  assert.match(fenced[0]!, /epoch 2/, 'it names the newer epoch');
  assert.doesNotMatch(a.stderr, /^\s+at /m, `no stack trace; stderr:\n${a.stderr}`);
  for (const pid of descendantsOfA) assert.equal(alive(pid), false, `process ${pid} of the stale master still runs`);
}

/** B exited 0, resumed under epoch 2, with no failure and no failover (it lost nothing to A). */
export function assertCleanResume(b: WeftOutcome): void {
  assert.equal(b.code, 0, b.stderr);
  const summary = JSON.parse(b.stdout) as { status: string; resumed: boolean; failures: number; restarts: number; failovers: unknown[]; epoch: number };
  assert.equal(summary.status, 'succeeded');
  assert.equal(summary.resumed, true);
  assert.equal(summary.epoch, 2);
  assert.deepEqual([summary.failures, summary.restarts, summary.failovers], [0, 0, []], `run B had no failure or failover: ${b.stderr}`);
}
