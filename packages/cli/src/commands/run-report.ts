import type { FailoverRecord, JobProgress, JobResult } from '@weft/engine';

const MAX_COLLECTED_SHOWN = 20;

/** `1234567` → `1,234,567`. */
export function formatCount(n: number): string {
  return Math.round(n).toLocaleString('en-US');
}

/** Bytes as B / KiB / MiB / GiB with three significant digits. */
export function formatBytes(n: number): string {
  const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
  let value = n;
  let unit = 0;
  while (value >= 1024 && unit < units.length - 1) {
    value /= 1024;
    unit++;
  }
  return unit === 0 ? `${value} B` : `${value.toPrecision(3)} ${units[unit]}`;
}

/** `1 task`, `2 tasks`. */
export function plural(n: number, word: string): string {
  return `${formatCount(n)} ${word}${n === 1 ? '' : 's'}`;
}

export function formatDuration(ms: number): string {
  return ms < 1000 ? `${Math.round(ms)} ms` : `${(ms / 1000).toFixed(2)} s`;
}

/** The live progress line (stderr, TTY only): tasks done / total, records and bytes shuffled. */
export function formatProgressLine(p: JobProgress): string {
  const failures = p.failures > 0 ? ` · ${p.failures} failed` : '';
  return `[${formatDuration(p.elapsedMs)}] tasks ${p.tasksFinished}/${p.tasksTotal} (${p.tasksRunning} running) · regions ${p.regionsFinished}/${p.regionsTotal} · read ${formatCount(p.recordsRead)} records · shuffled ${formatCount(p.recordsShuffled)} records, ${formatBytes(p.bytesShuffled)}${failures}`;
}

function formatValue(value: unknown): string {
  return typeof value === 'string' ? value : JSON.stringify(value);
}

/** The plain final summary: collected values, then time, records, bytes per edge, regions, outputs. */
export function formatRunSummary(result: JobResult): string {
  const lines: string[] = [];
  for (const [name, values] of Object.entries(result.collected)) {
    lines.push(`${name}:`);
    for (const value of values.slice(0, MAX_COLLECTED_SHOWN)) lines.push(`  ${formatValue(value)}`);
    if (values.length > MAX_COLLECTED_SHOWN) lines.push(`  … ${values.length - MAX_COLLECTED_SHOWN} more`);
  }
  const { kind, executors, slots } = result.executor;
  const executor =
    kind === 'workers' ? `${executors} workers × ${slots} slot${slots === 1 ? '' : 's'}` : kind === 'inprocess' ? `in process, ${slots} slots` : `${executors} ${kind} task executor${executors === 1 ? '' : 's'}`;
  lines.push(
    `Job ${result.name} ${result.status} in ${formatDuration(result.durationMs)} (parallelism ${result.adaptive === undefined ? result.parallelism : 'auto'}, ${executor}, ${result.exchangeMode})`,
    `  ${plural(result.tasks, 'task')} in ${plural(result.regions, 'pipelined region')}; ${plural(result.attempts, 'attempt')} deployed${result.restarts > 0 ? `, ${plural(result.restarts, 'restart')}` : ''}`,
    ...(result.resumed ? [`  resumed run of ${result.jobId}: ${plural(result.tasksReused, 'task')} reused`] : []),
    ...(result.checkpoints === undefined ? [] : [formatCheckpointLine(result.checkpoints)]),
    ...(result.approximateRecoveries ?? []).map(formatApproximateRecoveryLine),
    `  read ${formatCount(result.recordsRead)} records; shuffled ${formatCount(result.recordsShuffled)} records, ${formatBytes(result.bytesShuffled)}${result.restarts > 0 ? ' (by the last attempts: a restarted task counts from its restart)' : ''}`,
  );
  if (result.placement.spreadDeployments > 0) {
    const perExecutor = Object.entries(result.placement.tasksPerExecutor).map(([id, n]) => `${id} ${formatCount(n)}`).join(', ');
    lines.push(`  ${plural(result.placement.spreadDeployments, 'region deployment')} spread over executors; tasks per executor: ${perExecutor}`);
  }
  if (result.partitionsReleasedDuringJob > 0) {
    lines.push(`  released ${plural(result.partitionsReleasedDuringJob, 'partition')} (${formatBytes(result.bytesReleasedDuringJob)}) while the job ran, once their consumers finished`);
  }
  if (result.edges.length > 0) {
    const width = Math.max(...result.edges.map((e) => e.id.length));
    lines.push('  edges:');
    for (const e of result.edges) {
      lines.push(`    ${e.id.padEnd(width)}  ${e.distribution.padEnd(10)} ${e.partitionType.padEnd(17)} ${formatCount(e.records).padStart(13)} ${e.records === 1 ? 'record ' : 'records'}  ${formatBytes(e.bytes).padStart(10)}`);
    }
  }
  lines.push(...formatDecisions(result));
  lines.push(...formatRecovery(result));
  for (const output of result.outputs) lines.push(`  wrote ${output.path} (${output.parts} part${output.parts === 1 ? '' : 's'}, sink ${output.sink})`);
  return `${lines.join('\n')}\n`;
}

