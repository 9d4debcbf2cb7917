// Resume and event-log cost (issue 11): the terasort example, 2,000,000 records, parallelism 2, 2 worker
// processes, the local directory + SQLite blocking shuffle, its job event log in the same SQLite file.
//
// 1. Resume: a clean `weft run --job-id A` (wall time T, the baseline), then a run of a fresh id B whose job
//    master is SIGKILLed at 0.8·T after its start (its workers exit on their own; the bench waits until the
//    whole process group is gone), then the same command for B again — a resume — whose wall time is R.
//    Figure: R / T (target ≤ 0.4), with tasks reused of all and what the log said finished at the kill.
// 2. Event-log overhead on a clean run: the same job through the engine API (`runJob`, worker processes),
//    with the SQLite JobEventLog the CLI opens and without any log, interleaved rounds (target ≤ 3 %).
//    Per-append latency on SQLite and Redis comes from packages/job-store/bench/append.bench.ts, run as is.
//
// Every resumed output is checked byte-identical to the clean run's before any figure is printed.
//
//   npm run bench -- resume
//   WEFT_BENCH_RESUME_RECORDS=500000 WEFT_BENCH_RUNS=1 npm run bench -- resume      (quicker)
//   WEFT_BENCH_RESUME_PARALLELISM=8 npm run bench -- resume      (more, smaller tasks per stage; still 2 workers)
//   WEFT_BENCH_RESUME_PARALLELISM=auto npm run bench -- resume   (--parallelism auto: the sort decided from its
//                                                                 bytes; the generated source, which has no
//                                                                 bytes to go by, at one subtask per worker)
//   WEFT_BENCH_RESUME_KILL_AT=0.9 npm run bench -- resume        (the kill at another fraction of T)
//   WEFT_BENCH_RESUME_ONLY=resume|overhead npm run bench -- resume   (one part)
import { spawn, spawnSync } from 'node:child_process';
import { mkdirSync, readFileSync, rmSync } from 'node:fs';
import { availableParallelism, cpus, loadavg, totalmem } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { type JobEventLog, type JobLog, type LoggedJobEvent, runJob } from '@weft/engine';
import { createJobEventLog } from '@weft/job-store';
import { createRemoteShuffleServiceFactory } from '@weft/shuffle-remote';
import { createMemoryShuffleServiceFactory } from '@weft/shuffle-memory';
import { BenchReport, median, round } from '@weft/testkit';
// @ts-expect-error plain JavaScript next to the shim, no declarations
import { useBuiltCode } from '@weft/cli/built-code';

const root = fileURLToPath(new URL('..', import.meta.url));
const records = Number(process.env['WEFT_BENCH_RESUME_RECORDS'] ?? 2_000_000);
const runs = Number(process.env['WEFT_BENCH_RUNS'] ?? 3);
const killAt = Number(process.env['WEFT_BENCH_RESUME_KILL_AT'] ?? 0.8);
const workers = 2;
const parallelismSetting = process.env['WEFT_BENCH_RESUME_PARALLELISM'] ?? '2';
/** `auto`: Flink's adaptive batch scheduler's defaults, but a generated source at one subtask per worker. */
const auto = parallelismSetting === 'auto';
const parallelism = auto ? workers : Number(parallelismSetting);
if (!(Number.isInteger(parallelism) && parallelism >= 1)) throw new Error(`WEFT_BENCH_RESUME_PARALLELISM must be an integer >= 1 or auto, got ${parallelismSetting}`);
const parallelismFlags = auto ? ['--parallelism', 'auto', '--default-source-parallelism', String(workers)] : ['--parallelism', String(parallelism)];
const dir = join(root, '.weft', 'bench', 'resume');
const out = new BenchReport('resume');
const loads: number[] = [];
/** Repetitions redone because the run to kill finished before 0.8·T (the load fell between the two runs). */
const MAX_RETRIES = 3;
/** `resume` or `overhead`: only that part (parts 2 and 3 are `overhead`). */
const only = process.env['WEFT_BENCH_RESUME_ONLY'];
if (only !== undefined && only !== 'resume' && only !== 'overhead') throw new Error(`WEFT_BENCH_RESUME_ONLY must be resume or overhead, got ${only}`);
const sampleLoad = (): void => void loads.push(loadavg()[0] as number);

