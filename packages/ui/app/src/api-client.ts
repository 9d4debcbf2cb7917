// The app's one way to the UI server's JSON API (`src/api/ui-api.ts`). Every call carries the page's token
// (`?token=…` in the page URL) as `Authorization: Bearer`, the stream URL carries it as a query parameter
// (EventSource cannot set headers). Every answer's `version` is checked: another version is a failure of its
// own kind, so the page can say which format it cannot read instead of drawing garbage.
import { UI_API_VERSION } from '../../src/api/ui-api.js';

export type ApiFailure =
  | { readonly kind: 'not-found'; readonly code: string; readonly message: string }
  | { readonly kind: 'version'; readonly version: unknown; readonly message: string }
  | { readonly kind: 'http'; readonly status: number; readonly code: string | undefined; readonly message: string }
  | { readonly kind: 'network'; readonly message: string };

export type ApiResult<T> = { readonly ok: true; readonly value: T } | { readonly ok: false; readonly failure: ApiFailure };

/** Undefined when `body` is of the version this app reads; else the failure to show. */
export function checkApiVersion(body: unknown): ApiFailure | undefined {
  const version = typeof body === 'object' && body !== null ? (body as { version?: unknown }).version : undefined;
  if (version === UI_API_VERSION) return undefined;
  const shown = typeof version === 'number' || typeof version === 'string' ? String(version) : 'unknown';
  return {
    kind: 'version',
    version,
    message: `log/UI format version ${shown} not supported: this UI reads version ${UI_API_VERSION} (upgrade the UI, or open the job with the weft that wrote it)`,
  };
}

function errorOf(body: unknown): { code: string | undefined; message: string | undefined } {
  const error = typeof body === 'object' && body !== null ? (body as { error?: unknown }).error : undefined;
  if (typeof error !== 'object' || error === null) return { code: undefined, message: undefined };
  const { code, message } = error as { code?: unknown; message?: unknown };
  return { code: typeof code === 'string' ? code : undefined, message: typeof message === 'string' ? message : undefined };
}

/** The token of the page URL (`?token=…`), if any. */
export function tokenFromSearch(search: string): string | undefined {
  const token = new URLSearchParams(search).get('token');
  return token === null || token === '' ? undefined : token;
}

export class ApiClient {
  readonly #token: string | undefined;

  constructor(token: string | undefined) {
    this.#token = token;
  }

  async get<T>(path: string, signal?: AbortSignal): Promise<ApiResult<T>> {
    let response: Response;
    let body: unknown;
    try {
      const headers: Record<string, string> = { accept: 'application/json' };
      if (this.#token !== undefined) headers['authorization'] = `Bearer ${this.#token}`;
      response = await fetch(path, { headers, signal: signal ?? null });
      const text = await response.text();
      try {
        body = JSON.parse(text) as unknown;
      } catch {
        return { ok: false, failure: { kind: 'http', status: response.status, code: undefined, message: `${path} answered ${response.status} with no JSON` } };
      }
    } catch (err) {
      return { ok: false, failure: { kind: 'network', message: `${path}: ${err instanceof Error ? err.message : String(err)}` } };
    }
    const versionFailure = checkApiVersion(body);
    if (versionFailure) return { ok: false, failure: versionFailure };
    if (!response.ok) {
      const { code, message } = errorOf(body);
      const text = message ?? `${path} answered ${response.status}`;
      if (response.status === 404) return { ok: false, failure: { kind: 'not-found', code: code ?? 'HTTP_404', message: text } };
      return { ok: false, failure: { kind: 'http', status: response.status, code, message: text } };
    }
    return { ok: true, value: body as T };
  }

  /** The URL of a server-sent-events route, with the token as a query parameter. */
  streamUrl(path: string): string {
    if (this.#token === undefined) return path;
    return `${path}${path.includes('?') ? '&' : '?'}token=${encodeURIComponent(this.#token)}`;
  }
}
