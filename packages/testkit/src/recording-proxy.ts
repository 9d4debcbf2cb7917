import { Agent, type Server, createServer, request } from 'node:http';
import { pipeline } from 'node:stream/promises';

/** One request the proxy forwarded: its method, path and query, and the upstream's status once it answered. */
export interface RecordedRequest {
  readonly method: string;
  readonly path: string;
  readonly query: URLSearchParams;
  /** Set when the upstream's response headers arrived (for S3: the request was received and done). */
  status: number | undefined;
}

export interface RecordingProxy extends AsyncDisposable {
  /** `http://127.0.0.1:<port>`: use it as the endpoint instead of the upstream's. */
  readonly url: string;
  /** Every request forwarded so far, in arrival order. */
  readonly requests: readonly RecordedRequest[];
  close(): Promise<void>;
}

export interface RecordingProxyOptions {
  /**
   * Requests the proxy answers itself with 403 AccessDenied instead of forwarding (recorded with that
   * status): a refused S3 call, for fault tests, with the real server behind every other one.
   */
  readonly refuse?: (method: string, url: URL) => boolean;
}

/**
 * An HTTP proxy in front of a real server (s3rver) that records each request it forwards, so a test can
 * see which S3 calls were made, and when, against the real thing. Headers pass unchanged (the Host is the
 * proxy's, as the client signed it).
 */
export async function startRecordingProxy(upstream: string, options: RecordingProxyOptions = {}): Promise<RecordingProxy> {
  const target = new URL(upstream);
  const agent = new Agent({ keepAlive: false });
  const requests: RecordedRequest[] = [];
  const server: Server = createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://proxy');
    const entry: RecordedRequest = { method: req.method ?? '', path: url.pathname, query: url.searchParams, status: undefined };
    requests.push(entry);
    if (options.refuse?.(entry.method, url) === true) {
      entry.status = 403;
      req.resume();
      res.writeHead(403, { 'content-type': 'application/xml' });
      res.end('<?xml version="1.0" encoding="UTF-8"?><Error><Code>AccessDenied</Code><Message>refused by the test proxy</Message></Error>');
      return;
    }
    const forwarded = request({ agent, host: target.hostname, port: target.port, method: req.method, path: req.url, headers: req.headers }, (answer) => {
      entry.status = answer.statusCode;
      res.writeHead(answer.statusCode ?? 502, answer.headers);
      pipeline(answer, res).catch(() => res.destroy());
    });
    forwarded.on('error', () => res.destroy());
    pipeline(req, forwarded).catch(() => res.destroy());
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  const port = typeof address === 'object' && address !== null ? address.port : 0;
  const close = async (): Promise<void> => {
    server.closeAllConnections();
    agent.destroy();
    await new Promise((resolve) => server.close(resolve));
  };
  return { url: `http://127.0.0.1:${port}`, requests, close, [Symbol.asyncDispose]: close };
}

/** What S3 call a recorded request is (by method and query, as the S3 REST API tells them apart). */
export function s3Call(r: RecordedRequest): 'CreateMultipartUpload' | 'UploadPart' | 'CompleteMultipartUpload' | 'AbortMultipartUpload' | 'PutObject' | 'other' {
  if (r.method === 'POST' && r.query.has('uploads')) return 'CreateMultipartUpload';
  if (r.method === 'PUT' && r.query.has('partNumber') && r.query.has('uploadId')) return 'UploadPart';
  if (r.method === 'POST' && r.query.has('uploadId')) return 'CompleteMultipartUpload';
  if (r.method === 'DELETE' && r.query.has('uploadId')) return 'AbortMultipartUpload';
  if (r.method === 'PUT' && !r.query.has('partNumber')) return 'PutObject';
  return 'other';
}
