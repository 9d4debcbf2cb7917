import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { exited, stopChild, trackChild } from './child-registry.js';
import { freePort } from './free-port.js';
import { type RedisServer, startRedis } from './redis-server.js';
import { createTempDir, type TempDir } from './temp-dir.js';

export interface StartShuffleServerPoolOptions {
  /** How many `weft shuffle-server` processes. @defaultValue 3 */
  readonly count?: number;
  /**
   * The address each server binds (and advertises), one per server, to emulate hosts: loopback
   * addresses such as 127.0.0.2, 127.0.0.3. @defaultValue 127.0.0.2, 127.0.0.3, … (one per server)
   */
  readonly hosts?: readonly string[];
  /** The shared secret (WEFT_SHUFFLE_SECRET). @defaultValue a fixed test secret */
  readonly secret?: string;
  /** Registry heartbeat (`--heartbeat-ms`); a server is gone after 5× this. @defaultValue 200 */
  readonly heartbeatMs?: number;
  /** Start the servers with WEFT_SERVER_FAULT_HOOKS=1 (fault points armed in Redis). @defaultValue false */
  readonly faultHooks?: boolean;
  /** Extra `weft shuffle-server` arguments for every server. @defaultValue [] */
  readonly args?: readonly string[];
  /**
   * How to run `weft` (node arguments before `shuffle-server`). The process spawned must be the server
   * itself, not a shim that forks it (bin/weft.js re-runs itself under tsx), so that its pid is the
   * server's. @defaultValue packages/cli/dist/main.js of this repository when built, else its
   * src/main.ts under tsx
   */
  readonly weftCommand?: readonly string[];
  /** How long a server may take to listen. @defaultValue 20000 */
  readonly startTimeoutMs?: number;
}

/** One server of a pool. Its port, address and directory (so its server id) stay across restarts. */
export interface PoolServer {
  readonly index: number;
  readonly host: string;
  readonly port: number;
  /** `http://<host>:<port>` */
  readonly url: string;
  readonly dir: string;
  /** Stable across restarts (kept in its directory). */
  readonly serverId: string;
  /** The current process's pid (the last one, once it exited). */
  readonly pid: number;
  /** The process is running (possibly stopped by SIGSTOP). */
  readonly running: boolean;
  /** How the last process ended: its signal (e.g. 'SIGKILL') or exit code; undefined while running. */
  readonly lastExit: { readonly code: number | null; readonly signal: NodeJS.Signals | null } | undefined;
  /** Resolves when the current process exits. */
  exited(): Promise<void>;
  /** SIGKILL, resolved once it is gone. No-op when not running. */
  kill(): Promise<void>;
  /** SIGSTOP (it freezes, connections stay open). */
  pause(): void;
  /** SIGCONT. */
  resume(): void;
  /** Starts it again (same host, port, directory) unless running; a stopped one is continued. */
  ensureRunning(): Promise<void>;
  /** SIGTERM (graceful), SIGKILL after 5 s. */
  stop(): Promise<void>;
}

/**
 * A shuffle-server pool for tests, as an operator runs one: a real redis-server (the registry) and
 * `count` real `weft shuffle-server` processes, each on its own loopback address and a free port, with
 * its own directory, all registered in that Redis. `close()` (or `await using`) stops them all and
 * removes every directory.
 */
export interface ShuffleServerPool extends AsyncDisposable {
  readonly redis: RedisServer;
  /** The registry URL `weft run --shuffle-servers` takes. */
  readonly redisUrl: string;
  readonly secret: string;
  readonly servers: readonly PoolServer[];
  /** Brings every server back: continues stopped ones, restarts dead ones. */
  ensureAllRunning(): Promise<void>;
  close(): Promise<void>;
}

const POOL_OPTION_KEYS: readonly string[] = ['count', 'hosts', 'secret', 'heartbeatMs', 'faultHooks', 'args', 'weftCommand', 'startTimeoutMs'];

const DEFAULT_SECRET = 'weft-testkit-shuffle-pool-secret-0123456789';

/** Starts a pool; see ShuffleServerPool. Fails with a clear message when redis-server is missing. */
export async function startShuffleServerPool(options: StartShuffleServerPoolOptions = {}): Promise<ShuffleServerPool> {
  for (const key of Object.keys(options)) {
    if (!POOL_OPTION_KEYS.includes(key)) throw new Error(`startShuffleServerPool: unknown option ${JSON.stringify(key)}; known: ${POOL_OPTION_KEYS.join(', ')}`);
  }
  const count = options.count ?? 3;
  if (!Number.isInteger(count) || count < 1) throw new Error(`startShuffleServerPool: count must be an integer >= 1, got ${count}`);
  const hosts = options.hosts ?? Array.from({ length: count }, (_, i) => `127.0.0.${i + 2}`);
  if (hosts.length !== count) throw new Error(`startShuffleServerPool: ${hosts.length} hosts for ${count} servers`);
  const secret = options.secret ?? DEFAULT_SECRET;
  const weft = options.weftCommand ?? defaultWeftCommand();
  const timeoutMs = options.startTimeoutMs ?? 20_000;
  const redis = await startRedis({ persistent: false });
  let dir: TempDir | undefined;
  const servers: ManagedServer[] = [];
  try {
    dir = await createTempDir('weft-server-pool-');
    const base = dir.path;
    const started = await Promise.all(
      hosts.map(async (host, index) => {
        const server = new ManagedServer({
          index,
          host,
          dir: join(base, `server-${index}`),
          argv: (port) => [
            ...weft, 'shuffle-server', '--host', host, '--port', String(port), '--dir', join(base, `server-${index}`), '--redis', redis.url,
            '--heartbeat-ms', String(options.heartbeatMs ?? 200), '--json', ...(options.args ?? []),
          ],
          env: { ...process.env, WEFT_SHUFFLE_SECRET: secret, ...(options.faultHooks === true ? { WEFT_SERVER_FAULT_HOOKS: '1' } : {}) },
          timeoutMs,
        });
        servers.push(server);
        await server.start(await freePort(host));
        return server;
      }),
    );
    let closed: Promise<void> | undefined;
    const close = (): Promise<void> =>
      (closed ??= (async () => {
        await Promise.allSettled(started.map((s) => s.stop()));
        await Promise.allSettled([redis.close(), dir?.remove()]);
      })());
    return {
      redis,
      redisUrl: redis.url,
      secret,
      servers: started,
      ensureAllRunning: async () => {
        await Promise.all(started.map((s) => s.ensureRunning()));
      },
      close,
      [Symbol.asyncDispose]: close,
    };
  } catch (error) {
    await Promise.allSettled(servers.map((s) => s.stop()));
    await Promise.allSettled([redis.close(), dir?.remove()]);
    throw error;
  }
}

