// Follows a running job: server-sent events on `/api/jobs/:id/stream` (`event: job` with a JobDetailResponse,
// `event: end` once it ended), and polling `/api/jobs/:id` when EventSource is missing or the stream cannot be
// opened (the server refused it, or it failed again and again before a first snapshot). Stops once the job ended.
import type { JobDetailResponse } from '../../src/api/ui-api.js';
import { type ApiClient, type ApiFailure, checkApiVersion } from './api-client.js';
import type { Disposer } from './page-context.js';

export type LiveMode = 'stream' | 'polling' | 'ended';

export interface FollowJobRequest {
  readonly client: ApiClient;
  readonly jobId: string;
  readonly onSnapshot: (detail: JobDetailResponse) => void;
  readonly onFailure: (failure: ApiFailure) => void;
  readonly onMode: (mode: LiveMode) => void;
  /** @defaultValue 2000 */
  readonly pollIntervalMs?: number;
}

/** Stream errors before a first snapshot after which the app polls instead. */
const STREAM_ATTEMPTS = 3;

export function followJob(request: FollowJobRequest): Disposer {
  const { client, jobId, onSnapshot, onFailure, onMode } = request;
  const pollIntervalMs = request.pollIntervalMs ?? 2000;
  const path = `/api/jobs/${encodeURIComponent(jobId)}`;
  let disposed = false;
  let source: EventSource | undefined;
  let timer: ReturnType<typeof setTimeout> | undefined;
  let abort: AbortController | undefined;

  const stop = (): void => {
    source?.close();
    source = undefined;
    if (timer !== undefined) clearTimeout(timer);
    timer = undefined;
    abort?.abort();
  };
  const fetchOnce = async (): Promise<JobDetailResponse | undefined> => {
    abort = new AbortController();
    const result = await client.get<JobDetailResponse>(path, abort.signal);
    if (disposed) return undefined;
    if (!result.ok) {
      onFailure(result.failure);
      return undefined;
    }
    onSnapshot(result.value);
    return result.value;
  };
  const ended = (): void => {
    stop();
    onMode('ended');
  };
  const poll = (): void => {
    onMode('polling');
    const tick = async (): Promise<void> => {
      const detail = await fetchOnce();
      if (disposed || detail === undefined) return;
      if (detail.job.status !== 'running') ended();
      else timer = setTimeout(() => void tick(), pollIntervalMs);
    };
    timer = setTimeout(() => void tick(), pollIntervalMs);
  };

  if (typeof EventSource === 'undefined') {
    poll();
  } else {
    let snapshots = 0;
    let errors = 0;
    source = new EventSource(client.streamUrl(`${path}/stream`));
    onMode('stream');
    source.addEventListener('job', (event) => {
      let body: unknown;
      try {
        body = JSON.parse((event as MessageEvent<string>).data);
      } catch {
        return;
      }
      const failure = checkApiVersion(body);
      if (failure) {
        stop();
        onFailure(failure);
        return;
      }
      snapshots++;
      onSnapshot(body as JobDetailResponse);
    });
    source.addEventListener('end', () => {
      // The last snapshot may have been sent before the job's final state was logged: read it once more.
      ended();
      void fetchOnce();
    });
    source.addEventListener('error', () => {
      if (disposed || source === undefined) return;
      errors++;
      if (source.readyState === EventSource.CLOSED || (snapshots === 0 && errors >= STREAM_ATTEMPTS)) {
        source.close();
        source = undefined;
        poll();
      }
    });
  }
  return () => {
    disposed = true;
    stop();
  };
}