interface Summary {
  readonly status: string;
  readonly durationMs: number;
  readonly tasks: number;
  readonly attempts: number;
  readonly resumed: boolean;
  readonly tasksReused: number;
  readonly resumeFallback?: string;
  /** Which code ran (`built` or `source`, bin/weft.js decides): a ratio of a built run to one from source means nothing. */
  readonly cli: { readonly code: string };
}

interface Paths {
  readonly store: string;
  readonly meta: string;
  readonly output: string;
}

function paths(name: string): Paths {
  return { store: join(dir, `store-${name}`), meta: join(dir, `meta-${name}.db`), output: join(dir, `${name}.txt`) };
}

function weftArgs(jobId: string, p: Paths): string[] {
  return [
    'packages/cli/bin/weft.js', 'run', 'examples/terasort.ts', ...parallelismFlags, '--workers', String(workers), '--job-id', jobId,
    '--store', pathToFileURL(p.store).href, '--meta', `sqlite://${p.meta}`, '--json', '--', '--records', String(records), '--output', p.output,
  ];
}

function clean(p: Paths): void {
  rmSync(p.store, { recursive: true, force: true });
  for (const suffix of ['', '-wal', '-shm']) rmSync(`${p.meta}${suffix}`, { force: true });
}

/** Whether any process of group `pgid` is alive. */
function groupAlive(pgid: number): boolean {
  try {
    process.kill(-pgid, 0);
    return true;
  } catch {
    return false;
  }
}

/**
 * The job master: the `weft` process itself from built code (bin/weft.js imports dist/main.js), the one
 * child the shim starts from source. Decided once, from the build's freshness at the bench's start; a
 * run that then reports other code than that is refused where its summary is read.
 */
const builtCli: boolean = process.env['WEFT_FROM_SOURCE'] !== '1' && useBuiltCode(join(root, 'packages', 'cli'));
function jobMasterPid(shim: number): number {
  if (builtCli) return shim;
  const children = readFileSync(`/proc/${shim}/task/${shim}/children`, 'utf8').trim().split(/\s+/).filter((s) => s !== '').map(Number);
  if (children.length !== 1) throw new Error(`the weft shim ${shim} from source has ${children.length} children, not its one job master`);
  return children[0] as number;
}

interface Started {
  /** Date.now() at spawn and at the kill (the log's `atMs` clock), to place its events. */
  readonly spawnedAtMs: number;
  readonly killedAtMs: number | undefined;
  readonly seconds: number;
  readonly summary: Summary | undefined;
  readonly killed: boolean;
}

/**
 * Runs `weft run` in a process group of its own, to its end — or SIGKILLs its job master after
 * `killAfterS` and resolves once every process of the group (its workers) exited on its own.
 */
