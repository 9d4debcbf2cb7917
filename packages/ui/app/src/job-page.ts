// `#/jobs/<id>`: one job — its header, live counters, the job graph (dag-view), the timeline of regions and
// attempts per executor (timeline-view), the failovers with their cause and restarted tasks, and the restart
// strategy's state. While the job runs it follows the stream (live-job) and redraws only the sections whose data
// changed, so an open <details> stays open and the 10,000-attempt timeline is not redrawn for a counter.
import type { JobDetailResponse, UiFailover, UiProgress } from '../../src/api/ui-api.js';
import { renderDag } from './dag-view.js';
import { h } from './dom.js';
import { failedWhat } from './failed-what.js';
import { formatBytes, formatCount, formatDuration, formatTime } from './format.js';
import { followJob, type LiveMode } from './live-job.js';
import type { Disposer, PageContext } from './page-context.js';
import { renderTimeline } from './timeline-view.js';

const TASK_LIST_LIMIT = 400;

function counter(name: string, label: string, value: string, fraction?: number): HTMLElement {
  return h('div', { class: 'counter' },
    h('div', { class: 'value', 'data-counter': name }, value),
    h('div', { class: 'label' }, label),
    fraction === undefined ? null : h('div', { class: 'bar' }, h('div', { style: `width:${Math.round(Math.min(1, Math.max(0, fraction)) * 100)}%` })));
}

function renderCounters(detail: JobDetailResponse): HTMLElement {
  const { job } = detail;
  const progress: UiProgress | undefined = detail.progress;
  if (progress) {
    return h('div', { class: 'counters', 'data-live-progress': '' },
      counter('elapsed', 'elapsed', formatDuration(progress.elapsedMs)),
      counter('tasks', 'tasks finished', `${progress.tasksFinished}/${progress.tasksTotal}`, progress.tasksTotal > 0 ? progress.tasksFinished / progress.tasksTotal : 0),
      counter('tasksRunning', 'tasks running', String(progress.tasksRunning)),
      counter('recordsRead', 'records read', formatCount(progress.recordsRead)),
      counter('recordsShuffled', 'records shuffled', formatCount(progress.recordsShuffled)),
      counter('bytesShuffled', 'bytes shuffled', formatBytes(progress.bytesShuffled)),
      counter('failures', 'failures', String(progress.failures)));
  }
  const tasks = job.tasksTotal === undefined ? String(job.tasksFinished) : `${job.tasksFinished}/${job.tasksTotal}`;
  return h('div', { class: 'counters' },
    counter('duration', 'duration', formatDuration(job.durationMs)),
    counter('tasks', 'tasks finished', tasks, job.tasksTotal ? job.tasksFinished / job.tasksTotal : undefined),
    counter('records', 'records', formatCount(job.records)),
    counter('bytes', 'bytes', formatBytes(job.bytes)),
    counter('failovers', 'failovers', String(job.failovers)));
}

function renderHeader(detail: JobDetailResponse, mode: LiveMode | undefined): HTMLElement {
  const { job } = detail;
  return h('div', {},
    h('p', {}, h('a', { href: '#/jobs' }, '← all jobs')),
    h('h1', {}, job.name ?? job.jobId, ' ', h('span', { class: `badge ${job.status}`, 'data-job-status': job.status }, job.status),
      mode === undefined || mode === 'ended' ? null : h('span', { class: 'muted', 'data-live': mode }, mode === 'stream' ? ' · live' : ' · live (polling)')),
    h('dl', { class: 'kv' },
      h('dt', {}, 'job id'), h('dd', {}, job.jobId),
      h('dt', {}, 'epoch'), h('dd', {}, job.epoch),
      h('dt', {}, 'started'), h('dd', {}, formatTime(job.startedAtMs)),
      h('dt', {}, 'ended'), h('dd', {}, job.endedAtMs === undefined ? '–' : formatTime(job.endedAtMs))),
    job.problem ? h('p', { class: 'error-text', 'data-job-problem': '' }, job.problem) : null,
    detail.error ? h('p', { class: 'error-text', 'data-job-error': '' }, `job failed: ${detail.error.code ? `${detail.error.code}: ` : ''}${detail.error.message}`) : null);
}

function taskList(label: string, tasks: readonly string[]): HTMLElement {
  const shown = tasks.slice(0, TASK_LIST_LIMIT).join(' ');
  return h('details', {},
    h('summary', {}, `${label} (${tasks.length})`),
    h('div', { class: 'tasks' }, shown, tasks.length > TASK_LIST_LIMIT ? ` … and ${tasks.length - TASK_LIST_LIMIT} more` : ''));
}

function renderFailover(failover: UiFailover, index: number): HTMLElement {
  const cause = failover.error.code ? `${failover.error.code}: ${failover.error.message}` : failover.error.message;
  return h('div', { class: 'failover', 'data-failover': String(index), 'data-failed-task': failover.failedTask, 'data-global': failover.global },
    h('div', {}, h('strong', {}, `#${index + 1} at ${formatDuration(failover.atMs)}: ${failedWhat(failover)}`),
      h('span', { class: 'muted' }, ` · strategy ${failover.strategy} · backoff ${formatDuration(failover.backoffMs)} · ${failover.tasksToRestart.length} tasks reset, ${failover.tasksRunAgain.length} run again`)),
    h('div', { class: 'cause', 'data-failover-cause': '' }, cause),
    failover.lostPartitions.length > 0 ? h('div', { class: 'muted' }, `lost partitions: ${failover.lostPartitions.join(', ')}`) : null,
    taskList('tasks reset', failover.tasksToRestart),
    taskList('tasks run again', failover.tasksRunAgain));
}