function defaultWeftCommand(): string[] {
  const dist = fileURLToPath(new URL('../../cli/dist/main.js', import.meta.url));
  if (existsSync(dist)) return [dist];
  return ['--conditions=source', '--import', import.meta.resolve('tsx'), fileURLToPath(new URL('../../cli/src/main.ts', import.meta.url))];
}

interface ManagedServerSpec {
  readonly index: number;
  readonly host: string;
  readonly dir: string;
  readonly argv: (port: number) => string[];
  readonly env: NodeJS.ProcessEnv;
  readonly timeoutMs: number;
}

class ManagedServer implements PoolServer {
  readonly index: number;
  readonly host: string;
  readonly dir: string;
  port = 0;
  serverId = '';
  lastExit: PoolServer['lastExit'];
  #child: ChildProcess | undefined;
  #paused = false;

  constructor(private readonly spec: ManagedServerSpec) {
    this.index = spec.index;
    this.host = spec.host;
    this.dir = spec.dir;
  }

  get url(): string {
    return `http://${this.host}:${this.port}`;
  }

  get pid(): number {
    return this.#child?.pid ?? 0;
  }

  get running(): boolean {
    const child = this.#child;
    return child !== undefined && child.exitCode === null && child.signalCode === null;
  }

  async start(port: number): Promise<void> {
    const deadline = Date.now() + this.spec.timeoutMs;
    for (;;) {
      const outcome = await this.#launch(port);
      if (outcome === 'listening') return;
      // the port may linger a moment after a kill (or was taken meanwhile on a first start)
      if (Date.now() > deadline) throw new Error(`weft shuffle-server ${this.index} could not listen on ${this.host}:${port}: ${outcome}`);
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }

  async #launch(port: number): Promise<'listening' | string> {
    const child = spawn(process.execPath, this.spec.argv(port), { env: this.spec.env, stdio: ['ignore', 'pipe', 'pipe'] });
    trackChild(child);
    this.lastExit = undefined;
    this.#paused = false;
    let stderr = '';
    child.stderr!.on('data', (d: Buffer) => {
      stderr = (stderr + d.toString()).slice(-8000);
    });
    child.once('exit', (code, signal) => {
      this.lastExit = { code, signal };
    });
    const outcome = await new Promise<string>((resolve) => {
      const timer = setTimeout(() => {
        child.kill('SIGKILL');
        resolve(`not listening after ${this.spec.timeoutMs} ms:\n${stderr}`);
      }, this.spec.timeoutMs);
      createInterface({ input: child.stdout! }).on('line', (line) => {
        try {
          const parsed = JSON.parse(line) as { listening?: string; serverId?: string };
          if (typeof parsed.listening === 'string' && typeof parsed.serverId === 'string') {
            clearTimeout(timer);
            this.serverId = parsed.serverId;
            resolve('listening');
          }
        } catch {
          // not the listening line
        }
      });
      child.once('exit', (code, signal) => {
        clearTimeout(timer);
        resolve(`exited (${code ?? signal}) before listening:\n${stderr}`);
      });
    });
    if (outcome === 'listening') {
      this.#child = child;
      this.port = port;
    }
    return outcome;
  }

  exited(): Promise<void> {
    return this.#child === undefined ? Promise.resolve() : exited(this.#child);
  }

  async kill(): Promise<void> {
    const child = this.#child;
    if (child === undefined || !this.running) return;
    const done = exited(child);
    child.kill('SIGKILL');
    await done;
  }

  pause(): void {
    if (this.running) {
      this.#child?.kill('SIGSTOP');
      this.#paused = true;
    }
  }

  resume(): void {
    if (this.running) this.#child?.kill('SIGCONT');
    this.#paused = false;
  }

  async ensureRunning(): Promise<void> {
    if (this.running) {
      // it may have been stopped by the test or by an armed fault point: SIGCONT is harmless otherwise
      this.#child?.kill('SIGCONT');
      this.#paused = false;
      return;
    }
    await this.start(this.port);
  }

  async stop(): Promise<void> {
    const child = this.#child;
    if (child === undefined) return;
    if (this.#paused) this.resume();
    child.kill('SIGCONT');
    await stopChild(child, 'SIGTERM', 5_000);
  }
}
