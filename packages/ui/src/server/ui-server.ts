import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { JobRunRecord } from '@weft/engine';
import { closedError } from '@weft/shuffle-api';
import { type ClusterResponse, type JobListResponse, UI_API_VERSION } from '../api/ui-api.js';
import { formatPrometheusText, PROMETHEUS_CONTENT_TYPE } from './prometheus-text.js';
import { apiError, UI_API_ERRORS, type UiApiErrorCode } from './ui-api-errors.js';
import { type JobViewSource, toJobDetail, toJobListItem } from './job-view.js';
import { UiMetrics } from './ui-metrics.js';
import { type ResolvedUiServerOptions, resolveUiServerOptions, type UiServerOptions } from './ui-server-options.js';
import { hostHeaderIsLoopback, requestToken, tokenMatches } from './ui-token.js';

/** A running UI server. */
export interface UiServer extends AsyncDisposable {
  /** `http://host:port` (IPv6 hosts in brackets), without the token. */
  readonly url: string;
  /**
   * Sends every event stream its job once more (with `event: end` when it ended meanwhile — `weft run --ui`
   * closes right after the job's last event), ends them, stops listening and closes every connection.
   * Graceful, idempotent, memoized.
   */
  close(): Promise<void>;
}

/** A request the UI refuses, with its ApiError code. */
class UiRequestError extends Error {
  constructor(
    readonly code: UiApiErrorCode,
    message: string,
  ) {
    super(message);
  }
}

const TERMINAL = new Set(['succeeded', 'failed', 'cancelled', 'unreadable']);
const JOB_ROUTE = /^\/api\/jobs\/([^/]+)(\/stream)?$/;

/** A path segment percent-decoded; undefined when its encoding is malformed (`%E0%A4%A`: no job or file has that name). */
function decodeSegment(segment: string): string | undefined {
  try {
    return decodeURIComponent(segment);
  } catch {
    return undefined;
  }
}

/**
 * Starts the UI server (node:http, no framework): the single-page app, the JSON API of ui-api.ts derived
 * from the job event log on every request (nothing cached: the log is the truth), server-sent events for
 * one job, `/metrics`. Read-only: only GET and HEAD. With a token, every `/api/*` and `/metrics` request
 * must carry it (`Authorization: Bearer` or `?token=`; compared in constant time), else 401; the app's own
 * files (`/`, `/app/*`) hold no job data and are served without it. Resolves once it listens.
 * WEFT_ERR_INVALID_ARGUMENT for bad options (a non-loopback host without a token among them).
 */
export async function startUiServer(options: UiServerOptions): Promise<UiServer> {
  const resolved = resolveUiServerOptions(options);
  const server = new HttpUiServer(resolved);
  await server.listen();
  return server;
}

class HttpUiServer implements UiServer {
  readonly #options: ResolvedUiServerOptions;
  readonly #server: Server;
  readonly #metrics = new UiMetrics();
  /** Each open event stream's last word: one more read of its job (its end, when it ended), then the stream closes. */
  readonly #streams = new Set<() => Promise<void>>();
  #url = '';
  #closed: Promise<void> | undefined;

  constructor(options: ResolvedUiServerOptions) {
    this.#options = options;
    this.#server = createServer((req, res) => void this.#handle(req, res));
  }

  get url(): string {
    return this.#url;
  }

