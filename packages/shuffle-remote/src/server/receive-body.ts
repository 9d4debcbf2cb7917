import type { IncomingMessage } from 'node:http';
import { ShuffleError } from '@weft/shuffle-api';
import { WireError, wireError } from '../protocol/wire-errors.js';

export interface ReceiveBodyOptions {
  /** Largest body accepted: more is BODY_TOO_LARGE. */
  readonly maxBytes: number;
  /** Bytes held before the socket is paused until the writes catch up (asked at each chunk: it may shrink as streams come). */
  readonly bufferBytes: () => number;
  /** Sees every chunk as it arrives (validation, counting); may throw to refuse the body. */
  readonly onChunk: (chunk: Buffer) => void;
  /** Writes a batch of chunks (at most about `bufferBytes`), in order; one call at a time. */
  readonly write: (batch: readonly Buffer[], bytes: number) => Promise<void>;
}

/**
 * Streams a request body into `write` with backpressure: chunks queue while a write is in flight and
 * go out as one batch (one writev); past `bufferBytes()` the request is paused, so a push holds at most about
 * twice that whatever its size. Rejects when `onChunk` or `write` throws, when the body passes
 * `maxBytes`, or when the client goes away before the body ended (a vanished or timed-out client).
 * It never destroys the request itself, so the caller can still answer.
 */
export function receiveBody(req: IncomingMessage, options: ReceiveBodyOptions): Promise<number> {
  return new Promise<number>((resolve, reject) => {
    let queue: Buffer[] = [];
    let queued = 0;
    let total = 0;
    let writing = false;
    let ended = false;
    let settled = false;

    const cleanup = (): void => {
      req.off('data', onData);
      req.off('end', onEnd);
      req.off('error', onError);
      req.off('close', onClose);
    };
    const fail = (error: unknown): void => {
      if (settled) return;
      settled = true;
      cleanup();
      req.pause();
      reject(error);
    };
    const succeed = (): void => {
      if (settled) return;
      settled = true;
      cleanup();
      resolve(total);
    };
    const pump = async (): Promise<void> => {
      writing = true;
      try {
        while (queue.length > 0 && !settled) {
          const batch = queue;
          const bytes = queued;
          queue = [];
          queued = 0;
          if (!ended && req.isPaused()) req.resume();
          await options.write(batch, bytes);
        }
      } catch (error) {
        fail(error);
        return;
      } finally {
        writing = false;
      }
      if (ended) succeed();
    };
    function onData(chunk: Buffer): void {
      if (settled) return;
      total += chunk.length;
      if (total > options.maxBytes) {
        fail(wireError(WireError.BODY_TOO_LARGE, `the body is larger than the server's maximum of ${options.maxBytes} bytes`, { setting: 'maxBodyBytes' }));
        return;
      }
      try {
        options.onChunk(chunk);
      } catch (error) {
        fail(error);
        return;
      }
      queue.push(chunk);
      queued += chunk.length;
      if (queued >= options.bufferBytes()) req.pause();
      if (!writing) void pump();
    }
    function onEnd(): void {
      ended = true;
      if (!writing) void pump();
    }
    function onError(error: Error): void {
      fail(new ShuffleError('SHF_ERR_STORAGE_UNAVAILABLE', `the push stream broke: ${error.message}`, { cause: error }));
    }
    function onClose(): void {
      if (!req.complete) fail(new ShuffleError('SHF_ERR_STORAGE_UNAVAILABLE', 'the client went away before the body ended'));
    }
    req.on('data', onData);
    req.on('end', onEnd);
    req.on('error', onError);
    req.on('close', onClose);
  });
}
