import { createHmac, timingSafeEqual } from 'node:crypto';
import { invalidConfig } from '@weft/shuffle-api';

/** Shortest shared secret accepted, in bytes. */
export const MIN_SECRET_BYTES = 16;

const TOKEN_VERSION = 'v1';
const MAC_BYTES = 32;
/** Longest token accepted (a 512-character job id, base64url, plus the MAC). */
const MAX_TOKEN_CHARS = 4096;

/** What a server concludes from a request's token, for the job named in its path. */
export type TokenVerdict = 'ok' | 'unauthorized' | 'forbidden';

/** Checks a shared secret once, at start-up: SHF_ERR_INVALID_CONFIG naming `setting` when too short. */
export function checkSecret(secret: unknown, setting: string): Buffer {
  const bytes = typeof secret === 'string' ? Buffer.from(secret, 'utf8') : secret instanceof Uint8Array ? Buffer.from(secret) : undefined;
  if (bytes === undefined) throw invalidConfig(setting, 'expected a string or bytes');
  if (bytes.length < MIN_SECRET_BYTES) {
    throw invalidConfig(setting, `the shared secret must be at least ${MIN_SECRET_BYTES} bytes, got ${bytes.length}`);
  }
  return bytes;
}

function mac(secret: Uint8Array, jobId: string): Buffer {
  return createHmac('sha256', secret).update('weft-shuffle-job\u0000').update(jobId, 'utf8').digest();
}

/**
 * The job token: `v1.<base64url(jobId)>.<base64url(HMAC-SHA256(secret, jobId))>`. It names its job, so a
 * server tells a forged token (401) from another job's valid one (403) while keeping no per-job state.
 */
export function createJobToken(secret: Uint8Array, jobId: string): string {
  return `${TOKEN_VERSION}.${Buffer.from(jobId, 'utf8').toString('base64url')}.${mac(secret, jobId).toString('base64url')}`;
}

/**
 * Checks `token` (the value after `Bearer `) for `jobId`: `unauthorized` when missing, malformed or not
 * made with `secret`; `forbidden` when valid for another job. The MAC comparison is timing-safe.
 */
export function verifyJobToken(secret: Uint8Array, token: string | undefined, jobId: string): TokenVerdict {
  if (token === undefined || token.length === 0 || token.length > MAX_TOKEN_CHARS) return 'unauthorized';
  const parts = token.split('.');
  if (parts.length !== 3 || parts[0] !== TOKEN_VERSION) return 'unauthorized';
  const [, encodedJob, encodedMac] = parts as [string, string, string];
  if (!/^[A-Za-z0-9_-]+$/.test(encodedJob) || !/^[A-Za-z0-9_-]+$/.test(encodedMac)) return 'unauthorized';
  const given = Buffer.from(encodedMac, 'base64url');
  if (given.length !== MAC_BYTES) return 'unauthorized';
  const tokenJob = Buffer.from(encodedJob, 'base64url').toString('utf8');
  if (!timingSafeEqual(given, mac(secret, tokenJob))) return 'unauthorized';
  return tokenJob === jobId ? 'ok' : 'forbidden';
}

/** The token from an `Authorization: Bearer <token>` header value, or undefined. */
export function bearerToken(header: string | undefined): string | undefined {
  if (header === undefined) return undefined;
  const match = /^Bearer ([^\s]+)$/i.exec(header.trim());
  return match?.[1];
}
