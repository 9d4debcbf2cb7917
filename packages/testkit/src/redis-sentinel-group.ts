import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { exited, stopChild, trackChild } from './child-registry.js';
import { freePort } from './free-port.js';
import { type RedisServer, startRedis } from './redis-server.js';
import { createTempDir } from './temp-dir.js';

export interface StartRedisSentinelGroupOptions {
  /** Replicas of the primary. @defaultValue 1 */
  readonly replicas?: number;
  /** Sentinels watching it (a majority must agree to fail over). @defaultValue 3 */
  readonly sentinels?: number;
  /** The name the Sentinels know the primary by. @defaultValue 'weft' */
  readonly name?: string;
  /** `sentinel down-after-milliseconds`: how long the primary may not answer before it is down. @defaultValue 1000 */
  readonly downAfterMs?: number;
  /** `sentinel failover-timeout`. @defaultValue 5000 */
  readonly failoverTimeoutMs?: number;
  /** How long start-up (every process, Sentinels knowing each other and the replicas) may take. @defaultValue 30000 */
  readonly startTimeoutMs?: number;
}

/** One `redis-server --sentinel`. */
export interface SentinelProcess {
  readonly host: string;
  readonly port: number;
  readonly running: boolean;
  /** SIGTERM (SIGKILL after 5 s). */
  stop(): Promise<void>;
  /** SIGKILL. */
  kill(): Promise<void>;
}

/**
 * A Sentinel-managed Redis: a primary and its replicas (real `redis-server`s, each persisting every write),
 * and `redis-server --sentinel` processes with generated configs, all on 127.0.0.1 on free ports. `url` is
 * the `redis+sentinel://…/name/0` URL for it. `nodes[0]` is the first primary; after a failover ask
 * `primary()`. A killed node brought back with `start()` is turned into a replica of the current primary by
 * the Sentinels. `close()` (or `await using`) stops everything and removes the directories.
 */
export interface RedisSentinelGroup extends AsyncDisposable {
  readonly url: string;
  readonly name: string;
  readonly nodes: readonly RedisServer[];
  readonly sentinels: readonly SentinelProcess[];
  /** The node every running Sentinel names as the primary now (throws if they disagree or name none). */
  primary(): Promise<RedisServer>;
  /**
   * Waits until every running Sentinel names a primary other than `previous` and that node says it is
   * one (ROLE); returns it.
   */
  waitForFailover(previous: RedisServer, timeoutMs?: number): Promise<RedisServer>;
  /** Waits until the current primary has `count` replicas online (INFO replication). */
  waitForReplicas(count: number, timeoutMs?: number): Promise<void>;
  close(): Promise<void>;
}

function cli(port: number, ...args: string[]): Promise<string[]> {
  return new Promise((resolve, reject) => {
    execFile('redis-cli', ['-h', '127.0.0.1', '-p', String(port), '--raw', ...args], { timeout: 5_000 }, (error, stdout) => {
      if (error !== null) reject(error);
      else resolve(stdout.split('\n').filter((line) => line !== ''));
    });
  });
}

/** `redis-cli --raw` lines of a flat key/value reply as a map. */
async function fields(port: number, ...args: string[]): Promise<Map<string, string>> {
  const lines = await new Promise<string[]>((resolve, reject) => {
    execFile('redis-cli', ['-h', '127.0.0.1', '-p', String(port), '--raw', ...args], { timeout: 5_000 }, (error, stdout) => {
      if (error !== null) reject(error);
      else resolve(stdout.split('\n'));
    });
  });
  const out = new Map<string, string>();
  for (let i = 0; i + 1 < lines.length; i += 2) out.set(lines[i] as string, lines[i + 1] as string);
  return out;
}

