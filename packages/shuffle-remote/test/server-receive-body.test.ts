import { strict as assert } from 'node:assert';
import { type IncomingMessage, createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Readable } from 'node:stream';
import { describe, it } from 'node:test';
import { request } from 'undici';
import { receiveBody } from '../src/server/receive-body.js';
import { eventually } from './helpers/server-objects.js';

describe('shuffle server push bodies (receiveBody)', () => {
  it('pauses a request while its writes lag, so what it holds stays within about twice bufferBytes, and delivers every byte in order', { timeout: 30_000 }, async () => {
    const bufferBytes = 64 * 1024;
    const total = 8 * 1024 * 1024;
    const stats = { received: 0, written: 0, maxHeld: 0, batches: 0, maxBatch: 0 };
    let open: () => void = () => undefined;
    const gate = new Promise<void>((resolve) => (open = resolve));
    let incoming: IncomingMessage | undefined;
    let next = 0;
    let inOrder = true;
    const server = createServer((req, res) => {
      incoming = req;
      receiveBody(req, {
        maxBytes: total,
        bufferBytes: () => bufferBytes,
        onChunk: (chunk) => {
          stats.received += chunk.length;
          stats.maxHeld = Math.max(stats.maxHeld, stats.received - stats.written);
        },
        write: async (batch, bytes) => {
          await gate; // the disk is slow until the test opens it
          for (const chunk of batch) {
            for (const byte of chunk) {
              if (byte !== (next++ & 0xff)) inOrder = false;
            }
          }
          stats.written += bytes;
          stats.batches++;
          stats.maxBatch = Math.max(stats.maxBatch, bytes);
        },
      }).then(
        (n) => res.end(String(n)),
        () => res.destroy(),
      );
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    try {
      async function* body(): AsyncIterable<Uint8Array> {
        for (let at = 0; at < total; at += 16 * 1024) yield Uint8Array.from({ length: 16 * 1024 }, (_, i) => (at + i) & 0xff);
      }
      const response = request(`http://127.0.0.1:${(server.address() as AddressInfo).port}/`, { method: 'PUT', body: Readable.from(body()) });
      await eventually(() => incoming?.isPaused() === true, 'the request to be paused while its first write waits');
      const heldWhilePaused = stats.received;
      assert.equal(stats.written, 0);
      // Node delivers socket reads of up to 64 KiB: the first batch being written, then at most bufferBytes plus one read
      const bound = 2 * bufferBytes + 64 * 1024;
      assert.ok(heldWhilePaused <= bound, `received ${heldWhilePaused} bytes while nothing was written (bound ${bound})`);
      open();
      const res = await response;
      assert.equal(await res.body.text(), String(total));
      assert.equal(stats.written, total);
      assert.ok(inOrder, 'the bytes arrive in order');
      assert.ok(stats.maxHeld <= bound, `held up to ${stats.maxHeld} bytes (bound ${bound})`);
      assert.ok(stats.maxBatch <= bound, `wrote a batch of ${stats.maxBatch} bytes (bound ${bound})`);
      assert.ok(stats.batches > 1);
    } finally {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    }
  });
});
