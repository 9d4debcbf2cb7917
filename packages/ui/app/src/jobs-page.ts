// `#/jobs`: every job the log knows, newest first — status, start, duration, tasks, records, bytes, failovers,
// and why a log cannot be read. Refreshed every few seconds while a job runs.
import type { JobListItem, JobListResponse } from '../../src/api/ui-api.js';
import { h } from './dom.js';
import { formatBytes, formatCount, formatDuration, formatTime } from './format.js';
import type { Disposer, PageContext } from './page-context.js';
import { jobHref } from './router.js';

const REFRESH_MS = 3000;

function row(job: JobListItem): HTMLTableRowElement {
  const tasks = job.tasksTotal === undefined ? `${job.tasksFinished}` : `${job.tasksFinished}/${job.tasksTotal}`;
  return h('tr', { 'data-job-id': job.jobId, 'data-status': job.status },
    h('td', {}, h('a', { href: jobHref(job.jobId) }, job.jobId)),
    h('td', {}, job.name ?? ''),
    h('td', {}, h('span', { class: `badge ${job.status}` }, job.status)),
    h('td', {}, formatTime(job.startedAtMs)),
    h('td', { class: 'num' }, formatDuration(job.durationMs)),
    h('td', { class: 'num' }, tasks),
    h('td', { class: 'num' }, formatCount(job.records)),
    h('td', { class: 'num' }, formatBytes(job.bytes)),
    h('td', { class: 'num' }, job.failovers),
    h('td', { class: 'error-text' }, job.problem ?? ''));
}

export function renderJobs(response: JobListResponse): HTMLElement {
  const jobs = [...response.jobs].sort((a, b) => b.startedAtMs - a.startedAtMs);
  return h('div', {},
    h('h1', {}, 'Jobs'),
    jobs.length === 0
      ? h('p', { class: 'muted', 'data-empty': '' }, 'No jobs in this log yet.')
      : h('table', { 'data-jobs': String(jobs.length) },
          h('thead', {}, h('tr', {}, ...['job', 'name', 'status', 'started', 'duration', 'tasks', 'records', 'bytes', 'failovers', ''].map((c, i) => h('th', { class: i >= 4 && i <= 8 ? 'num' : undefined }, c)))),
          h('tbody', {}, ...jobs.map(row))));
}

export function mountJobsPage(ctx: PageContext): Disposer {
  let timer: ReturnType<typeof setTimeout> | undefined;
  let disposed = false;
  const load = async (): Promise<void> => {
    const result = await ctx.client.get<JobListResponse>('/api/jobs');
    if (disposed || !ctx.current()) return;
    if (!result.ok) {
      ctx.fail(result.failure);
      return;
    }
    ctx.show(renderJobs(result.value), 'jobs');
    if (result.value.jobs.some((j) => j.status === 'running')) timer = setTimeout(() => void load(), REFRESH_MS);
  };
  void load();
  return () => {
    disposed = true;
    if (timer !== undefined) clearTimeout(timer);
  };
}