function weft(jobId: string, p: Paths, killAfterS?: number): Promise<Started> {
  sampleLoad();
  return new Promise((resolve, reject) => {
    const started = performance.now();
    const spawnedAtMs = Date.now();
    let killedAtMs: number | undefined;
    const child = spawn(process.execPath, weftArgs(jobId, p), { cwd: root, stdio: ['ignore', 'pipe', 'pipe'], detached: true });
    let stdout = '';
    let stderr = '';
    let killed = false;
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    child.on('error', reject);
    const timer =
      killAfterS === undefined
        ? undefined
        : setTimeout(() => {
            killed = true;
            killedAtMs = Date.now();
            process.kill(jobMasterPid(child.pid as number), 'SIGKILL');
          }, killAfterS * 1000);
    // 'close': the process exited and its output pipes are drained (workers that still hold them included)
    child.on('close', (code) => {
      const seconds = (performance.now() - started) / 1000;
      if (timer !== undefined) clearTimeout(timer);
      if (killAfterS !== undefined) {
        if (!killed) {
          // faster than the clean run it was timed against (the machine's load fell): the caller retries
          if (code === 0) resolve({ spawnedAtMs, killedAtMs: undefined, seconds, summary: undefined, killed: false });
          else reject(new Error(`${jobId} exited with ${code} before its kill at ${killAfterS.toFixed(2)} s:\n${stderr}`));
          return;
        }
        const pgid = child.pid as number;
        const deadline = Date.now() + 60_000;
        const wait = (): void => {
          if (!groupAlive(pgid)) resolve({ spawnedAtMs, killedAtMs, seconds, summary: undefined, killed: true });
          else if (Date.now() > deadline) {
            process.kill(-pgid, 'SIGKILL');
            reject(new Error(`${jobId}: workers still running 60 s after their job master was killed`));
          } else setTimeout(wait, 20);
        };
        wait();
        return;
      }
      if (code !== 0) {
        reject(new Error(`${jobId} exited with ${code}:\n${stderr}`));
        return;
      }
      resolve({ spawnedAtMs, killedAtMs: undefined, seconds, summary: JSON.parse(stdout) as Summary, killed: false });
    });
  });
}

/** Tasks the log says finished: a `task-finished` that no later `tasks-reset` names. */
function finishedIn(events: readonly LoggedJobEvent[]): string[] {
  const finished = new Set<string>();
  for (const e of events) {
    const data = e.data as { executionVertexId?: string; tasks?: string[] };
    if (e.type === 'task-finished') finished.add(data.executionVertexId as string);
    if (e.type === 'tasks-reset') for (const t of data.tasks ?? []) finished.delete(t);
  }
  return [...finished];
}

/** Tasks deployed and not finished when the log ends (what a kill interrupts), with how long they had run. */
function inFlightIn(events: readonly LoggedJobEvent[], atMs: number): string[] {
  const deployed = new Map<string, number>();
  for (const e of events) {
    const data = e.data as { executionVertexId?: string; tasks?: string[] };
    if (e.type === 'task-deployed') deployed.set(data.executionVertexId as string, e.atMs);
    if (e.type === 'task-finished') deployed.delete(data.executionVertexId as string);
    if (e.type === 'tasks-reset') for (const t of data.tasks ?? []) deployed.delete(t);
  }
  return [...deployed].sort().map(([task, at]) => `${task} (${((atMs - at) / 1000).toFixed(2)} s in)`);
}

/**
 * What a resumed run's wall time is made of, from its epoch's events on the spawning clock: start-up (spawn
 * to `job-submitted`), replay (to the first deploy: log, listing, clean-up), the tasks run again (to the
 * last `task-finished`), publishing (to `job-finished`) and exit.
 */
function phases(events: readonly LoggedJobEvent[], epoch: number, run: Started): { startUp: number; replay: number; tasks: number; publish: number; exit: number } {
  const mine = events.filter((e) => e.epoch === epoch);
  const at = (type: string, last = false): number => {
    const found = last ? [...mine].reverse().find((e) => e.type === type) : mine.find((e) => e.type === type);
    if (found === undefined) throw new Error(`the resumed run logged no ${type}`);
    return found.atMs;
  };
  const find = (type: string, last = false): number | undefined => (last ? [...mine].reverse() : mine).find((e) => e.type === type)?.atMs;
  const submitted = at('job-submitted');
  const finished = at('job-finished');
  // a kill after every task had finished (while publishing): the resume deploys nothing, only publishes
  const deployed = find('task-deployed') ?? submitted;
  const lastFinished = find('task-finished', true) ?? deployed;
  const exited = run.spawnedAtMs + run.seconds * 1000;
  return {
    startUp: (submitted - run.spawnedAtMs) / 1000,
    replay: (deployed - submitted) / 1000,
    tasks: (lastFinished - deployed) / 1000,
    publish: (finished - lastFinished) / 1000,
    exit: (exited - finished) / 1000,
  };
}

