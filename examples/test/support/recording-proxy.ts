// A TCP proxy for tests that keeps every byte clients sent through it, so a test can tell which server a
// job really talked to (and what it asked for): S3 request lines, Redis commands and their keys.
import { createConnection, createServer, type Socket } from 'node:net';

export interface RecordingProxy extends AsyncDisposable {
  /** The port clients connect to, on 127.0.0.1. */
  readonly port: number;
  /** Everything clients sent so far, as latin1 text (bytes kept one to one). */
  sent(): string;
  /** Forgets what was sent so far. */
  clear(): void;
  close(): Promise<void>;
}

/** Starts a proxy on a free port of 127.0.0.1 that forwards every connection to `host:port`. */
export async function startRecordingProxy(target: { host: string; port: number }): Promise<RecordingProxy> {
  let chunks: Buffer[] = [];
  const sockets = new Set<Socket>();
  const server = createServer((client) => {
    const upstream = createConnection(target);
    sockets.add(client).add(upstream);
    client.on('data', (chunk: Buffer) => chunks.push(Buffer.from(chunk)));
    client.pipe(upstream);
    upstream.pipe(client);
    const end = (): void => {
      client.destroy();
      upstream.destroy();
      sockets.delete(client);
      sockets.delete(upstream);
    };
    client.on('error', end).on('close', end);
    upstream.on('error', end).on('close', end);
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  const address = server.address();
  if (address === null || typeof address === 'string') throw new Error('the proxy has no TCP address');
  let closed: Promise<void> | undefined;
  const close = (): Promise<void> => {
    closed ??= new Promise<void>((resolve) => {
      for (const socket of sockets) socket.destroy();
      server.close(() => resolve());
    });
    return closed;
  };
  return {
    port: address.port,
    sent: () => Buffer.concat(chunks).toString('latin1'),
    clear: () => {
      chunks = [];
    },
    close,
    [Symbol.asyncDispose]: close,
  };
}
