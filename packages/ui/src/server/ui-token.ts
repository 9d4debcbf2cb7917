import { createHash, timingSafeEqual } from 'node:crypto';
import { isIP } from 'node:net';
import type { IncomingMessage } from 'node:http';

/** Shortest UI token accepted, in bytes (the shuffle secret's minimum, MIN_SECRET_BYTES in @weft/shuffle-remote). */
export const MIN_UI_TOKEN_BYTES = 16;

/**
 * Whether `host` (what the server binds) reaches this machine only: `localhost`, `127.0.0.0/8`, `::1`
 * (and `::ffff:127.x`). Everything else — `0.0.0.0`, `::`, a host name, another address — is reachable
 * from elsewhere and needs a token.
 */
export function isLoopbackHost(host: string): boolean {
  const h = host.trim().toLowerCase().replace(/^\[(.*)\]$/, '$1');
  if (h === 'localhost') return true;
  if (isIP(h) === 4) return h.startsWith('127.');
  if (isIP(h) === 6) return h === '::1' || /^::ffff:127\./.test(h) || h === '0:0:0:0:0:0:0:1';
  return false;
}

/** The token a request carries: `Authorization: Bearer <token>` (the shuffle server's header), else `?token=`. */
export function requestToken(req: IncomingMessage, url: URL): string | undefined {
  const header = req.headers.authorization;
  const match = header === undefined ? null : /^Bearer ([^\s]+)$/i.exec(header.trim());
  return match?.[1] ?? url.searchParams.get('token') ?? undefined;
}

/**
 * Whether `given` is `expected`, in time independent of where they differ: both are hashed (SHA-256) to
 * equal-length digests, compared with `timingSafeEqual` (so not even the length leaks).
 */
export function tokenMatches(expected: string, given: string | undefined): boolean {
  if (given === undefined) return false;
  const digest = (s: string): Buffer => createHash('sha256').update(s, 'utf8').digest();
  return timingSafeEqual(digest(expected), digest(given));
}

/**
 * Whether a request to a UI without a token may read job data: its `Host` header (when it has one) names
 * a loopback host. A web page whose name an attacker rebinds to 127.0.0.1 (DNS rebinding) reaches a
 * loopback port as the same origin, and its requests carry the attacker's name in `Host`.
 */
export function hostHeaderIsLoopback(req: IncomingMessage): boolean {
  const header = req.headers.host;
  if (header === undefined) return true;
  let hostname: string;
  try {
    hostname = new URL(`http://${header}`).hostname;
  } catch {
    return false;
  }
  return isLoopbackHost(hostname);
}