rmSync(dir, { recursive: true, force: true });
mkdirSync(dir, { recursive: true });
const cpu = cpus()[0]?.model ?? 'unknown CPU';
console.log(`machine: ${availableParallelism()} cores (${cpu}), ${(totalmem() / 2 ** 30).toFixed(0)} GiB, Node ${process.version}, load average ${loadavg().map((l) => l.toFixed(2)).join(' ')}`);
console.log(`terasort: ${records.toLocaleString('en-US')} records, parallelism ${parallelismSetting}, ${workers} workers, local directory + SQLite shuffle and event log; ${runs} repetitions, medians\n`);

// ---- 1. kill at 0.8·T, resume --------------------------------------------------------------------------
if (only === undefined || only === 'resume') {
  // One untimed run first: the first process to load the TypeScript sources pays for cold caches.
  const warm = paths('warm');
  await weft('warm', warm);
  clean(warm);
  rmSync(warm.output, { force: true });

  const cleanS: number[] = [];
  const resumedS: number[] = [];
  const ratios: number[] = [];
  const rows: string[] = [];
  const cleanStartUpS: number[] = [];
  const phaseS: Partial<Record<'startUp' | 'replay' | 'tasks' | 'publish' | 'exit', number[]>> = {};
  let retries = 0;
  for (let rep = 0; rep < runs; rep++) {
    const base = paths(`clean-${rep}`);
    const t = await weft(`clean-${rep}`, base);
    const cleanLog: JobEventLog = await createJobEventLog(`sqlite://${base.meta}`);
    const cleanParts = phases(await cleanLog.readRun(`clean-${rep}`), 1, t);
    await cleanLog.close();
    clean(base);
    const killed = paths(`killed-${rep}`);
    const jobId = `killed-${rep}`;
    const kill = await weft(jobId, killed, killAt * t.seconds);
    if (!kill.killed) {
      clean(killed);
      rmSync(base.output, { force: true });
      rmSync(killed.output, { force: true });
      if (++retries > MAX_RETRIES) throw new Error(`${jobId} ended before its kill ${retries} times: the machine's load moves too much`);
      console.log(`  rep ${rep + 1}: the run to kill finished in ${kill.seconds.toFixed(2)} s, before 0.8·T = ${(killAt * t.seconds).toFixed(2)} s; repeating this repetition`);
      rep--;
      continue;
    }
    const log: JobEventLog = await createJobEventLog(`sqlite://${killed.meta}`);
    const killedEvents = await log.readRun(jobId);
    await log.close();
    const atKill = finishedIn(killedEvents);
    const inFlight = inFlightIn(killedEvents, kill.killedAtMs as number);
    const resumed = await weft(jobId, killed);
    const summary = resumed.summary as Summary;
    const after: JobEventLog = await createJobEventLog(`sqlite://${killed.meta}`);
    const parts = phases(await after.readRun(jobId), 2, resumed);
    await after.close();
    if (!summary.resumed) throw new Error(`${jobId}: the second run did not resume (${summary.resumeFallback ?? 'no reason given'})`);
    const cleanCode = (t.summary as Summary).cli.code;
    if (summary.cli.code !== cleanCode) throw new Error(`${jobId}: the clean run ran ${cleanCode} code and the resume ${summary.cli.code} (a build went fresh or stale between them): no ratio`);
    if (readFileSync(killed.output).compare(readFileSync(base.output)) !== 0) throw new Error(`${jobId}: the resumed output differs from the clean run's`);
    clean(killed);
    rmSync(base.output, { force: true });
    rmSync(killed.output, { force: true });
    cleanS.push(t.seconds);
    resumedS.push(resumed.seconds);
    ratios.push(resumed.seconds / t.seconds);
    for (const [name, value] of Object.entries(parts)) (phaseS[name as keyof typeof parts] ??= []).push(value);
    cleanStartUpS.push(cleanParts.startUp);
    rows.push(
      `  rep ${rep + 1} (${summary.cli.code} code): T ${t.seconds.toFixed(2)} s (start-up ${cleanParts.startUp.toFixed(2)}, tasks ${cleanParts.tasks.toFixed(2)}); killed at ${kill.seconds.toFixed(2)} s, the log saying ${atKill.length} of ${summary.tasks} finished (${[...atKill].sort().join(', ') || 'none'}), in flight ${inFlight.join(', ') || 'none'}\n` +
        `         R ${resumed.seconds.toFixed(2)} s = start-up ${parts.startUp.toFixed(2)} + replay ${parts.replay.toFixed(2)} + tasks run again ${parts.tasks.toFixed(2)} + publish ${parts.publish.toFixed(2)} + exit ${parts.exit.toFixed(2)}; ` +
        `${summary.tasksReused} of ${summary.tasks} tasks reused, ${summary.attempts} run; R/T ${(resumed.seconds / t.seconds).toFixed(3)}`,
    );
    out.row(`rep ${rep + 1}`, `${t.seconds.toFixed(2)} s`, `${kill.seconds.toFixed(2)} s`, `${atKill.length} of ${summary.tasks}`, `${resumed.seconds.toFixed(2)} s`, `${summary.tasksReused} of ${summary.tasks}`, (resumed.seconds / t.seconds).toFixed(3));
    if (rep === 0) {
      out.report('tasks-finished-at-kill', 'tasks', atKill.length, 'tasks', summary.tasks);
      out.report('tasks-reused-on-resume', 'tasks', summary.tasksReused, 'tasks', summary.tasks);
    }
  }
  out.row('median', `${median(cleanS).toFixed(2)} s`, '', '', `${median(resumedS).toFixed(2)} s`, '', median(ratios).toFixed(3));
  out.report('resumed-run-wall', 's', median(resumedS), 'clean-run', median(cleanS));
  out.report('resumed-run-wall-ratio-median', 'ratio', median(ratios), 'target', 0.4);
  out.report('clean-run-start-up', 's', median(cleanStartUpS), 'clean-run', median(cleanS));
  for (const [name, values] of Object.entries(phaseS)) out.report(`resumed-run-${name.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`)}`, 's', median(values), 'resumed-run-wall', median(resumedS));
  console.log(`kill at ${killAt}·T of the same repetition's clean run; the job master (not its workers) SIGKILLed; outputs of every resume byte-identical to the clean run\n${rows.join('\n')}`);
}

