import { validateId } from '@weft/shuffle-api';
import { WireError, wireError } from './wire-errors.js';

/** The version prefix of every data route. A future incompatible API gets a new prefix. */
export const API_PREFIX = '/v1';

const MAX_ATTEMPT = 2 ** 31 - 1;
const MAX_URL_CHARS = 8192;
/** Header of a push that commits too: the commit request body as base64url JSON. */
export const COMMIT_HEADER = 'x-weft-commit';
/** Longest `x-weft-commit` header a server reads (a client sends a separate commit beyond it). */
export const MAX_COMMIT_HEADER_CHARS = 8192;
/** Longest producer lease a server grants. */
export const MAX_LEASE_MS = 600_000;

function seg(id: string): string {
  return encodeURIComponent(id);
}

function partitionBase(jobId: string, partitionId: string): string {
  return `${API_PREFIX}/jobs/${seg(jobId)}/partitions/${seg(partitionId)}`;
}

/** PUT: push an attempt's data object. */
export function pushPath(jobId: string, partitionId: string, attempt: number): string {
  return `${partitionBase(jobId, partitionId)}/attempts/${attempt}/data`;
}

/** POST: commit an attempt. */
export function commitPath(jobId: string, partitionId: string, attempt: number): string {
  return `${partitionBase(jobId, partitionId)}/attempts/${attempt}/commit`;
}

/** POST: take or renew a producer's lease on an attempt (readers wait for a leased partition). */
export function leasePath(jobId: string, partitionId: string, attempt: number, ttlMs: number): string {
  return `${partitionBase(jobId, partitionId)}/attempts/${attempt}/lease?ttlMs=${ttlMs}`;
}

/** DELETE: drop an uncommitted attempt's data (and its lease). */
export function attemptPath(jobId: string, partitionId: string, attempt: number): string {
  return `${partitionBase(jobId, partitionId)}/attempts/${attempt}`;
}

/** GET: subpartitions [start, end] of the committed attempt, as a stream. */
export function fetchPath(jobId: string, partitionId: string, start: number, end: number): string {
  return `${partitionBase(jobId, partitionId)}/data?start=${start}&end=${end}`;
}

/** DELETE: release a partition (all its attempts); `epoch`: the releasing master's, refused once a newer one registered the job. */
export function partitionPath(jobId: string, partitionId: string, epoch?: number): string {
  return `${partitionBase(jobId, partitionId)}${epoch === undefined ? '' : `?epoch=${epoch}`}`;
}

/** GET: the committed partitions of a job, with sizes. */
export function jobPartitionsPath(jobId: string): string {
  return `${API_PREFIX}/jobs/${seg(jobId)}/partitions`;
}

/** DELETE: release every partition of a job (BLOCKING_PERSISTENT ones too unless `keepPersistent`). */
export function jobPath(jobId: string, keepPersistent: boolean, epoch?: number): string {
  return `${API_PREFIX}/jobs/${seg(jobId)}?keepPersistent=${keepPersistent}${epoch === undefined ? '' : `&epoch=${epoch}`}`;
}

export type Route =
  | { readonly kind: 'healthz' }
  | { readonly kind: 'metrics' }
  | { readonly kind: 'push'; readonly jobId: string; readonly partitionId: string; readonly attempt: number }
  | { readonly kind: 'commit'; readonly jobId: string; readonly partitionId: string; readonly attempt: number }
  | { readonly kind: 'abort'; readonly jobId: string; readonly partitionId: string; readonly attempt: number }
  | { readonly kind: 'lease'; readonly jobId: string; readonly partitionId: string; readonly attempt: number; readonly ttlMs: number }
  | { readonly kind: 'fetch'; readonly jobId: string; readonly partitionId: string; readonly start: number; readonly end: number }
  | { readonly kind: 'release'; readonly jobId: string; readonly partitionId: string; readonly epoch: number | undefined }
  | { readonly kind: 'list'; readonly jobId: string }
  | { readonly kind: 'release-job'; readonly jobId: string; readonly keepPersistent: boolean; readonly epoch: number | undefined };

/** The job a route is about, for authentication; undefined for the open routes. */
export function routeJobId(route: Route): string | undefined {
  return 'jobId' in route ? route.jobId : undefined;
}

function decodeSegment(field: string, raw: string): string {
  let value: string;
  try {
    value = decodeURIComponent(raw);
  } catch {
    throw wireError(WireError.BAD_REQUEST, `invalid ${field}: malformed percent-encoding`, { field });
  }
  return validateId(field, value);
}

function parseAttempt(raw: string): number {
  if (!/^\d{1,10}$/.test(raw) || Number(raw) > MAX_ATTEMPT) {
    throw wireError(WireError.BAD_REQUEST, `invalid attempt: expected an integer in [0, ${MAX_ATTEMPT}]`, { field: 'attempt' });
  }
  return Number(raw);
}