function renderFailovers(detail: JobDetailResponse): HTMLElement {
  if (detail.failovers.length === 0) return h('p', { class: 'muted', 'data-failovers': '0' }, 'No failovers.');
  return h('div', { 'data-failovers': String(detail.failovers.length) }, ...detail.failovers.map(renderFailover));
}

function renderRestartStrategy(detail: JobDetailResponse): HTMLElement {
  const strategy = detail.restartStrategy;
  if (!strategy) return h('p', { class: 'muted', 'data-restart-strategy': '' }, 'Not recorded in the log.');
  const options = typeof strategy.options === 'object' && strategy.options !== null ? Object.entries(strategy.options as Record<string, unknown>) : [['options', strategy.options] as const];
  return h('dl', { class: 'kv', 'data-restart-strategy': '' },
    ...options.flatMap(([key, value]) => [h('dt', {}, key), h('dd', {}, typeof value === 'string' ? value : JSON.stringify(value))]),
    h('dt', {}, 'restarts so far'), h('dd', { 'data-restarts': String(strategy.restarts) }, strategy.restarts));
}

function section(name: string, title: string): { element: HTMLElement; body: HTMLElement } {
  const body = h('div', {});
  return { element: h('section', { 'data-section': name }, h('h2', {}, title), body), body };
}

type SectionName = 'dag' | 'timeline' | 'failovers' | 'restart';

/** The job page's DOM, redrawn section by section as snapshots arrive. */
class JobView {
  readonly element: HTMLElement;
  readonly #header = h('div', {});
  readonly #counters = h('div', {});
  readonly #sections: Record<SectionName, { element: HTMLElement; body: HTMLElement }> = {
    dag: section('dag', 'Job graph'),
    timeline: section('timeline', 'Timeline: regions and attempts per executor'),
    failovers: section('failovers', 'Failovers'),
    restart: section('restart-strategy', 'Restart strategy'),
  };
  readonly #signatures = new Map<string, string>();
  #mode: LiveMode | undefined;
  #detail: JobDetailResponse | undefined;

  constructor(private readonly widthPx: () => number) {
    this.element = h('div', { 'data-job': '' }, this.#header, this.#counters,
      this.#sections.dag.element, this.#sections.timeline.element, this.#sections.failovers.element, this.#sections.restart.element);
  }

  setMode(mode: LiveMode): void {
    this.#mode = mode;
    if (this.#detail) this.#header.replaceChildren(renderHeader(this.#detail, mode));
  }

  update(detail: JobDetailResponse): void {
    this.#detail = detail;
    this.element.setAttribute('data-job', detail.job.jobId);
    this.#header.replaceChildren(renderHeader(detail, this.#mode));
    this.#counters.replaceChildren(renderCounters(detail));
    const nowMs = detail.progress?.elapsedMs ?? detail.job.durationMs;
    const ended = detail.attempts.reduce((n, a) => n + (a.endMs === undefined ? 0 : 1), 0);
    this.#redraw('dag', JSON.stringify([detail.vertices, detail.edges, detail.regions.length]), () => renderDag(detail.vertices, detail.edges, detail.regions));
    this.#redraw('timeline', `${detail.attempts.length}:${ended}:${detail.failovers.length}:${detail.regions.length}:${ended === detail.attempts.length ? 0 : nowMs}`, () =>
      renderTimeline({ attempts: detail.attempts, regions: detail.regions, failovers: detail.failovers, nowMs, widthPx: this.widthPx() }));
    this.#redraw('failovers', String(detail.failovers.length), () => renderFailovers(detail));
    this.#redraw('restart', JSON.stringify(detail.restartStrategy ?? null), () => renderRestartStrategy(detail));
  }

  #redraw(name: SectionName, signature: string, render: () => HTMLElement): void {
    if (this.#signatures.get(name) === signature) return;
    this.#signatures.set(name, signature);
    this.#sections[name].body.replaceChildren(render());
  }
}

export function mountJobPage(ctx: PageContext, jobId: string): Disposer {
  let stopFollowing: Disposer | undefined;
  let disposed = false;
  const view = new JobView(() => ctx.widthPx());
  const load = async (): Promise<void> => {
    const result = await ctx.client.get<JobDetailResponse>(`/api/jobs/${encodeURIComponent(jobId)}`);
    if (disposed || !ctx.current()) return;
    if (!result.ok) {
      ctx.fail(result.failure);
      return;
    }
    view.update(result.value);
    ctx.show(view.element, 'job');
    if (result.value.job.status !== 'running') return;
    stopFollowing = followJob({
      client: ctx.client,
      jobId,
      onSnapshot: (detail) => {
        if (!disposed) view.update(detail);
      },
      onFailure: (failure) => {
        if (!disposed) ctx.fail(failure);
      },
      onMode: (mode) => {
        if (!disposed) view.setMode(mode);
      },
    });
  };
  void load();
  return () => {
    disposed = true;
    stopFollowing?.();
  };
}
