// A small stand-in for the UI server, for the app's browser tests and the render benchmark: serves the app
// (bundled in memory from app/src by app/build.mjs) at `/` and `/app/main.js`, canned JSON at the routes of
// src/api/ui-api.ts, and a server-sent-events stream whose snapshots the test pushes. With `token` set it
// answers 401 to API calls without `Authorization: Bearer <token>` (a stream: without `?token=`).
// `/blank` is an empty page (the benchmark's baseline).
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { bundleApp } from '../../app/build.mjs';
import { type ApiError, type ClusterResponse, type JobListResponse, UI_API_VERSION } from '../../src/index.js';

export interface StaticUiServerOptions {
  readonly jobs: JobListResponse;
  /** Each job's answer to `GET /api/jobs/:id` (any JSON: a test may serve another version). */
  readonly details: ReadonlyMap<string, unknown>;
  readonly cluster: ClusterResponse;
  readonly token?: string;
  /** Answer the stream route 404, so the app must poll. @defaultValue false */
  readonly noStream?: boolean;
  /** @defaultValue '127.0.0.1' */
  readonly host?: string;
}

export interface RecordedRequest {
  readonly path: string;
  readonly authorization: string | undefined;
}

export interface StaticUiServer extends AsyncDisposable {
  readonly url: string;
  readonly requests: readonly RecordedRequest[];
  /** Replaces a job's detail and sends it to that job's open streams as `event: job`. */
  publish(jobId: string, detail: unknown): void;
  /** Replaces a job's detail (what `GET /api/jobs/:id` answers) without telling its streams. */
  setDetail(jobId: string, detail: unknown): void;
  /** Sends `event: end` to that job's streams and closes them. */
  end(jobId: string): void;
  /** Resolves once at least `count` streams of `jobId` are open; rejects after `timeoutMs` (default 20 s). */
  waitForStreams(jobId: string, count?: number, timeoutMs?: number): Promise<void>;
  close(): Promise<void>;
}

function apiError(res: ServerResponse, status: number, code: string, message: string): void {
  const body: ApiError = { version: UI_API_VERSION, error: { code, message } };
  res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
}

export async function startStaticUiServer(options: StaticUiServerOptions): Promise<StaticUiServer> {
  const files = await bundleApp({ minify: false });
  const details = new Map(options.details);
  const streams = new Map<string, Set<ServerResponse>>();
  const waiters: (() => void)[] = [];
  const requests: RecordedRequest[] = [];

  const handle = (req: IncomingMessage, res: ServerResponse): void => {
    const url = new URL(req.url ?? '/', 'http://x');
    const path = url.pathname;
    requests.push({ path: req.url ?? '/', authorization: req.headers.authorization });
    if (path === '/' || path === '/index.html') return void res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' }).end(files['index.html']);
    if (path === '/app/main.js') return void res.writeHead(200, { 'content-type': 'text/javascript; charset=utf-8' }).end(files['main.js']);
    if (path === '/blank') return void res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' }).end('<!doctype html><html><head><title>blank</title></head><body></body></html>');
    if (!path.startsWith('/api/')) return apiError(res, 404, 'WEFT_UI_ERR_NOT_FOUND', `no route ${path}`);
    const stream = /^\/api\/jobs\/([^/]+)\/stream$/.exec(path);
    if (options.token !== undefined) {
      const given = stream ? url.searchParams.get('token') : req.headers.authorization?.replace(/^Bearer /, '');
      if (given !== options.token) return apiError(res, 401, 'WEFT_UI_ERR_UNAUTHORIZED', 'this UI needs its token');
    }
    if (path === '/api/jobs') return void res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(options.jobs));
    if (path === '/api/cluster') return void res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(options.cluster));
    if (stream) {
      const jobId = decodeURIComponent(stream[1] as string);
      if (options.noStream || !details.has(jobId)) return apiError(res, 404, 'WEFT_UI_ERR_UNKNOWN_JOB', `no job ${jobId}`);
      res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache', connection: 'keep-alive' });
      res.write(': open\n\n');
      let set = streams.get(jobId);
      if (!set) streams.set(jobId, (set = new Set()));
      set.add(res);
      res.on('close', () => set.delete(res));
      for (const waiter of waiters.splice(0)) waiter();
      return;
    }
    const job = /^\/api\/jobs\/([^/]+)$/.exec(path);
    if (job) {
      const jobId = decodeURIComponent(job[1] as string);
      const detail = details.get(jobId);
      if (detail === undefined) return apiError(res, 404, 'WEFT_UI_ERR_UNKNOWN_JOB', `no job ${jobId} in the log`);
      return void res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(detail));
    }
    apiError(res, 404, 'WEFT_UI_ERR_NOT_FOUND', `no route ${path}`);
  };

  const server = createServer(handle);
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, options.host ?? '127.0.0.1', () => resolve());
  });
  const { address, port } = server.address() as AddressInfo;
  let closed: Promise<void> | undefined;
  const close = (): Promise<void> =>
    (closed ??= new Promise<void>((resolve) => {
      for (const set of streams.values()) for (const res of set) res.destroy();
      server.closeAllConnections();
      server.close(() => resolve());
    }));
  return {
    url: `http://${address}:${port}`,
    requests,
    publish(jobId, detail) {
      details.set(jobId, detail);
      for (const res of streams.get(jobId) ?? []) res.write(`event: job\ndata: ${JSON.stringify(detail)}\n\n`);
    },
    setDetail(jobId, detail) {
      details.set(jobId, detail);
    },
    end(jobId) {
      for (const res of streams.get(jobId) ?? []) res.end('event: end\ndata: {}\n\n');
      streams.delete(jobId);
    },
    async waitForStreams(jobId, count = 1, timeoutMs = 20_000) {
      const deadline = Date.now() + timeoutMs;
      while ((streams.get(jobId)?.size ?? 0) < count) {
        const left = deadline - Date.now();
        if (left <= 0) throw new Error(`no ${count} open stream(s) of job ${jobId} after ${timeoutMs} ms: the page did not open /api/jobs/${jobId}/stream`);
        await new Promise<void>((resolve) => {
          const timer = setTimeout(resolve, left);
          waiters.push(() => {
            clearTimeout(timer);
            resolve();
          });
        });
      }
    },
    close,
    [Symbol.asyncDispose]: close,
  };
}
