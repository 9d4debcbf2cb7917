import type { IncomingMessage, ServerResponse } from 'node:http';
import { invalidArgument } from '@weft/shuffle-api';
import { WireError, toWireResponse, wireError } from '../protocol/wire-errors.js';

/** Sends `body` as JSON with `status`. */
export function sendJson(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text), ...headers });
  res.end(text);
}

/**
 * Answers `error` through the one server-side mapping (protocol/wire-errors.ts). When the request body
 * has not been read to its end, the connection is closed after the answer instead of reading the rest.
 * When the response has already started, the connection is destroyed (the client sees a truncated body).
 * Returns the wire number sent, or undefined when nothing could be sent.
 */
export function sendError(req: IncomingMessage, res: ServerResponse, error: unknown, closeConnection = false): number | undefined {
  if (res.headersSent || res.destroyed || res.writableEnded) {
    res.destroy();
    return undefined;
  }
  const { status, body, kind } = toWireResponse(error);
  const headers: Record<string, string> = {};
  if (kind === WireError.TOO_MANY_STREAMS || kind === WireError.SHUTTING_DOWN) headers['retry-after'] = '1';
  if (closeConnection || !req.complete) headers['connection'] = 'close';
  sendJson(res, status, body, headers);
  return kind.wire;
}

/** Reads a JSON request body of at most `maxBytes`. */
export async function readJsonBody(req: IncomingMessage, maxBytes: number): Promise<unknown> {
  const declared = Number(req.headers['content-length']);
  if (Number.isFinite(declared) && declared > maxBytes) {
    throw wireError(WireError.JSON_TOO_LARGE, `the JSON body of ${declared} bytes is larger than ${maxBytes}`, { setting: 'maxJsonBodyBytes' });
  }
  const chunks: Buffer[] = [];
  let total = 0;
  for await (const chunk of req.iterator({ destroyOnReturn: false })) {
    const buffer = chunk as Buffer;
    total += buffer.length;
    if (total > maxBytes) throw wireError(WireError.JSON_TOO_LARGE, `the JSON body is larger than ${maxBytes} bytes`, { setting: 'maxJsonBodyBytes' });
    chunks.push(buffer);
  }
  try {
    return JSON.parse(Buffer.concat(chunks).toString('utf8'));
  } catch (cause) {
    throw invalidArgument('body', `not JSON: ${(cause as Error).message}`);
  }
}
