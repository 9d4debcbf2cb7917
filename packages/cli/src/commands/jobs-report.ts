import type { JobRunRecord } from '@weft/engine';

/** One run as `weft jobs --json` prints it. */
export interface JobsReportRun {
  readonly jobId: string;
  readonly job: string | null;
  readonly status: JobRunRecord['status'];
  /** ISO 8601 time of the run's first event. */
  readonly startedAt: string;
  readonly lastEventAt: string;
  readonly tasksFinished: number;
  readonly tasksTotal: number | null;
  /** `tasksTotal` counts vertices not decided yet (`--parallelism auto`) at their reserved size: at most that many. Present only when true. */
  readonly tasksTotalIsUpperBound?: true;
  readonly epoch: number;
  readonly events: number;
  readonly owner: string | null;
  readonly problem?: string;
}

const iso = (ms: number): string => new Date(ms).toISOString();

export function toJobsReportRun(run: JobRunRecord): JobsReportRun {
  return {
    jobId: run.jobId,
    job: run.jobName ?? null,
    status: run.status,
    startedAt: iso(run.firstAtMs),
    lastEventAt: iso(run.lastAtMs),
    tasksFinished: run.tasksFinished,
    tasksTotal: run.tasksTotal ?? null,
    ...(run.tasksTotalIsUpperBound === true ? { tasksTotalIsUpperBound: true as const } : {}),
    epoch: run.epoch,
    events: run.events,
    owner: run.owner ?? null,
    ...(run.problem === undefined ? {} : { problem: run.problem }),
  };
}

/** The table `weft jobs` prints for a person: one row per run, then any run's problem. */
export function formatJobsReport(runs: readonly JobsReportRun[], store: string): string {
  if (runs.length === 0) return `no runs in ${store}\n`;
  const header = ['JOB ID', 'JOB', 'STATUS', 'STARTED', 'TASKS', 'EPOCH'];
  const rows = runs.map((r) => [r.jobId, r.job ?? '-', r.status, r.startedAt, `${r.tasksFinished}/${r.tasksTotalIsUpperBound === true ? '≤' : ''}${r.tasksTotal ?? '?'}`, String(r.epoch)]);
  const widths = header.map((_, i) => Math.max(...[header, ...rows].map((row) => (row[i] as string).length)));
  const lines = [header, ...rows].map((row) => row.map((cell, i) => cell.padEnd(widths[i] as number)).join('  ').trimEnd());
  const problems = runs.filter((r) => r.problem !== undefined).map((r) => `${r.jobId}: ${r.problem}`);
  const count = `${runs.length} run${runs.length === 1 ? '' : 's'} in ${store}; unfinished runs resume with \`weft run <job> --job-id <id>\``;
  return `${[...lines, '', count, ...problems].join('\n')}\n`;
}
