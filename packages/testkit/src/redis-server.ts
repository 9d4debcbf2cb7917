import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { createTempDir, type TempDir } from './temp-dir.js';
import { freePort } from './free-port.js';
import { exited, stopChild, trackChild } from './child-registry.js';

export interface StartRedisOptions {
  /**
   * Persist every write (`appendonly yes`, `appendfsync always`) so a restart, or a kill, loses nothing.
   * @defaultValue true
   */
  readonly persistent?: boolean;
  /** Extra `redis-server` arguments, e.g. `['--maxmemory', '10mb']`. @defaultValue [] */
  readonly args?: readonly string[];
  /** How long to wait for the server to accept connections. @defaultValue 10000 */
  readonly startTimeoutMs?: number;
}

/**
 * A real `redis-server` on 127.0.0.1, on a free port, with its data in a temp directory. `stop()`,
 * `kill()` and `start()` keep the port and the data, so tests can take Redis away and bring it back;
 * `close()` (or `await using`) stops it and removes the directory.
 */
export interface RedisServer extends AsyncDisposable {
  /** `redis://127.0.0.1:<port>/0` */
  readonly url: string;
  readonly host: string;
  readonly port: number;
  readonly dir: string;
  /** Whether the server process is running. */
  readonly running: boolean;
  /** Graceful shutdown (SIGTERM: Redis flushes and exits). The data stays for `start()`. */
  stop(): Promise<void>;
  /** Abrupt death (SIGKILL), as a crash. The data stays for `start()`. */
  kill(): Promise<void>;
  /** Starts the server again on the same port and data. No-op while running. */
  start(): Promise<void>;
  /** `stop()` then `start()`. */
  restart(): Promise<void>;
  /** Stops the server and removes its directory. Idempotent. */
  close(): Promise<void>;
}

const MISSING_MESSAGE =
  'redis-server is not installed (not found on PATH). Install it with `apt-get install redis-server`, ' +
  'or run the tests with `npm test`, which installs it when it may.';

function redisServerPath(): string {
  const found = spawnSync('sh', ['-c', 'command -v redis-server'], { encoding: 'utf8' });
  const path = found.status === 0 ? found.stdout.trim() : '';
  if (path === '') throw new Error(MISSING_MESSAGE);
  return path;
}

/** Starts a real redis-server; see RedisServer. Fails with a clear message when redis-server is missing. */
export async function startRedis(options: StartRedisOptions = {}): Promise<RedisServer> {
  const binary = redisServerPath();
  const persistent = options.persistent ?? true;
  const timeoutMs = options.startTimeoutMs ?? 10_000;
  const dir: TempDir = await createTempDir('weft-redis-');
  let child: ChildProcess | undefined;
  let port = 0;

  const launch = async (): Promise<boolean> => {
    const args = [
      '--port', String(port), '--bind', '127.0.0.1', '--dir', dir.path, '--daemonize', 'no',
      '--protected-mode', 'no', '--logfile', '', '--save', '', '--loglevel', 'notice',
      ...(persistent ? ['--appendonly', 'yes', '--appendfsync', 'always'] : ['--appendonly', 'no']),
      ...(options.args ?? []),
    ];
    const proc = spawn(binary, args, { stdio: ['ignore', 'pipe', 'pipe'] });
    trackChild(proc);
    let output = '';
    const ready = await new Promise<boolean>((resolve, reject) => {
      const timer = setTimeout(() => {
        proc.kill('SIGKILL');
        reject(new Error(`redis-server did not become ready within ${timeoutMs} ms:\n${output}`));
      }, timeoutMs);
      const onData = (data: Buffer): void => {
        output += data.toString();
        if (output.includes('Ready to accept connections')) {
          clearTimeout(timer);
          resolve(true);
        }
      };
      proc.stdout?.on('data', onData);
      proc.stderr?.on('data', onData);
      proc.once('error', (error) => {
        clearTimeout(timer);
        reject(error);
      });
      proc.once('exit', () => {
        clearTimeout(timer);
        if (/address already in use/i.test(output)) resolve(false);
        else reject(new Error(`redis-server exited before it was ready:\n${output}`));
      });
    });
    if (!ready) return false;
    // keep draining output so the pipe never fills
    proc.stdout?.resume();
    proc.stderr?.resume();
    child = proc;
    return true;
  };

  for (let tries = 0; ; tries++) {
    port = await freePort();
    if (await launch()) break;
    if (tries >= 5) throw new Error('redis-server could not bind a free port after 6 tries');
  }

  const isRunning = (): boolean => child !== undefined && child.exitCode === null && child.signalCode === null;
  const stop = async (): Promise<void> => {
    if (child) await stopChild(child, 'SIGTERM', 5_000);
  };
  const kill = async (): Promise<void> => {
    if (child && isRunning()) {
      const done = exited(child);
      child.kill('SIGKILL');
      await done;
    }
  };
  const start = async (): Promise<void> => {
    if (isRunning()) return;
    const deadline = Date.now() + timeoutMs;
    // the port may linger a moment after a kill
    while (!(await launch())) {
      if (Date.now() > deadline) throw new Error(`redis-server could not bind port ${port} again`);
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  };
  let closed: Promise<void> | undefined;
  const close = (): Promise<void> =>
    (closed ??= (async () => {
      try {
        await stop();
      } finally {
        await dir.remove();
      }
    })());

  return {
    url: `redis://127.0.0.1:${port}/0`,
    host: '127.0.0.1',
    port,
    dir: dir.path,
    get running() {
      return isRunning();
    },
    stop,
    kill,
    start,
    restart: async () => {
      await stop();
      await start();
    },
    close,
    [Symbol.asyncDispose]: close,
  };
}