  async listen(): Promise<void> {
    const { host, port } = this.#options;
    await new Promise<void>((resolve, reject) => {
      this.#server.once('error', reject);
      this.#server.listen(port, host, () => {
        this.#server.off('error', reject);
        resolve();
      });
    });
    const address = this.#server.address() as AddressInfo;
    const shown = address.family === 'IPv6' ? `[${address.address}]` : address.address;
    this.#url = `http://${shown}:${address.port}`;
    this.#options.logger.info({ url: this.#url }, `ui server: stopped -> listening on ${this.#url}`);
  }

  close(): Promise<void> {
    return (this.#closed ??= (async () => {
      await Promise.allSettled([...this.#streams].map((last) => last()));
      await new Promise<void>((resolve) => {
        this.#server.close(() => resolve());
        this.#server.closeAllConnections();
      });
      this.#options.logger.info({ url: this.#url }, 'ui server: listening -> closed');
    })());
  }

  [Symbol.asyncDispose](): Promise<void> {
    return this.close();
  }

  async #handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? '/', 'http://ui.invalid');
    let route = 'index';
    // 'close', not 'finish': an event stream the client went away from never finishes, and is a request too
    res.once('close', () => this.#metrics.request(route, res.statusCode));
    try {
      if (req.method !== 'GET' && req.method !== 'HEAD') {
        route = 'other';
        res.setHeader('allow', 'GET, HEAD');
        throw new UiRequestError('WEFT_UI_ERR_METHOD_NOT_ALLOWED', `${req.method ?? '?'} is not allowed: the UI is read-only`);
      }
      const path = url.pathname;
      if (path === '/metrics' || path.startsWith('/api/') || path === '/api') {
        route = path === '/metrics' ? 'metrics' : 'api';
        this.#authorize(req, url);
      }
      if (path === '/metrics') return this.#send(res, 200, PROMETHEUS_CONTENT_TYPE, this.#metricsText());
      if (path === '/api/jobs') {
        route = 'jobs';
        return this.#json(res, 200, await this.#jobList());
      }
      const job = JOB_ROUTE.exec(path);
      if (job !== null) {
        route = job[2] === undefined ? 'job' : 'stream';
        const jobId = decodeSegment(job[1] as string);
        if (jobId === undefined) throw new UiRequestError('WEFT_UI_ERR_UNKNOWN_JOB', `no job ${JSON.stringify(job[1])} in the event log ${this.#options.eventLog.description}: its percent-encoding is malformed`);
        if (job[2] === undefined) return this.#json(res, 200, toJobDetail(await this.#jobSource(jobId)));
        return await this.#stream(res, jobId);
      }
      if (path === '/api/cluster') {
        route = 'cluster';
        return this.#json(res, 200, await this.#cluster());
      }
      if (path === '/api' || path.startsWith('/api/')) throw new UiRequestError('WEFT_UI_ERR_NOT_FOUND', `no API route ${path}; see GET /api/jobs, /api/jobs/:jobId, /api/jobs/:jobId/stream, /api/cluster`);
      if (path.startsWith('/app/')) {
        route = 'app';
        const name = decodeSegment(path.slice('/app/'.length));
        const asset = name === undefined ? undefined : await this.#options.appAssets.asset(name);
        if (asset === undefined) return this.#send(res, 404, 'text/plain; charset=utf-8', `no such file ${path}\n`);
        return this.#send(res, 200, asset.contentType, asset.body);
      }
      // every other path is a client-side route of the app (it shows its own 404 for an unknown job)
      const index = await this.#options.appAssets.index();
      return this.#send(res, 200, index.contentType, index.body);
    } catch (error) {
      this.#fail(res, error);
    }
  }

  #authorize(req: IncomingMessage, url: URL): void {
    const token = this.#options.token;
    if (token === undefined) {
      if (hostHeaderIsLoopback(req)) return;
      throw new UiRequestError('WEFT_UI_ERR_HOST_NOT_ALLOWED', `this UI has no token, so it answers only requests to a loopback host (127.x, ::1, localhost), not Host: ${req.headers.host ?? ''}; open it at 127.0.0.1, or start it with a token`);
    }
    if (tokenMatches(token, requestToken(req, url))) return;
    throw new UiRequestError('WEFT_UI_ERR_UNAUTHORIZED', 'a valid UI token is required (Authorization: Bearer <token>, or ?token=<token>)');
  }

  #fail(res: ServerResponse, error: unknown): void {
    let code: UiApiErrorCode = 'WEFT_UI_ERR_INTERNAL';
    let message = error instanceof Error ? error.message : String(error);
    if (error instanceof UiRequestError) code = error.code;
    else if (/^(WEFT_ERR_EVENT_LOG|SHF_ERR_)/.test(String((error as { code?: unknown } | null)?.code ?? ''))) code = 'WEFT_UI_ERR_EVENT_LOG';
    else this.#options.logger.error({ error: (error as Error)?.stack ?? message }, 'ui server: a request failed');
    if (code === 'WEFT_UI_ERR_INTERNAL') message = `internal error: ${message}`;
    if (res.headersSent) {
      res.destroy();
      return;
    }
    if (code === 'WEFT_UI_ERR_UNAUTHORIZED') res.setHeader('www-authenticate', 'Bearer realm="weft-ui"');
    this.#json(res, UI_API_ERRORS[code].status, apiError(code, message));
  }

  #json(res: ServerResponse, status: number, body: unknown): void {
    this.#send(res, status, 'application/json; charset=utf-8', JSON.stringify(body));
  }

  #send(res: ServerResponse, status: number, contentType: string, body: string | Buffer): void {
    res.writeHead(status, { 'content-type': contentType, 'content-length': Buffer.byteLength(body), 'cache-control': 'no-store' });
    res.end(res.req.method === 'HEAD' ? undefined : body);
  }

  async #source(run: JobRunRecord): Promise<JobViewSource> {
    const { eventLog, clock } = this.#options;
    let events: JobViewSource['events'];
    try {
      events = await eventLog.readRun(run.jobId);
    } catch (error) {
      if ((error as { code?: unknown } | null)?.code !== 'WEFT_ERR_EVENT_LOG') throw error;
      events = error as Error; // a newer format, corruption: the job shows as unreadable with the reason
    }
    const progress = run.status === 'unfinished' && eventLog.readProgress !== undefined ? await eventLog.readProgress(run.jobId) : undefined;
    return { run, events, progress, nowMs: clock() };
  }

  async #jobSource(jobId: string): Promise<JobViewSource> {
    const log = this.#options.eventLog;
    const run = log.readRunRecord !== undefined ? await log.readRunRecord(jobId) : (await log.listRuns()).find((r) => r.jobId === jobId);
    if (run === undefined) throw new UiRequestError('WEFT_UI_ERR_UNKNOWN_JOB', `no job ${JSON.stringify(jobId)} in the event log ${this.#options.eventLog.description}`);
    return this.#source(run);
  }

  async #jobList(): Promise<JobListResponse> {
    const runs = await this.#options.eventLog.listRuns();
    const jobs = [];
    // newest first, as a person looks for the job they just started
    for (const run of [...runs].reverse()) jobs.push(toJobListItem(await this.#source(run)));
    return { version: UI_API_VERSION, jobs };
  }

  async #cluster(): Promise<ClusterResponse> {
    const list = this.#options.cluster;
    if (list === undefined) return { version: UI_API_VERSION, available: false, executors: [], shuffleServers: [] };
    let snapshot;
    try {
      snapshot = await list();
    } catch (error) {
      throw new UiRequestError('WEFT_UI_ERR_EVENT_LOG', `the cluster registry could not be read: ${(error as Error).message}`);
    }
    return { version: UI_API_VERSION, available: true, executors: snapshot.executors, shuffleServers: snapshot.shuffleServers };
  }

  /**
   * `event: job` with the job's JSON now and each time it changed (polled every streamIntervalMs), then
   * `event: end` once the job ended, and the stream closes. A 404 (before any event) for an unknown job.
   */
  async #stream(res: ServerResponse, jobId: string): Promise<void> {
    if (this.#closed !== undefined) throw closedError('ui server');
    let detail = toJobDetail(await this.#jobSource(jobId));
    res.writeHead(200, { 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-store', connection: 'keep-alive', 'x-accel-buffering': 'no' });
    res.flushHeaders();
    let last = '';
    let timer: ReturnType<typeof setTimeout> | undefined;
    let ended = false;
    const end = (): void => {
      if (ended) return;
      ended = true;
      if (timer !== undefined) clearTimeout(timer);
      this.#streams.delete(finalWord);
      this.#metrics.sseClients--;
      res.end();
    };
    const finalWord = async (): Promise<void> => {
      if (ended) return;
      if (timer !== undefined) clearTimeout(timer);
      try {
        detail = toJobDetail(await this.#jobSource(jobId));
        if (!ended) send(false);
      } catch {
        // the log is gone too: the stream just ends
      }
      end();
    };
    this.#streams.add(finalWord);
    this.#metrics.sseClients++;
    res.once('close', end); // the client went away (or the response ended)
    const send = (again = true): void => {
      const json = JSON.stringify(detail);
      if (json !== last) {
        res.write(`event: job\ndata: ${json}\n\n`);
        this.#metrics.sseEvents++;
        last = json;
      }
      if (TERMINAL.has(detail.job.status)) {
        res.write('event: end\ndata: {}\n\n');
        end();
      } else if (again) timer = setTimeout(tick, this.#options.streamIntervalMs);
    };
    const tick = (): void => {
      timer = undefined;
      this.#jobSource(jobId).then(
        (source) => {
          if (ended) return;
          detail = toJobDetail(source);
          send();
        },
        (error: unknown) => {
          if (ended) return;
          // a store hiccup: say so on the stream and try again next tick
          res.write(`event: problem\ndata: ${JSON.stringify({ message: (error as Error).message })}\n\n`);
          timer = setTimeout(tick, this.#options.streamIntervalMs);
        },
      );
    };
    send();
  }

  #metricsText(): string {
    return formatPrometheusText([...this.#metrics.families(), ...UiMetrics.jobFamilies(this.#options.liveJob?.())]);
  }
}
