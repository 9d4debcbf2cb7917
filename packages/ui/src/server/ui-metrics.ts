import type { MetricFamily } from './prometheus-text.js';
import type { UiLiveJob } from './ui-server-options.js';

/**
 * The UI server's own counters, cheap to bump (a request, an event sent), read when `/metrics` is scraped,
 * and the job master's progress (`weft run --ui`) as Prometheus families.
 */
export class UiMetrics {
  readonly #requests = new Map<string, number>();
  sseClients = 0;
  sseEvents = 0;

  request(route: string, status: number): void {
    const key = `${route} ${status}`;
    this.#requests.set(key, (this.#requests.get(key) ?? 0) + 1);
  }

  families(): MetricFamily[] {
    const requests = [...this.#requests].map(([key, value]) => {
      const [route, status] = key.split(' ') as [string, string];
      return { labels: { route, status }, value };
    });
    return [
      { name: 'weft_ui_http_requests_total', help: 'HTTP requests the UI server answered, by route and status', type: 'counter', samples: requests },
      { name: 'weft_ui_sse_clients', help: 'Event streams (GET /api/jobs/:id/stream) open now', type: 'gauge', samples: [{ value: this.sseClients }] },
      { name: 'weft_ui_sse_events_total', help: 'Job events sent on event streams', type: 'counter', samples: [{ value: this.sseEvents }] },
    ];
  }

  /** The job master's progress of the job this process runs (none when there is none). */
  static jobFamilies(job: UiLiveJob | undefined): MetricFamily[] {
    if (job === undefined) return [];
    const labels = { job_id: job.jobId };
    const p = job.progress;
    const family = (name: string, help: string, type: 'counter' | 'gauge', value: number): MetricFamily => ({ name, help, type, samples: [{ labels, value }] });
    return [
      family('weft_job_elapsed_seconds', 'Time since the job master started the job', 'gauge', p.elapsedMs / 1000),
      family('weft_job_tasks', 'Tasks (execution vertices) of the job', 'gauge', p.tasksTotal),
      family('weft_job_tasks_finished', 'Tasks finished', 'gauge', p.tasksFinished),
      family('weft_job_tasks_running', 'Tasks running now', 'gauge', p.tasksRunning),
      family('weft_job_regions', 'Pipelined regions of the job', 'gauge', p.regionsTotal),
      family('weft_job_regions_finished', 'Pipelined regions finished', 'gauge', p.regionsFinished),
      family('weft_job_records_read_total', 'Records read by sources (finished and running attempts)', 'counter', p.recordsRead),
      family('weft_job_records_shuffled_total', 'Records written to exchanges', 'counter', p.recordsShuffled),
      family('weft_job_bytes_shuffled_total', 'Framed bytes written to exchanges', 'counter', p.bytesShuffled),
      family('weft_job_task_failures_total', 'Task attempts that failed', 'counter', p.failures),
    ];
  }
}