function parseIndex(field: string, raw: string | null): number {
  if (raw === null || !/^\d{1,10}$/.test(raw) || Number(raw) > MAX_ATTEMPT) {
    throw wireError(WireError.BAD_REQUEST, `invalid ${field}: expected a non-negative integer`, { field });
  }
  return Number(raw);
}

/** `?epoch=` of a release: a job master epoch (plain decimal, at most 15 digits), undefined when absent. */
function parseEpoch(raw: string | null): number | undefined {
  if (raw === null) return undefined;
  if (!/^\d{1,15}$/.test(raw)) throw wireError(WireError.BAD_REQUEST, 'invalid epoch: expected a non-negative integer', { field: 'epoch' });
  return Number(raw);
}

function methodNotAllowed(method: string, path: string, allowed: string): never {
  throw wireError(WireError.METHOD_NOT_ALLOWED, `${method} is not allowed on ${path}; use ${allowed}`);
}

/**
 * Parses a request line into a Route. Ids are percent-decoded one path segment at a time and checked
 * with `validateId` (so `..`, `/`, `\` and control characters are refused, encoded or not); numbers must
 * be plain decimal integers in range. Throws a wire error (400, 404, 405) otherwise.
 */
export function parseRoute(method: string, rawUrl: string): Route {
  if (rawUrl.length > MAX_URL_CHARS) throw wireError(WireError.BAD_REQUEST, `URL longer than ${MAX_URL_CHARS} characters`);
  const q = rawUrl.indexOf('?');
  const path = q === -1 ? rawUrl : rawUrl.slice(0, q);
  const query = new URLSearchParams(q === -1 ? '' : rawUrl.slice(q + 1));
  if (path === '/healthz') return method === 'GET' || method === 'HEAD' ? { kind: 'healthz' } : methodNotAllowed(method, path, 'GET');
  if (path === '/metrics') return method === 'GET' ? { kind: 'metrics' } : methodNotAllowed(method, path, 'GET');
  const parts = path.split('/');
  // ['', 'v1', 'jobs', job, ...]
  if (parts.length < 4 || parts[0] !== '' || `/${parts[1]}` !== API_PREFIX || parts[2] !== 'jobs') {
    throw wireError(WireError.NO_SUCH_ROUTE, `no route ${path}`);
  }
  const jobId = decodeSegment('jobId', parts[3]!);
  if (parts.length === 4) {
    if (method !== 'DELETE') methodNotAllowed(method, path, 'DELETE');
    const keep = query.get('keepPersistent');
    if (keep !== null && keep !== 'true' && keep !== 'false') {
      throw wireError(WireError.BAD_REQUEST, 'invalid keepPersistent: expected true or false', { field: 'keepPersistent' });
    }
    return { kind: 'release-job', jobId, keepPersistent: keep === 'true', epoch: parseEpoch(query.get('epoch')) };
  }
  if (parts[4] !== 'partitions') throw wireError(WireError.NO_SUCH_ROUTE, `no route ${path}`);
  if (parts.length === 5) return method === 'GET' ? { kind: 'list', jobId } : methodNotAllowed(method, path, 'GET');
  const partitionId = decodeSegment('partitionId', parts[5]!);
  if (parts.length === 6) return method === 'DELETE' ? { kind: 'release', jobId, partitionId, epoch: parseEpoch(query.get('epoch')) } : methodNotAllowed(method, path, 'DELETE');
  if (parts.length === 7 && parts[6] === 'data') {
    if (method !== 'GET') methodNotAllowed(method, path, 'GET');
    return { kind: 'fetch', jobId, partitionId, start: parseIndex('start', query.get('start')), end: parseIndex('end', query.get('end')) };
  }
  if (parts[6] !== 'attempts' || parts.length < 8 || parts.length > 9) throw wireError(WireError.NO_SUCH_ROUTE, `no route ${path}`);
  const attempt = parseAttempt(parts[7]!);
  if (parts.length === 8) return method === 'DELETE' ? { kind: 'abort', jobId, partitionId, attempt } : methodNotAllowed(method, path, 'DELETE');
  if (parts[8] === 'data') return method === 'PUT' ? { kind: 'push', jobId, partitionId, attempt } : methodNotAllowed(method, path, 'PUT');
  if (parts[8] === 'commit') return method === 'POST' ? { kind: 'commit', jobId, partitionId, attempt } : methodNotAllowed(method, path, 'POST');
  if (parts[8] === 'lease') {
    if (method !== 'POST') methodNotAllowed(method, path, 'POST');
    const ttlMs = parseIndex('ttlMs', query.get('ttlMs'));
    if (ttlMs < 1 || ttlMs > MAX_LEASE_MS) throw wireError(WireError.BAD_REQUEST, `invalid ttlMs: expected [1, ${MAX_LEASE_MS}]`, { field: 'ttlMs' });
    return { kind: 'lease', jobId, partitionId, attempt, ttlMs };
  }
  throw wireError(WireError.NO_SUCH_ROUTE, `no route ${path}`);
}
