import { strict as assert } from 'node:assert';
import { type Socket, connect } from 'node:net';
import { describe, it } from 'node:test';
import { encodeObject, eventually, text } from './helpers/server-objects.js';
import { type TestServer, startTestServer } from './helpers/test-server.js';

const JOB = 'job-shutdown';

/** A raw connection that reads HTTP/1.1 responses one after another (keep-alive). */
class RawConnection {
  private buffer = Buffer.alloc(0);
  private waiter: (() => void) | undefined;
  closed = false;

  private constructor(readonly socket: Socket) {
    socket.on('data', (data: Buffer) => {
      this.buffer = Buffer.concat([this.buffer, data]);
      this.waiter?.();
    });
    socket.on('close', () => {
      this.closed = true;
      this.waiter?.();
    });
    socket.on('error', () => undefined);
  }

  static async open(url: string): Promise<RawConnection> {
    const { hostname, port } = new URL(url);
    const socket = connect(Number(port), hostname);
    await new Promise<void>((resolve, reject) => socket.once('connect', resolve).once('error', reject));
    return new RawConnection(socket);
  }

  write(bytes: string | Uint8Array): void {
    this.socket.write(bytes);
  }

  /** The next complete response on the connection; throws if the connection closes first. */
  async response(): Promise<{ status: number; headers: Record<string, string>; body: string }> {
    for (;;) {
      const end = this.buffer.indexOf('\r\n\r\n');
      if (end !== -1) {
        const [statusLine, ...lines] = this.buffer.subarray(0, end).toString('latin1').split('\r\n');
        const headers: Record<string, string> = {};
        for (const line of lines) headers[line.slice(0, line.indexOf(':')).trim().toLowerCase()] = line.slice(line.indexOf(':') + 1).trim();
        const length = Number(headers['content-length'] ?? 0);
        if (this.buffer.length >= end + 4 + length) {
          const body = this.buffer.subarray(end + 4, end + 4 + length).toString('utf8');
          this.buffer = this.buffer.subarray(end + 4 + length);
          return { status: Number(statusLine!.split(' ')[1]), headers, body };
        }
      }
      if (this.closed) throw new Error(`the connection closed before a complete response: ${JSON.stringify(this.buffer.toString('latin1').slice(0, 200))}`);
      await new Promise<void>((resolve) => (this.waiter = resolve));
      this.waiter = undefined;
    }
  }

  async untilClosed(): Promise<void> {
    while (!this.closed) {
      await new Promise<void>((resolve) => (this.waiter = resolve));
      this.waiter = undefined;
    }
  }

  destroy(): void {
    this.socket.destroy();
  }
}

function pushHead(t: TestServer, partitionId: string): string {
  return `PUT /v1/jobs/${JOB}/partitions/${encodeURIComponent(partitionId)}/attempts/0/data HTTP/1.1\r\nhost: x\r\nauthorization: Bearer ${t.token(JOB)}\r\ntransfer-encoding: chunked\r\n\r\n`;
}

function chunk(bytes: Uint8Array): Uint8Array {
  return Buffer.concat([Buffer.from(`${bytes.length.toString(16)}\r\n`), bytes, Buffer.from('\r\n')]);
}

async function refusesConnections(url: string): Promise<boolean> {
  const { hostname, port } = new URL(url);
  return new Promise<boolean>((resolve) => {
    const socket = connect(Number(port), hostname);
    socket.once('connect', () => {
      socket.destroy();
      resolve(false);
    });
    socket.once('error', (error: NodeJS.ErrnoException) => resolve(error.code === 'ECONNREFUSED'));
  });
}

describe('shuffle server shutdown', () => {
  it('once closing, refuses new connections, answers a request on an open keep-alive connection 503 wire 11, and finishes the push in flight', { timeout: 30_000 }, async () => {
    await using t = await startTestServer();
    const object = await encodeObject([[Array.from({ length: 200 }, (_, i) => text(`drain-${i}`))]], 'none');
    const keepAlive = await RawConnection.open(t.server.url);
    const push = await RawConnection.open(t.server.url);
    try {
      keepAlive.write('GET /healthz HTTP/1.1\r\nhost: x\r\n\r\n');
      assert.equal((await keepAlive.response()).status, 200);
      push.write(pushHead(t, 'inflight#0'));
      push.write(chunk(object.bytes.subarray(0, 100)));
      await eventually(async () => t.server.activeStreams === 1, 'the push to be in flight');

      const closing = t.server.close();
      assert.equal(await refusesConnections(t.server.url), true, 'a new connection is refused once close() began');
      keepAlive.write('GET /healthz HTTP/1.1\r\nhost: x\r\n\r\n');
      const refused = await keepAlive.response();
      assert.equal(refused.status, 503);
      assert.deepEqual(JSON.parse(refused.body), { code: 'SHF_ERR_STORAGE_UNAVAILABLE', wire: 11, message: 'the server is shutting down' });
      assert.equal(refused.headers['connection'], 'close');
      assert.equal(refused.headers['retry-after'], '1');
      await keepAlive.untilClosed();

      push.write(chunk(object.bytes.subarray(100)));
      push.write('0\r\n\r\n');
      const pushed = await push.response();
      assert.equal(pushed.status, 201, `the push in flight completes: ${pushed.body}`);
      assert.equal((JSON.parse(pushed.body) as { objectBytes: number }).objectBytes, object.bytes.length);
      await closing;
    } finally {
      keepAlive.destroy();
      push.destroy();
    }
  });

  it('cuts a request still running after shutdownTimeoutMs, deletes its partial data, and finishes closing', { timeout: 30_000 }, async () => {
    await using t = await startTestServer({ shutdownTimeoutMs: 200 });
    const object = await encodeObject([[Array.from({ length: 200 }, (_, i) => text(`stuck-${i}`))]], 'none');
    const push = await RawConnection.open(t.server.url);
    try {
      push.write(pushHead(t, 'stuck#0'));
      push.write(chunk(object.bytes.subarray(0, 100)));
      await eventually(async () => (await t.objectFiles()).length === 1 && t.server.activeStreams === 1, 'the push to be in flight');
      // the client never sends the rest: only shutdownTimeoutMs ends the wait
      await t.server.close();
      await push.untilClosed();
      assert.deepEqual(await t.objectFiles(), [], 'the cut push leaves nothing on disk');
      assert.equal(t.server.activeStreams, 0);
    } finally {
      push.destroy();
    }
  });
});