// ---- 2. event-log overhead on a clean run -----------------------------------------------------------------

/** What the appends of the timed runs took: summed, and while at least one was pending (appends of one log queue). */
interface AppendTime {
  ms: number;
  busyMs: number;
  appends: number;
}

/** A log whose appends are timed, to show what they cost a run. */
function timedLog(inner: JobEventLog, spent: AppendTime): JobEventLog {
  let pending = 0;
  let since = 0;
  return {
    description: inner.description,
    open: async (request) => {
      const log = await inner.open(request);
      const timed: JobLog = {
        jobId: log.jobId,
        epoch: log.epoch,
        history: log.history,
        append: async (event) => {
          const t = performance.now();
          if (pending++ === 0) since = t;
          try {
            return await log.append(event);
          } finally {
            const now = performance.now();
            spent.ms += now - t;
            if (--pending === 0) spent.busyMs += now - since;
            spent.appends++;
          }
        },
        close: () => log.close(),
        [Symbol.asyncDispose]: () => log.close(),
      };
      return timed;
    },
    listRuns: () => inner.listRuns(),
    readRun: (jobId) => inner.readRun(jobId),
    deleteRun: (jobId) => inner.deleteRun(jobId),
    close: () => inner.close(),
    [Symbol.asyncDispose]: () => inner.close(),
  };
}

