import assert from 'node:assert/strict';
import { createServer, connect, type Socket } from 'node:net';
import { describe, it } from 'node:test';
import { ClusterExecutorProvider, ControlSocket, type ExecutorInitMessage, signDeployment, TaskExecutorService, verifyDeployment } from '@weft/cluster';

const secret = Buffer.from('a-shared-secret-of-enough-bytes');
const init: Omit<ExecutorInitMessage, 'signature'> = {
  type: 'init', executorId: 'te~1', slots: 2, jobId: 'job-1', bundleSha256: 'a'.repeat(64), weftVersion: '0.1.0', issuedAtMs: 1, args: ['--input', 'x'], parallelism: 2,
  exchangeMode: 'ALL_EDGES_BLOCKING', fingerprint: 'f', pipelined: { module: 'm', exportName: 'e', options: { b: 1, a: [1, 2] } }, blocking: { module: 'm', exportName: 'e', options: null }, fileSystems: [],
  cwd: '/tmp', serializer: 'default', heartbeatIntervalMs: 1000, progressIntervalMs: 250,
};

describe('deployment signatures', () => {
  it('verify with the secret they were made with, whatever the key order', () => {
    const signed = signDeployment(secret, init);
    assert.equal(verifyDeployment(secret, signed), true);
    const reordered = Object.fromEntries(Object.entries(signed).reverse()) as unknown as ExecutorInitMessage;
    assert.equal(verifyDeployment(secret, reordered), true);
  });

  it('fail for another secret, no signature, or any field changed after signing', () => {
    const signed = signDeployment(secret, init);
    assert.equal(verifyDeployment(Buffer.from('another-secret-of-enough-bytes!'), signed), false);
    assert.equal(verifyDeployment(secret, { ...signed, signature: '' }), false);
    assert.equal(verifyDeployment(secret, { ...signed, signature: 'v1.AAAA' }), false);
    assert.equal(verifyDeployment(secret, { ...signed, args: ['--input', 'y'] }), false);
    assert.equal(verifyDeployment(secret, { ...signed, bundleSha256: 'b'.repeat(64) }), false);
    assert.equal(verifyDeployment(secret, { ...signed, pipelined: { ...signed.pipelined, options: { a: [1, 2], b: 2 } } }), false);
  });
});

describe('control sockets', () => {
  it('deliver structured-clone messages in order across arbitrary chunking, and report the close', async () => {
    const received: unknown[] = [];
    let closed: (() => void) | undefined;
    const done = new Promise<void>((resolve) => (closed = resolve));
    const server = createServer((socket) => {
      const control = new ControlSocket<unknown, unknown>(socket);
      control.onMessage = (message) => received.push(message);
      control.onClose = () => closed?.();
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const client: Socket = connect((server.address() as { port: number }).port, '127.0.0.1');
    await new Promise<void>((resolve) => client.once('connect', () => resolve()));
    const sender = new ControlSocket<unknown, unknown>(client);
    const messages = [{ type: 'a', bytes: new Uint8Array([1, 2, 3]) }, { type: 'b', big: 'x'.repeat(200_000) }, { type: 'c', nested: { m: [1, undefined, null] } }];
    for (const m of messages) sender.send(m);
    sender.end();
    await done;
    server.close();
    assert.deepEqual(received, messages);
  });

  it('drop a connection whose frame announces more than the limit', async () => {
    let closeError: Error | undefined;
    const done = new Promise<void>((resolve) => {
      const server = createServer((socket) => {
        const control = new ControlSocket<unknown, unknown>(socket);
        control.onClose = (error) => {
          closeError = error;
          server.close();
          resolve();
        };
      });
      server.listen(0, '127.0.0.1', () => {
        const client = connect((server.address() as { port: number }).port, '127.0.0.1', () => client.write(Buffer.from([0xff, 0xff, 0xff, 0xff, 0])));
        client.on('error', () => {});
      });
    });
    await done;
    assert.match(closeError?.message ?? '', /over the \d+-byte limit/);
  });
});

describe('options', () => {
  it('are validated once, naming the option; unknown keys refused', () => {
    assert.throws(() => new TaskExecutorService({ cluster: 'redis://127.0.0.1:1/0', secret, dir: '/tmp/x', slots: 0 }), { code: 'WEFT_ERR_INVALID_ARGUMENT', message: /slots/ });
    assert.throws(() => new TaskExecutorService({ cluster: 'redis://127.0.0.1:1/0', secret, dir: '/tmp/x', heartbeatIntervalMs: 1000, heartbeatTtlMs: 500 }), { message: /heartbeatTtlMs/ });
    assert.throws(() => new TaskExecutorService({ cluster: 'redis://127.0.0.1:1/0', secret: 'short', dir: '/tmp/x' }), { code: 'SHF_ERR_INVALID_CONFIG' });
    assert.throws(() => new ClusterExecutorProvider({ cluster: 'redis://127.0.0.1:1/0', secret, pollMs: 5 } as never), { code: 'WEFT_ERR_INVALID_ARGUMENT', message: /pollMs/ });
    assert.throws(() => new ClusterExecutorProvider({ cluster: 'http://nope', secret }), { code: 'SHF_ERR_INVALID_CONFIG' });
  });
});
