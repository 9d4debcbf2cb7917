import { connect as connectTcp, type Socket } from 'node:net';
import { connect as connectTls } from 'node:tls';

/** One RESP command over a fresh connection; resolves with the reply's first line (`+OK`, `-ERR …`, `:3`). */
function redisCommand(url: URL, args: readonly string[], timeoutMs: number): Promise<string> {
  return new Promise((resolve, reject) => {
    const port = Number(url.port || 6379);
    const host = url.hostname || '127.0.0.1';
    const socket: Socket = url.protocol === 'rediss:' ? connectTls({ host, port, servername: host }) : connectTcp({ host, port });
    const encode = (parts: readonly string[]): string => `*${parts.length}\r\n${parts.map((p) => `$${Buffer.byteLength(p)}\r\n${p}\r\n`).join('')}`;
    const commands: string[][] = [];
    if (url.password !== '') commands.push(url.username === '' ? ['AUTH', decodeURIComponent(url.password)] : ['AUTH', decodeURIComponent(url.username), decodeURIComponent(url.password)]);
    commands.push([...args]);
    let replies = 0;
    let buffered = '';
    const timer = setTimeout(() => finish(new Error(`Redis did not answer ${args[0]} within ${timeoutMs} ms`)), timeoutMs);
    const finish = (error: Error | undefined, line?: string): void => {
      clearTimeout(timer);
      socket.destroy();
      if (error !== undefined) reject(error);
      else resolve(line ?? '');
    };
    socket.on('error', (error) => finish(error));
    // A server that restarts may close the connection instead of answering.
    socket.on('close', () => finish(undefined, '(connection closed)'));
    socket.on('data', (chunk: Buffer) => {
      buffered += chunk.toString('utf8');
      for (let eol = buffered.indexOf('\r\n'); eol >= 0; eol = buffered.indexOf('\r\n')) {
        const line = buffered.slice(0, eol);
        buffered = buffered.slice(eol + 2);
        if (line.startsWith('$') || line.startsWith('*')) continue;
        replies++;
        if (replies === commands.length || line.startsWith('-')) {
          finish(undefined, line);
          return;
        }
      }
    });
    socket.write(commands.map(encode).join(''));
  });
}

async function waitForPing(url: URL, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      if ((await redisCommand(url, ['PING'], 1000)).startsWith('+PONG')) return;
    } catch {
      // not back yet
    }
    if (Date.now() > deadline) throw new Error(`Redis at ${url.host} did not come back within ${timeoutMs} ms of its restart`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/**
 * Restarts the Redis server at `redisUrl` as `weft run --inject-faults restart-redis` does: `DEBUG
 * RESTART` (a real restart of the server process, reloading its data) where the server allows it
 * (`enable-debug-command`), otherwise `CLIENT KILL TYPE normal` — every client connection dropped, as a
 * restart drops them, data kept. Resolves, with what it did, once the server answers again.
 */
export async function restartRedis(redisUrl: string, timeoutMs = 15_000): Promise<string> {
  const url = new URL(redisUrl);
  const reply = await redisCommand(url, ['DEBUG', 'RESTART'], timeoutMs);
  if (!reply.startsWith('-')) {
    await waitForPing(url, timeoutMs);
    return `restarted Redis at ${url.host} (DEBUG RESTART)`;
  }
  const killed = await redisCommand(url, ['CLIENT', 'KILL', 'TYPE', 'normal', 'SKIPME', 'yes'], timeoutMs);
  if (killed.startsWith('-')) throw new Error(`cannot restart Redis at ${url.host}: DEBUG RESTART: ${reply.slice(1)}; CLIENT KILL: ${killed.slice(1)}`);
  return `dropped ${killed.replace(/^:/, '')} client connections of Redis at ${url.host} (DEBUG RESTART is not allowed there: ${reply.slice(1)})`;
}