/**
 * The shuffle-server copies line: `  shuffle replicas: 2 requested, 1 used (1 live server)`; the live
 * servers are said when fewer were used than requested, and a shared host when copies had to share one.
 */
export function formatReplicationLine(r: { readonly requested: number; readonly used: number; readonly liveServers: number | undefined; readonly sameHost: boolean }): string {
  const live = r.used < r.requested && r.liveServers !== undefined ? ` (${plural(r.liveServers, 'live server')})` : '';
  const host = r.sameHost ? '; some copies share a host (too few hosts in the pool)' : '';
  return `  shuffle replicas: ${r.requested} requested, ${r.used} used${live}${host}\n`;
}

/** Execution vertex ids grouped by vertex, subtasks as ranges: `sort#0-3, count#0`. */
export function formatTaskSet(ids: readonly string[]): string {
  const byVertex = new Map<string, number[]>();
  for (const id of ids) {
    const hash = id.lastIndexOf('#');
    const vertex = id.slice(0, hash);
    const list = byVertex.get(vertex);
    if (list === undefined) byVertex.set(vertex, [Number(id.slice(hash + 1))]);
    else list.push(Number(id.slice(hash + 1)));
  }
  const parts: string[] = [];
  for (const [vertex, subtasks] of byVertex) {
    subtasks.sort((a, b) => a - b);
    const ranges: string[] = [];
    for (let i = 0; i < subtasks.length; ) {
      let j = i;
      while (j + 1 < subtasks.length && subtasks[j + 1] === (subtasks[j] as number) + 1) j++;
      ranges.push(j === i ? `${subtasks[i]}` : `${subtasks[i]}-${subtasks[j]}`);
      i = j + 1;
    }
    parts.push(`${vertex}#${ranges.join(',')}`);
  }
  return parts.join(', ');
}

/** Tasks a failover did not restart, against restarting the whole job. */
export function workSaved(failover: FailoverRecord): { tasks: number; percent: number } {
  const tasks = failover.tasksTotal - failover.tasksToRestart.length;
  return { tasks, percent: failover.tasksTotal === 0 ? 0 : Math.round((1000 * tasks) / failover.tasksTotal) / 10 };
}

/** What failed: `task <attempt>`, or the job master for a global failover. */
function whatFailed(failover: FailoverRecord): string {
  return failover.global === true ? 'the job master failed over globally' : `task ${failover.attemptId} failed`;
}

/** One line for a failover as it happens (the summary at the end gives the details). */
export function formatFailoverLine(failover: FailoverRecord): string {
  const saved = workSaved(failover);
  const code = failover.error.code === undefined ? '' : ` (${failover.error.code})`;
  return (
    `failover at ${formatDuration(failover.atMs)}: ${whatFailed(failover)}${code}: restarting ${failover.tasksToRestart.length} of ` +
    `${failover.tasksTotal} tasks (${failover.tasksRunAgain.length} had started), ${saved.percent}% saved against restarting all, ` +
    `in ${failover.backoffMs} ms\n`
  );
}