async function poll<T>(what: string, timeoutMs: number, probe: () => Promise<T | undefined>): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    try {
      const value = await probe();
      if (value !== undefined) return value;
    } catch (error) {
      last = error;
    }
    if (Date.now() > deadline) throw new Error(`${what} did not happen within ${timeoutMs} ms${last === undefined ? '' : `: ${(last as Error).message}`}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

async function startSentinel(request: { dir: string; index: number; name: string; primaryPort: number; quorum: number; downAfterMs: number; failoverTimeoutMs: number; timeoutMs: number }): Promise<SentinelProcess> {
  for (let tries = 0; ; tries++) {
    const port = await freePort();
    const config = join(request.dir, `sentinel-${request.index}.conf`);
    await writeFile(
      config,
      [
        `port ${port}`, 'bind 127.0.0.1', 'daemonize no', 'protected-mode no', `dir ${request.dir}`, 'logfile ""',
        `sentinel monitor ${request.name} 127.0.0.1 ${request.primaryPort} ${request.quorum}`,
        `sentinel down-after-milliseconds ${request.name} ${request.downAfterMs}`,
        `sentinel failover-timeout ${request.name} ${request.failoverTimeoutMs}`,
        `sentinel parallel-syncs ${request.name} 1`,
        '',
      ].join('\n'),
    );
    const child: ChildProcess = spawn('redis-server', [config, '--sentinel'], { stdio: ['ignore', 'pipe', 'pipe'] });
    trackChild(child);
    let output = '';
    const ready = await new Promise<boolean>((resolve, reject) => {
      const timer = setTimeout(() => {
        child.kill('SIGKILL');
        reject(new Error(`redis sentinel did not start within ${request.timeoutMs} ms:\n${output}`));
      }, request.timeoutMs);
      const onData = (data: Buffer): void => {
        output += data.toString();
        if (output.includes('+monitor master')) {
          clearTimeout(timer);
          resolve(true);
        }
      };
      child.stdout?.on('data', onData);
      child.stderr?.on('data', onData);
      child.once('exit', () => {
        clearTimeout(timer);
        if (/address already in use/i.test(output)) resolve(false);
        else reject(new Error(`redis sentinel exited before it was ready:\n${output}`));
      });
    });
    if (!ready) {
      if (tries >= 5) throw new Error('redis sentinel could not bind a free port after 6 tries');
      continue;
    }
    child.stdout?.resume();
    child.stderr?.resume();
    const running = (): boolean => child.exitCode === null && child.signalCode === null;
    return {
      host: '127.0.0.1',
      port,
      get running() {
        return running();
      },
      kill: async () => {
        if (!running()) return;
        const done = exited(child);
        child.kill('SIGKILL');
        await done;
      },
      stop: () => stopChild(child, 'SIGTERM', 5_000),
    };
  }
}

/** Starts a primary, its replicas and the Sentinels; see RedisSentinelGroup. Resolves once the Sentinels know every replica and each other. */
export async function startRedisSentinelGroup(options: StartRedisSentinelGroupOptions = {}): Promise<RedisSentinelGroup> {
  const replicaCount = options.replicas ?? 1;
  const sentinelCount = options.sentinels ?? 3;
  const name = options.name ?? 'weft';
  const timeoutMs = options.startTimeoutMs ?? 30_000;
  const nodes: RedisServer[] = [];
  const sentinels: SentinelProcess[] = [];
  const dir = await createTempDir('weft-sentinel-');
  let closed: Promise<void> | undefined;
  const close = (): Promise<void> =>
    (closed ??= (async () => {
      await Promise.allSettled(sentinels.map((s) => s.stop()));
      await Promise.allSettled(nodes.map((n) => n.close()));
      await dir.remove();
    })());
  try {
    const first = await startRedis();
    nodes.push(first);
    for (let i = 0; i < replicaCount; i++) nodes.push(await startRedis({ args: ['--replicaof', '127.0.0.1', String(first.port)] }));
    const quorum = Math.floor(sentinelCount / 2) + 1;
    for (let i = 0; i < sentinelCount; i++) {
      sentinels.push(
        await startSentinel({
          dir: dir.path, index: i, name, primaryPort: first.port, quorum, timeoutMs,
          downAfterMs: options.downAfterMs ?? 1_000, failoverTimeoutMs: options.failoverTimeoutMs ?? 5_000,
        }),
      );
    }
    const group: RedisSentinelGroup = {
      url: `redis+sentinel://${sentinels.map((s) => `${s.host}:${s.port}`).join(',')}/${name}/0`,
      name,
      nodes,
      sentinels,
      primary: async () => {
        const ports = new Set<string>();
        for (const s of sentinels.filter((x) => x.running)) ports.add((await cli(s.port, 'SENTINEL', 'get-master-addr-by-name', name))[1] ?? '');
        const [port] = [...ports];
        const node = nodes.find((n) => String(n.port) === port);
        if (ports.size !== 1 || node === undefined) throw new Error(`the Sentinels name ${[...ports].join(' and ') || 'no'} primary`);
        return node;
      },
      waitForFailover: (previous, waitMs = 30_000) =>
        poll(`a failover away from port ${previous.port}`, waitMs, async () => {
          const node = await group.primary();
          if (node === previous) return undefined;
          const role = await cli(node.port, 'ROLE');
          return role[0]?.includes('master') ? node : undefined;
        }),
      waitForReplicas: (count, waitMs = 30_000) =>
        poll(`${count} replicas online`, waitMs, async () => {
          const node = await group.primary();
          const info = (await cli(node.port, 'INFO', 'replication')).join('\n');
          return (info.match(/state=online/g) ?? []).length >= count ? true : undefined;
        }).then(() => undefined),
      close,
      [Symbol.asyncDispose]: close,
    };
    await poll('the Sentinels knowing every replica and each other', timeoutMs, async () => {
      for (const s of sentinels) {
        const master = await fields(s.port, 'SENTINEL', 'MASTER', name);
        if (Number(master.get('num-slaves')) < replicaCount || Number(master.get('num-other-sentinels')) < sentinelCount - 1) return undefined;
      }
      return true;
    });
    await group.waitForReplicas(replicaCount, timeoutMs);
    return group;
  } catch (error) {
    await close();
    throw error;
  }
}
