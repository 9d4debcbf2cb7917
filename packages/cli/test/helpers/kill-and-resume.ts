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
  await new Promise((r) => setTimeout(r, 500));
}
