// A `weft run --job-id` SIGKILLed once its durable job event log says some tasks finished, for resume tests.
import { execFile, spawn } from 'node:child_process';
import type { JobEventLog, LoggedJobEvent } from '@weft/engine';

export interface WeftOutcome {
  readonly code: number | null;
  readonly stdout: string;
  readonly stderr: string;
}

/** Runs `node <bin> <args>` to its end. */
export function weft(bin: string, args: readonly string[], cwd: string, env: NodeJS.ProcessEnv = process.env): Promise<WeftOutcome> {
  return new Promise((resolve) => {
    // a run that hangs is killed (code null) rather than holding up the test run
    execFile(process.execPath, [bin, ...args], { cwd, env, maxBuffer: 64 * 1024 * 1024, timeout: 180_000, killSignal: 'SIGKILL' }, (error, stdout, stderr) =>
      resolve({ code: error === null ? 0 : typeof error.code === 'number' ? error.code : null, stdout, stderr }),
    );
  });
}

/** Tasks the log says finished: a `task-finished` that no later `tasks-reset` names. */
export async function finishedInLog(log: JobEventLog, jobId: string): Promise<Set<string>> {
  const finished = new Set<string>();
  for (const e of await log.readRun(jobId)) {
    const data = e.data as { executionVertexId?: string; tasks?: string[] };
    if (e.type === 'task-finished') finished.add(data.executionVertexId as string);
    if (e.type === 'tasks-reset') for (const t of data.tasks ?? []) finished.delete(t);
  }
  return finished;
}

/**
 * Starts the run and SIGKILLs it once at least `atLeast` tasks are logged finished and `andWhen` (if
 * given) holds for the logged events (throws if it ends first); resolves once it exited and its workers
 * had time to notice (they exit on their own).
 */
export async function killOnceFinished(request: {
  bin: string;
  args: readonly string[];
  cwd: string;
  env?: NodeJS.ProcessEnv;
  log: JobEventLog;
  jobId: string;
  atLeast: number;
  andWhen?: (events: readonly LoggedJobEvent[]) => boolean;
}): Promise<void> {
  const child = spawn(process.execPath, [request.bin, ...request.args], { cwd: request.cwd, env: request.env ?? process.env, stdio: 'ignore' });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  try {
    for (;;) {
      await new Promise((r) => setTimeout(r, 50));
      const finished = await finishedInLog(request.log, request.jobId).catch(() => new Set<string>());
      if (finished.size >= request.atLeast && (request.andWhen === undefined || request.andWhen(await request.log.readRun(request.jobId).catch(() => [])))) break;
      if (child.exitCode !== null || child.signalCode !== null) throw new Error(`the run ended before ${request.atLeast} tasks finished: nothing to kill`);
    }
  } finally {
    child.kill('SIGKILL');
  }
  await exited;
  await ownerGone(request.log, request.jobId);
  await new Promise((r) => setTimeout(r, 500));
}

/**
 * Waits (up to 20 s) until the process the log names as the run's lease owner (`host:pid`) is gone: run from
 * the sources, `weft` is a shim whose child is the job master, and that child stops on its own once it sees
 * the shim gone (exitWithShim polls every 500 ms, later on a busy event loop) — until then `weft gc` rightly
 * keeps the run, and a resume finds its lease held.
 */
async function ownerGone(log: JobEventLog, jobId: string): Promise<void> {
  const owner = (await log.listRuns()).find((r) => r.jobId === jobId)?.owner;
  const pid = Number(owner?.slice(owner.lastIndexOf(':') + 1));
  if (!Number.isInteger(pid) || pid <= 0) return;
  for (let waited = 0; waited < 20_000; waited += 50) {
    try {
      process.kill(pid, 0);
    } catch {
      return;
    }
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`the job master of ${jobId} (${owner}) was still running 20 s after its weft command was SIGKILLed`);
}