/** Most subpartition ranges shown per input of a decided vertex. */
const MAX_RANGES_SHOWN = 8;

/**
 * An adaptive run's decisions: per decided vertex its parallelism, the bytes its inputs held and, per
 * input, the subpartition range each subtask read (`[0-1] [2-3] …`; partitions too when not all).
 */
export function formatDecisions(result: JobResult): string[] {
  if (result.adaptive === undefined) return [];
  const a = result.adaptive;
  const lines = [`  adaptive parallelism (min ${a.minParallelism}, max ${a.maxParallelism}, ${formatBytes(a.dataVolumePerTaskBytes)} per task):`];
  const width = Math.max(...result.vertices.map((v) => v.id.length));
  for (const v of result.vertices) {
    if (v.decided === undefined) {
      lines.push(`    ${v.id.padEnd(width)}  ${plural(v.parallelism, 'subtask')} (fixed before the run)`);
      continue;
    }
    lines.push(`    ${v.id.padEnd(width)}  ${plural(v.parallelism, 'subtask')} decided from ${formatBytes(v.decided.bytesIn)}`);
    for (const input of v.decided.inputs) {
      const lastPartition = Math.max(...input.subtasks.map((s) => s.partitions.end));
      const ranges = input.subtasks.map((s) => {
        const sub = s.subpartitions.start === s.subpartitions.end ? `${s.subpartitions.start}` : `${s.subpartitions.start}-${s.subpartitions.end}`;
        // one partition (pointwise), or a producer range of a split skewed key group
        const whole = s.partitions.start === 0 && s.partitions.end === lastPartition;
        const parts = s.partitions.start === s.partitions.end ? `p${s.partitions.start}:` : whole ? '' : `p${s.partitions.start}-${s.partitions.end}:`;
        return `[${parts}${sub}]`;
      });
      const shown = ranges.slice(0, MAX_RANGES_SHOWN).join(' ') + (ranges.length > MAX_RANGES_SHOWN ? ` … ${ranges.length - MAX_RANGES_SHOWN} more` : '');
      lines.push(`      ${input.edgeId}: ${shown}`);
    }
    for (const split of v.decided.skewedSplits ?? []) {
      lines.push(`      skewed key group ${split.subpartition} (${formatBytes(split.bytes)} of ${split.edgeIds.join(', ')}) split into ${split.parts} subtasks by producer ranges, ${split.operator === 'join' ? 'the other side replicated to each' : 'merged by the next stage'}`);
    }
  }
  const splitting = [a.skewedJoin === 'auto' ? 'joins' : '', a.skewedAggregation === 'auto' ? 'aggregations' : ''].filter((x) => x !== '');
  lines.push(
    splitting.length === 0
      ? '    skewed key groups: not split (--skewed-join none)'
      : `    skewed key groups (above ${a.skewedFactor}x the median and ${formatBytes(a.skewedThresholdBytes)}) are split in ${splitting.join(' and ')}`,
  );
  return lines;
}

/** Each failover (which task failed and why, what restarted, what that saved) and each lost worker. */
function formatRecovery(result: JobResult): string[] {
  const lines: string[] = [];
  if (result.failovers.length > 0) lines.push(`  failovers (${result.failoverStrategy} strategy, ${result.restartStrategy}):`);
  result.failovers.forEach((f, i) => {
    const saved = workSaved(f);
    lines.push(
      `    ${i + 1}. at ${formatDuration(f.atMs)}: ${whatFailed(f)}: ${f.error.code === undefined ? '' : `${f.error.code}: `}${f.error.message}`,
      ...(f.lostPartitions.length === 0 ? [] : [`       lost partitions: ${f.lostPartitions.join(', ')}`]),
      `       restarted ${f.tasksToRestart.length} of ${f.tasksTotal} tasks: ${formatTaskSet(f.tasksToRestart)}`,
      `       saved ${saved.tasks} of ${f.tasksTotal} tasks (${saved.percent}%) against restarting all of them`,
      `       work redone: ${f.tasksRunAgain.length} of the restarted tasks had started (restarting all would redo the ${f.tasksDeployed} that had)`,
    );
  });
  for (const lost of result.executorsLost) {
    lines.push(`  lost ${lost.taskExecutorId} at ${formatDuration(lost.atMs)}: ${lost.reason}${lost.replaced ? '; a new worker took its place' : ''}`);
  }
  return lines;
}

