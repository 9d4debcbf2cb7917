import { type Server, type Socket, connect, createServer } from 'node:net';

export interface PausableProxy extends AsyncDisposable {
  /** `http://127.0.0.1:<port>`: use it as the endpoint instead of the upstream's. */
  readonly url: string;
  /** Stops forwarding what clients send (connections stay open; their bytes wait). */
  pause(): void;
  /** Forwards again, what waited first. */
  resume(): void;
  close(): Promise<void>;
}

/**
 * A TCP proxy in front of a real server (s3rver) whose client-to-server direction can be held: requests
 * sent while it is paused reach the server only on `resume()`, so a test can keep transfers in flight for
 * as long as it needs without timing anything.
 */
export async function startPausableProxy(upstream: string): Promise<PausableProxy> {
  const target = new URL(upstream);
  const sockets = new Set<Socket>();
  const held: Socket[] = [];
  let paused = false;
  const forward = (from: Socket, to: Socket, holdable: boolean): void => {
    from.on('data', (data: Buffer) => {
      if (holdable && paused) {
        from.pause();
        from.unshift(data);
        held.push(from);
        return;
      }
      if (!to.write(data)) {
        from.pause();
        to.once('drain', () => {
          if (!(holdable && paused)) from.resume();
        });
      }
    });
    from.on('end', () => to.end());
  };
  const server: Server = createServer((client) => {
    const backend = connect(Number(target.port), target.hostname);
    for (const s of [client, backend]) {
      sockets.add(s);
      s.on('error', () => undefined);
      s.on('close', () => {
        sockets.delete(s);
        client.destroy();
        backend.destroy();
      });
    }
    forward(client, backend, true);
    forward(backend, client, false);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  const port = typeof address === 'object' && address !== null ? address.port : 0;
  const close = async (): Promise<void> => {
    for (const s of sockets) s.destroy();
    await new Promise((resolve) => server.close(resolve));
  };
  return {
    url: `http://127.0.0.1:${port}`,
    pause: () => {
      paused = true;
    },
    resume: () => {
      paused = false;
      for (const from of held.splice(0)) from.resume();
    },
    close,
    [Symbol.asyncDispose]: close,
  };
}