async function engineRun(name: string, withLog: boolean, spent: AppendTime): Promise<number> {
  const p = paths(name);
  sampleLoad();
  const started = performance.now();
  const blocking = createRemoteShuffleServiceFactory({ store: pathToFileURL(p.store).href, meta: `sqlite://${p.meta}` });
  const eventLog = withLog ? timedLog(await createJobEventLog(`sqlite://${p.meta}`), spent) : undefined;
  try {
    const result = await runJob({
      job: join(root, 'examples', 'terasort.ts'),
      args: ['--records', String(records), '--output', p.output],
      jobId: name,
      parallelism,
      ...(auto ? { adaptive: { defaultSourceParallelism: workers } } : {}),
      executor: 'workers',
      workers,
      shuffle: { pipelined: createMemoryShuffleServiceFactory(), blocking },
      cwd: root,
      ...(eventLog === undefined ? {} : { eventLog }),
    });
    if (result.status !== 'succeeded') throw new Error(`${name}: ${result.error?.message ?? 'failed'}`);
  } finally {
    await eventLog?.close();
  }
  const seconds = (performance.now() - started) / 1000;
  clean(p);
  rmSync(p.output, { force: true });
  return seconds;
}

if (only === undefined || only === 'overhead') {
  const none: number[] = [];
  const logged: number[] = [];
  const spent: AppendTime = { ms: 0, busyMs: 0, appends: 0 };
  await engineRun('engine-warm', false, spent);
  for (let round = 0; round < runs; round++) {
    // alternate which goes first, so drift within a round hits both alike
    const order = round % 2 === 0 ? [false, true] : [true, false];
    for (const withLog of order) (withLog ? logged : none).push(await engineRun(`engine-${withLog ? 'log' : 'nolog'}-${round}`, withLog, spent));
  }
  const perRun = spent.ms / runs;
  const busyPerRun = spent.busyMs / runs;
  console.log(
    `\nevent-log overhead (runJob through the engine API, worker processes): without a log ${none.map((s) => s.toFixed(2)).join(' ')} s, ` +
      `with the SQLite log ${logged.map((s) => s.toFixed(2)).join(' ')} s; ${Math.round(spent.appends / runs)} appends a run, ${perRun.toFixed(1)} ms a run awaited in them (summed), ${busyPerRun.toFixed(1)} ms with one or more pending`,
  );
  out.row('event log: without', `${median(none).toFixed(2)} s`, '', '', '', '', '');
  out.row('event log: SQLite', `${median(logged).toFixed(2)} s`, '', '', '', '', (median(logged) / median(none)).toFixed(3));
  out.report('clean-run-wall-with-sqlite-event-log', 's', median(logged), 'clean-run-without-event-log', median(none));
  out.report('event-log-append-time-per-run', 'ms', perRun, 'clean-run-without-event-log-ms', median(none) * 1000);
  out.report('event-log-append-pending-time-per-run', 'ms', busyPerRun, 'clean-run-without-event-log-ms', median(none) * 1000);
}

// ---- per-append latency: the job-store bench, run as is --------------------------------------------------
if (only === undefined || only === 'overhead') {
  sampleLoad();
  const appendBench = spawnSync(process.execPath, ['--conditions=source', '--import', 'tsx', 'packages/job-store/bench/append.bench.ts'], { cwd: root, encoding: 'utf8', maxBuffer: 16 * 1024 * 1024 });
  if (appendBench.status !== 0) throw new Error(`the append bench exited with ${appendBench.status ?? appendBench.signal}:\n${appendBench.stderr}`);
  for (const line of appendBench.stdout.split('\n')) {
    if (!line.startsWith('{')) continue;
    const figure = JSON.parse(line) as { metric: string; value: number; baseline: string; baselineValue: number };
    const m = /^(sqlite|redis) append latency (p50|p99)$/.exec(figure.metric);
    if (m === null) continue;
    out.report(`${m[1]}-append-latency-${m[2]}`, 'us', figure.value, figure.baseline, figure.baselineValue);
    out.row(`append ${m[1]} ${m[2]}`, `${round(figure.value, 1)} us`, '', '', '', '', `vs ${figure.baseline} ${round(figure.baselineValue, 1)} us`);
  }
}

out.print(`resume after a kill at ${killAt}·T, event-log overhead (load average over the runs: ${Math.min(...loads).toFixed(2)}–${Math.max(...loads).toFixed(2)})`, [
  'run',
  'T (clean)',
  'killed at',
  'finished at kill',
  'R (resumed)',
  'reused',
  'R/T',
]);
rmSync(dir, { recursive: true, force: true });
