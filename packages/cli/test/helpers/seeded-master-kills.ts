// The seeded job-master kill matrix (issue 11 tests; docs/DESIGN.md contract 7): each run kills `weft run
// --job-id` with `--inject-faults kill-job-master:TYPE@N` — the process SIGKILLs itself the moment its
// event log durably holds the N-th TYPE event — at a point drawn from a clean run's own log, then runs the
// very same command again. Oracles, none taken from the resumed run itself: the clean run's bytes; the
// killed run's log (tasks it says finished, no later reset naming them) for `tasksReused`; and the resumed
// run's own `task-deployed` events, which must name exactly the other tasks.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import type { JobEventLog, LoggedJobEvent } from '@weft/engine';
import { seededRandom } from '@weft/testkit';
import { finishedInLog, weft } from './kill-and-resume.js';

const bin = fileURLToPath(new URL('../../bin/weft.js', import.meta.url));
const example = (name: string): string => fileURLToPath(new URL(`../../../../examples/${name}`, import.meta.url));

export interface KillMatrixExample {
  readonly file: string;
  readonly jobArgs: readonly string[];
}

/** What one store setup gives the matrix. */
export interface KillMatrixStores {
  /** Flags naming the stores (`--meta`, `--store`), for every command. */
  readonly flags: readonly string[];
  readonly env: NodeJS.ProcessEnv;
  /** The directory the runs work in (outputs go there). */
  readonly dir: string;
  /** The job event log the runs write (to read what they logged). */
  readonly log: JobEventLog;
}

export interface KillMatrixOptions {
  readonly title: string;
  readonly runs: number;
  readonly seed: number;
  readonly examples: readonly KillMatrixExample[];
  /** Starts the stores (before the runs); `stop` after. */
  readonly start: () => Promise<KillMatrixStores & { stop(): Promise<void> }>;
}

interface Summary {
  readonly resumed: boolean;
  readonly tasksReused: number;
  readonly attempts: number;
  readonly tasks: number;
}

/** Runs to its end and to the end of every process holding its stdio (its workers): SIGKILL leaves them to exit on their own. */
function runKilled(args: readonly string[], cwd: string, env: NodeJS.ProcessEnv): Promise<{ signal: NodeJS.Signals | null; code: number | null; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [bin, ...args], { cwd, env, stdio: ['ignore', 'pipe', 'pipe'] });
    let stderr = '';
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
    child.stdout.resume();
    child.once('close', (code, signal) => resolve({ code, signal, stderr }));
  });
}

export function describeSeededMasterKills(options: KillMatrixOptions): void {
  const { runs, seed } = options;
  describe(`${options.title} (seed ${seed}, ${runs} runs)`, () => {
    let stores: (KillMatrixStores & { stop(): Promise<void> }) | undefined;
    const clean = new Map<string, { bytes: Buffer; events: readonly LoggedJobEvent[]; tasks: number }>();
    const random = seededRandom(seed);
    // the example of each run now; the kill point once the example's clean log is known
    const plan = Array.from({ length: runs }, (_, run) => ({ run, ex: options.examples[Math.floor(random() * options.examples.length)] as KillMatrixExample, pick: random() }));
    const common = (s: KillMatrixStores): string[] => [...s.flags, '--parallelism', '2', '--workers', '2', '--json'];

    before(async () => {
      stores = await options.start();
      for (const ex of new Set(plan.map((p) => p.ex))) {
        const jobId = `clean-${ex.file.replace(/\.ts$/, '')}`;
        const output = join(stores.dir, `${jobId}.out`);
        const run = await weft(bin, ['run', example(ex.file), '--job-id', jobId, ...common(stores), '--', ...ex.jobArgs, '--output', output], stores.dir, stores.env);
        assert.equal(run.code, 0, run.stderr);
        const summary = JSON.parse(run.stdout) as Summary;
        clean.set(ex.file, { bytes: await readFile(output), events: await stores.log.readRun(jobId), tasks: summary.tasks });
      }
    });
    after(async () => {
      await stores?.stop();
    });

    for (const { run, ex, pick } of plan) {
      it(`run ${run}: ${ex.file} killed at a seeded point of its log, resumed by the same command`, async (t) => {
        const s = stores as KillMatrixStores;
        const reference = clean.get(ex.file) as { bytes: Buffer; events: readonly LoggedJobEvent[]; tasks: number };
        // the kill point: an event of the clean run's log (any but its first), as TYPE and its count so far
        const index = 1 + Math.floor(pick * (reference.events.length - 1));
        const type = (reference.events[index] as LoggedJobEvent).type;
        const at = reference.events.slice(0, index + 1).filter((e) => e.type === type).length;
        const jobId = `kill-${run}`;
        const what = `seed ${seed}, run ${run}: ${ex.file} killed at ${type} #${at}`;
        t.diagnostic(what);
        const output = join(s.dir, `${jobId}.out`);
        const args = ['run', example(ex.file), '--job-id', jobId, ...common(s), '--inject-faults', `seed=${seed},kill-job-master:${type}@${at}`, '--', ...ex.jobArgs, '--output', output];

        const killed = await runKilled(args, s.dir, s.env);
        assert.equal(killed.signal, 'SIGKILL', `${what}: the run must die by its own SIGKILL; exit ${killed.code}, ${killed.stderr}`);
        assert.doesNotMatch(killed.stderr, /\n\s+at |EPIPE/, `${what}: its workers exit with one line, no stack trace`);
        const history = await s.log.readRun(jobId);
        assert.equal(history.filter((e) => e.type === type).length, at, `${what}: the log holds exactly the event it was killed at`);
        const logged = await finishedInLog(s.log, jobId);

        const resumed = await weft(bin, args, s.dir, s.env);
        if (type === 'job-finished') {
          // killed once the run was over: the same command is refused, and the output stands
          assert.equal(resumed.code, 2, `${what}: ${resumed.stderr}`);
          assert.match(resumed.stderr, /WEFT_ERR_RESUME_REFUSED|already finished/, what);
        } else {
          assert.equal(resumed.code, 0, `${what}: ${resumed.stderr}`);
          const summary = JSON.parse(resumed.stdout) as Summary;
          assert.equal(summary.resumed, true, `${what}: resumed`);
          // nothing deleted partitions or part files: every task the log says finished is reused …
          assert.equal(summary.tasksReused, logged.size, `${what}: tasksReused vs the ${logged.size} tasks the log says finished (${[...logged].sort().join(', ')}); ${resumed.stderr}`);
          assert.equal(summary.attempts, summary.tasks - summary.tasksReused, `${what}: attempts counts only this run's`);
          // … and the resumed run deployed exactly the others (its own task-deployed events)
          const after = await s.log.readRun(jobId);
          const epoch = Math.max(...after.map((e) => e.epoch));
          const deployed = new Set(after.filter((e) => e.epoch === epoch && e.type === 'task-deployed').map((e) => (e.data as { executionVertexId: string }).executionVertexId));
          const all = new Set(reference.events.filter((e) => e.type === 'task-deployed').map((e) => (e.data as { executionVertexId: string }).executionVertexId));
          assert.deepEqual([...deployed].sort(), [...all].filter((t) => !logged.has(t)).sort(), `${what}: the resumed run deploys exactly the tasks the log did not finish`);
          assert.equal(after.at(-1)?.type, 'job-finished', what);
        }
        assert.ok((await readFile(output)).equals(reference.bytes), `${what}: the output equals a clean run's, byte for byte`);
      });
    }
  });
}
