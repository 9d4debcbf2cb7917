import { createHmac, timingSafeEqual } from 'node:crypto';
import type { ExecutorInitMessage } from './control-protocol.js';

/** JSON with object keys sorted at every level: the bytes both sides sign. */
function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  if (typeof value === 'object' && value !== null) {
    const entries = Object.entries(value as Record<string, unknown>)
      .filter(([, v]) => v !== undefined)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonicalJson(v)}`).join(',')}}`;
  }
  return JSON.stringify(value) ?? 'null';
}

function mac(secret: Uint8Array, init: Omit<ExecutorInitMessage, 'signature'>): Buffer {
  return createHmac('sha256', secret).update('weft-cluster-deployment\u0000').update(canonicalJson(init), 'utf8').digest();
}

/** Signs a deployment: `v1.<base64url HMAC-SHA256(secret, canonical JSON of every other field)>`. */
export function signDeployment(secret: Uint8Array, init: Omit<ExecutorInitMessage, 'signature'>): ExecutorInitMessage {
  return { ...init, signature: `v1.${mac(secret, init).toString('base64url')}` };
}

/** Whether `init` carries a valid signature made with `secret` (timing-safe comparison). */
export function verifyDeployment(secret: Uint8Array, init: ExecutorInitMessage): boolean {
  const { signature, ...rest } = init;
  if (typeof signature !== 'string' || !signature.startsWith('v1.')) return false;
  const given = Buffer.from(signature.slice(3), 'base64url');
  const expected = mac(secret, rest);
  return given.length === expected.length && timingSafeEqual(given, expected);
}
