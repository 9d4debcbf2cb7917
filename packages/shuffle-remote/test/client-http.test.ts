import { strict as assert } from 'node:assert';
import { execFileSync } from 'node:child_process';
import { type IncomingMessage, type Server, type ServerResponse, createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { isShuffleError } from '@weft/shuffle-api';
import { rejectionOf } from '@weft/shuffle-api/testing';
import { ShuffleServerClient, resolveShuffleServerClientOptions } from '@weft/shuffle-remote/client';
import { createTempDir } from '@weft/testkit';
import { encodeObject, fetchedRecords, testDescriptor, text } from './helpers/server-objects.js';
import { startTestServer } from './helpers/test-server.js';

/** A scripted HTTP server: `answer` is called for each request in turn. */
async function scripted(answer: (req: IncomingMessage, res: ServerResponse, n: number) => void): Promise<{ url: string; requests: () => number; connections: () => number } & AsyncDisposable> {
  let requests = 0;
  let connections = 0;
  const server: Server = createServer((req, res) => {
    requests++;
    req.resume();
    req.on('end', () => answer(req, res, requests));
  });
  server.on('connection', () => connections++);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    url,
    requests: () => requests,
    connections: () => connections,
    [Symbol.asyncDispose]: async () => {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}

function json(res: ServerResponse, status: number, body: unknown): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) }).end(text);
}

function client(url: string, options: Parameters<typeof resolveShuffleServerClientOptions>[0] = {}): ShuffleServerClient {
  return new ShuffleServerClient(resolveShuffleServerClientOptions({ servers: [url], retryInitialDelayMs: 1, retryMaxDelayMs: 5, ...options }));
}

const TARGET = { token: 't', jobId: 'j', partitionId: 'p#0', attempt: 0 };