/** One line per single-task recovery of an approximate job: the task, how long until it read again, what it and the consumers restarted with it lost (counted). */
function formatApproximateRecoveryLine(r: NonNullable<JobResult['approximateRecoveries']>[number]): string {
  const took = r.durationMs === undefined ? 'did not read again before the job ended' : `read again after ${Math.round(r.durationMs)} ms`;
  return (
    `  approximate recovery of ${r.task} (attempt ${r.failedAttempt} failed): ${took}; ${r.recordsLost === undefined ? 'what it lost is not counted (it did not run again before the job ended)' : `${plural(r.recordsLost, 'record')} lost to its state`}; ${plural(r.recordsDroppedUpstream, 'record')} dropped upstream, ` +
    `${plural(r.partialRecordsDiscardedDownstream, 'partial record')} discarded downstream; the failed attempt had processed ${formatCount(r.recordsProcessedByFailedAttempt)} and left ${formatCount(r.recordsUnprocessedByFailedAttempt)} unprocessed` +
    (r.restartedWith === undefined ? '' : `; restarted with it: ${r.restartedWith.map((c) => c.task).join(', ')} (${plural(r.restartedWith.reduce((n, c) => n + c.recordsLost, 0), 'record')} lost to their state)`)
  );
}

/** One line of a checkpointed run's summary: how many checkpoints, the newest, what the run restored. */
function formatCheckpointLine(c: NonNullable<JobResult['checkpoints']>): string {
  const latest = c.latestCompletedId === undefined ? 'none completed' : `latest ${c.latestCompletedId} (${formatBytes(c.latestStateBytes ?? 0)} of state, ${c.latestDurationMs ?? 0} ms)`;
  const restored = c.restoredFrom === undefined ? '' : `; started from checkpoint ${c.restoredFrom}`;
  const end = c.discarded !== undefined ? `; removed at the end (${c.retention}): ${plural(c.discarded.checkpoints, 'checkpoint')}, ${plural(c.discarded.objects, 'object')}` : c.discardError !== undefined ? `; removing them at the end failed (${c.discardError}): weft gc collects them` : `; kept (${c.retention})`;
  return `  checkpoints (${c.mode === 'aligned' ? 'exactly-once' : 'at-least-once'}, every ${c.intervalMs} ms): ${c.completed} completed, ${c.aborted} aborted, ${latest}${restored}; ${plural(c.tasksRestored, 'task attempt')} restored from one${end}`;
}

/** The machine-readable summary `weft run --json` prints (`extra`: e.g. the injected faults). */
export function runSummaryJson(result: JobResult, extra: Record<string, unknown> = {}): Record<string, unknown> {
  const error = result.error;
  return {
    status: result.status,
    jobId: result.jobId,
    job: result.name,
    durationMs: Math.round(result.durationMs),
    parallelism: result.parallelism,
    executor: result.executor,
    exchangeMode: result.exchangeMode,
    regions: result.regions,
    tasks: result.tasks,
    attempts: result.attempts,
    resumed: result.resumed,
    tasksReused: result.tasksReused,
    ...(result.resumeFallback === undefined ? {} : { resumeFallback: result.resumeFallback }),
    ...(result.epoch === undefined ? {} : { epoch: result.epoch }),
    failures: result.failures,
    restarts: result.restarts,
    failoverStrategy: result.failoverStrategy,
    restartStrategy: result.restartStrategy,
    failovers: result.failovers.map((f) => {
      const saved = workSaved(f);
      return { ...f, savedTasks: saved.tasks, savedPercent: saved.percent };
    }),
    executorsLost: result.executorsLost,
    deploymentLatency: result.deploymentLatency,
    placement: result.placement,
    taskAttempts: result.taskAttempts,
    workerPids: result.workerPids,
    topology: result.topology,
    recordsRead: result.recordsRead,
    recordsShuffled: result.recordsShuffled,
    bytesShuffled: result.bytesShuffled,
    partitionsReleasedDuringJob: result.partitionsReleasedDuringJob,
    bytesReleasedDuringJob: result.bytesReleasedDuringJob,
    ...(result.adaptive === undefined ? {} : { adaptive: result.adaptive }),
    ...(result.checkpoints === undefined ? {} : { checkpoints: result.checkpoints }),
    ...(result.approximateRecoveries === undefined ? {} : { approximateRecoveries: result.approximateRecoveries.map((r) => ({ ...r, ...(r.durationMs === undefined ? {} : { durationMs: Math.round(r.durationMs) }) })) }),
    vertices: result.vertices,
    edges: result.edges,
    outputs: result.outputs,
    collected: result.collected,
    ...extra,
    ...(error === undefined ? {} : { error: describeError(error) }),
  };
}

/** An error and its cause chain as JSON (code, message, context). */
export function describeError(error: unknown): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  const e = error as { name?: unknown; code?: unknown; message?: unknown; context?: unknown; cause?: unknown };
  if (typeof e?.code === 'string') out['code'] = e.code;
  out['message'] = typeof e?.message === 'string' ? e.message : String(error);
  if (typeof e?.context === 'object' && e.context !== null && Object.keys(e.context).length > 0) out['context'] = e.context;
  if (e?.cause !== undefined) out['cause'] = describeError(e.cause);
  return out;
}

/** A Node.js system error (a failed system call: `code` such as ENOTDIR, `syscall` such as mkdir). */
function isSystemError(error: unknown): boolean {
  const e = error as { code?: unknown; syscall?: unknown };
  return typeof e?.syscall === 'string' && typeof e.code === 'string' && /^E[A-Z0-9]+$/.test(e.code);
}

/** The failure for a person: the message, then the deepest cause's stack (the user's own error). */
export function formatFailure(error: unknown): string {
  // a fenced job master (a newer run of its job id took over): one line, by its code — it is no fault to debug
  if ((error as { code?: unknown })?.code === 'WEFT_ERR_FENCED') return `job failed: WEFT_ERR_FENCED: ${(error as Error).message}\n`;
  const lines = [`job failed: ${(error as Error)?.message ?? String(error)}`];
  let root: unknown = error;
  let userFunction = false;
  for (let depth = 0; depth < 16 && (root as { cause?: unknown })?.cause !== undefined; depth++) {
    userFunction ||= (root as { code?: unknown }).code === 'WEFT_ERR_USER_FUNCTION_FAILED';
    root = (root as { cause?: unknown }).cause;
  }
  if (root !== error) {
    // an expected fault (an error with a documented code, or the system's outside user code: ENOSPC, ENOTDIR,
    // ECONNREFUSED…) by its code and message; anything else — a user function's throw (its I/O errors
    // included), a bug — with its stack, where to look
    const code = (root as { code?: unknown })?.code;
    const stack = (root as Error)?.stack;
    const message = String((root as Error)?.message);
    if (typeof code === 'string' && (/^(SHF|WEFT)_ERR_/.test(code) || (isSystemError(root) && !userFunction))) lines.push(`caused by: ${message.startsWith(`${code}:`) ? message : `${code}: ${message}`}`);
    else lines.push(`caused by: ${typeof stack === 'string' ? stack : String(root)}`);
  }
  return `${lines.join('\n')}\n`;
}