describe('shuffle server client', () => {
  it('retries a replayable request after retryable answers (503 busy, 503 draining, a bare 502) and succeeds', async () => {
    await using fake = await scripted((_req, res, n) => {
      if (n === 1) return json(res, 503, { code: 'SHF_ERR_LIMIT_EXCEEDED', wire: 10, message: 'busy' });
      if (n === 2) return json(res, 503, { code: 'SHF_ERR_STORAGE_UNAVAILABLE', wire: 11, message: 'shutting down' });
      if (n === 3) return void res.writeHead(502, { 'content-type': 'text/html' }).end('<html>bad gateway</html>');
      return json(res, 200, { partitions: [] });
    });
    const c = client(fake.url);
    try {
      assert.deepEqual(await c.list(fake.url, 't', 'j'), []);
      assert.equal(fake.requests(), 4);
    } finally {
      await c.close();
    }
  });

  it("does not retry a server's internal error (wire INTERNAL, or a bare 500) as if it were an outage", async () => {
    await using fake = await scripted((_req, res, n) => {
      if (n === 1) return json(res, 500, { code: 'SHF_ERR_STORAGE_UNAVAILABLE', wire: 14, message: 'internal server error' });
      return void res.writeHead(500, { 'content-type': 'text/plain' }).end('oops');
    });
    const c = client(fake.url, { retryAttempts: 5 });
    try {
      const internal = await rejectionOf(c.list(fake.url, 't', 'j'));
      assert.ok(isShuffleError(internal, 'SHF_ERR_STORAGE_UNAVAILABLE') && !internal.retryable, String(internal));
      assert.deepEqual([internal.context['wire'], internal.context['unreachable']], [14, undefined]);
      assert.equal(fake.requests(), 1, 'an INTERNAL answer is sent once');
      const bare = await rejectionOf(c.release(fake.url, 't', 'j', 'p#0'));
      assert.ok(isShuffleError(bare, 'SHF_ERR_STORAGE_UNAVAILABLE') && !bare.retryable, String(bare));
      assert.equal(fake.requests(), 2, 'a bare 500 is sent once');
    } finally {
      await c.close();
    }
  });

  it('does not retry a non-retryable answer, and reports its SHF code', async () => {
    await using fake = await scripted((_req, res) => json(res, 409, { code: 'SHF_ERR_COMMIT_CONFLICT', wire: 7, message: 'attempt 1 won' }));
    const c = client(fake.url);
    try {
      const error = await rejectionOf(c.commit({ url: fake.url, ...TARGET }, testDescriptor({ jobId: 'j', partitionId: 'p#0', attempt: 0, subpartitions: 1 }), [0]));
      assert.ok(isShuffleError(error, 'SHF_ERR_COMMIT_CONFLICT') && !error.retryable, String(error));
      assert.deepEqual([error.context['httpStatus'], error.context['wire'], error.partitionId], [409, 7, 'p#0']);
      assert.equal(fake.requests(), 1);
    } finally {
      await c.close();
    }
  });

  it('gives up after retryAttempts with the last retryable error, and never retries a streamed push', async () => {
    await using fake = await scripted((_req, res) => json(res, 503, { code: 'SHF_ERR_STORAGE_UNAVAILABLE', wire: 12, message: 'disk away' }));
    const c = client(fake.url, { retryAttempts: 3 });
    try {
      const error = await rejectionOf(c.release(fake.url, 't', 'j', 'p#0'));
      assert.ok(isShuffleError(error, 'SHF_ERR_STORAGE_UNAVAILABLE') && error.retryable);
      assert.equal(fake.requests(), 3);
      async function* stream(): AsyncIterable<Uint8Array> {
        yield text('not replayable');
      }
      const streamed = await rejectionOf(c.push({ url: fake.url, ...TARGET, body: stream() }));
      assert.ok(isShuffleError(streamed, 'SHF_ERR_STORAGE_UNAVAILABLE'));
      assert.equal(fake.requests(), 4, 'a streamed body cannot be replayed, so it is sent once');
    } finally {
      await c.close();
    }
  });

  it('backs off exponentially between tries: each wait is a random share of a delay that doubles up to retryMaxDelayMs', async () => {
    await using fake = await scripted((_req, res) => json(res, 503, { code: 'SHF_ERR_STORAGE_UNAVAILABLE', wire: 12, message: 'disk away' }));
    for (const [jitter, expected] of [
      [1, [10, 20, 40, 80, 100, 100]],
      [0.5, [5, 10, 20, 40, 50, 50]],
    ] as const) {
      const slept: number[] = [];
      const timers = { random: () => jitter, sleep: async (ms: number) => void slept.push(ms) };
      const options = resolveShuffleServerClientOptions({ servers: [fake.url], retryAttempts: 7, retryInitialDelayMs: 10, retryMaxDelayMs: 100 });
      const c = new ShuffleServerClient(options, undefined, timers);
      try {
        const error = await rejectionOf(c.list(fake.url, 't', 'j'));
        assert.ok(isShuffleError(error, 'SHF_ERR_STORAGE_UNAVAILABLE') && error.retryable);
        assert.deepEqual(slept, expected, `waits with jitter ${jitter}`);
      } finally {
        await c.close();
      }
    }
    assert.equal(fake.requests(), 14, 'seven tries each');
  });

  it('tries a server it just found unreachable once per request, not through every retry', async () => {
    const fake = await scripted((_req, res) => json(res, 200, { partitions: [] }));
    const url = fake.url;
    await fake[Symbol.asyncDispose](); // nothing listens there now: connections are refused
    const slept: number[] = [];
    const timers = { random: () => 1, sleep: async (ms: number) => void slept.push(ms) };
    const c = new ShuffleServerClient(resolveShuffleServerClientOptions({ servers: [url], retryAttempts: 4, retryInitialDelayMs: 10 }), undefined, timers);
    try {
      const first = await rejectionOf(c.list(url, 't', 'j'));
      assert.ok(isShuffleError(first, 'SHF_ERR_STORAGE_UNAVAILABLE') && first.context['unreachable'] === true, String(first));
      assert.equal(slept.length, 3, 'the first request goes through its four tries');
      const second = await rejectionOf(c.list(url, 't', 'j'));
      assert.ok(isShuffleError(second, 'SHF_ERR_STORAGE_UNAVAILABLE') && second.context['unreachable'] === true, String(second));
      assert.equal(slept.length, 3, 'the next one is tried once: no more waits');
    } finally {
      await c.close();
    }
  });

  it('maps answers that are not from a shuffle server by their HTTP status', async () => {
    await using fake = await scripted((_req, res, n) => {
      if (n === 1) return void res.writeHead(502, { 'content-type': 'text/html' }).end('<html>bad gateway</html>');
      return void res.writeHead(400, { 'content-type': 'text/html' }).end('<html>no</html>');
    });
    const c = client(fake.url, { retryAttempts: 1 });
    try {
      const gateway = await rejectionOf(c.list(fake.url, 't', 'j'));
      assert.ok(isShuffleError(gateway, 'SHF_ERR_STORAGE_UNAVAILABLE') && gateway.retryable);
      const bad = await rejectionOf(c.list(fake.url, 't', 'j'));
      assert.ok(isShuffleError(bad, 'SHF_ERR_INVALID_ARGUMENT') && !bad.retryable);
    } finally {
      await c.close();
    }
  });

  it('times out a server that does not answer with SHF_ERR_TIMEOUT naming headersTimeoutMs', async () => {
    const held: ServerResponse[] = [];
    await using fake = await scripted((_req, res) => void held.push(res));
    const c = client(fake.url, { headersTimeoutMs: 100, retryAttempts: 2 });
    try {
      const error = await rejectionOf(c.list(fake.url, 't', 'j'));
      assert.ok(isShuffleError(error, 'SHF_ERR_TIMEOUT') && error.retryable, String(error));
      assert.equal(error.context['setting'], 'headersTimeoutMs');
      assert.equal(fake.requests(), 2, 'a timeout is retryable');
    } finally {
      for (const res of held) res.destroy();
      await c.close();
    }
  });

  it('marks a server that refuses connections as unreachable (retryable)', async () => {
    const fake = await scripted(() => undefined);
    const url = fake.url;
    await fake[Symbol.asyncDispose]();
    const c = client(url, { retryAttempts: 2 });
    try {
      const error = await rejectionOf(c.list(url, 't', 'j'));
      assert.ok(isShuffleError(error, 'SHF_ERR_STORAGE_UNAVAILABLE') && error.retryable, String(error));
      assert.equal(error.context['unreachable'], true);
    } finally {
      await c.close();
    }
  });

  it('reuses pooled keep-alive connections for sequential requests', async () => {
    await using fake = await scripted((_req, res) => json(res, 200, { partitions: [] }));
    const c = client(fake.url);
    try {
      for (let i = 0; i < 100; i++) await c.list(fake.url, 't', 'j');
      assert.equal(fake.requests(), 100);
      // undici may open a second socket while the first is still finishing a response; never one per request
      assert.ok(fake.connections() <= 2, `${fake.connections()} connections for 100 sequential requests`);
    } finally {
      await c.close();
    }
  });

  it('talks HTTPS to a server with a certificate and key, trusting a CA file, and refuses an untrusted one', async () => {
    await using dir = await createTempDir('weft-tls-');
    const certFile = join(dir.path, 'cert.pem');
    const keyFile = join(dir.path, 'key.pem');
    execFileSync('openssl', ['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', keyFile, '-out', certFile, '-days', '1', '-subj', '/CN=127.0.0.1', '-addext', 'subjectAltName=IP:127.0.0.1'], { stdio: 'ignore' });
    await using t = await startTestServer({ tls: { certFile, keyFile } }, { caFile: certFile });
    assert.match(t.server.url, /^https:\/\/127\.0\.0\.1:\d+$/);
    const object = await encodeObject([[[text('over'), text('tls')]]]);
    const target = { url: t.server.url, token: t.token('tls'), jobId: 'tls', partitionId: 'p#0', attempt: 0 };
    await t.client.push({ ...target, body: [object.bytes], length: object.bytes.length });
    await t.client.commit(target, testDescriptor({ jobId: 'tls', partitionId: 'p#0', attempt: 0, subpartitions: 1, token: target.token }), object.subpartitionBytes);
    assert.deepEqual(await fetchedRecords(await t.client.fetch({ ...target, start: 0, end: 0 }), 0, 0), [['over', 'tls']]);
    const untrusting = client(t.server.url, { retryAttempts: 1 });
    try {
      const error = await rejectionOf(untrusting.list(t.server.url, target.token, 'tls'));
      assert.ok(isShuffleError(error, 'SHF_ERR_STORAGE_UNAVAILABLE') && !error.retryable, `an unknown certificate must be refused for good: ${String(error)}`);
    } finally {
      await untrusting.close();
    }
  });
});
