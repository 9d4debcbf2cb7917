// A cluster for tests, as an operator runs one: a real redis-server (registry, metadata, event log), a real
// s3rver (blocking partitions), and `weft task-executor` processes, each bound to its own loopback address
// (127.0.0.2, 127.0.0.3, …) with a directory of its own.
import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
// @ts-expect-error plain JavaScript next to the shim, no declarations
import { weftNodeArgs } from '@weft/cli/built-code';
import { freePort, type RedisSentinelGroup, type RedisServer, type S3Server, startRedis, startRedisSentinelGroup, startS3Server } from '@weft/testkit';

export const root = fileURLToPath(new URL('../../..', import.meta.url));
const bin = join(root, 'packages', 'cli', 'bin', 'weft.js');
/** The executor process itself (not bin/weft.js's shim), so its pid is the executor's; built code when fresh. */
const weftCommand: string[] = weftNodeArgs(join(root, 'packages', 'cli'));
export const SECRET = 'cluster-test-secret-0123456789';

export interface RunResult {
  readonly code: number | null;
  readonly stdout: string;
  readonly stderr: string;
}

export interface ClusterExecutor {
  readonly host: string;
  readonly dir: string;
  readonly id: string;
  readonly child: ChildProcess;
  /** Everything it wrote on stderr so far. */
  stderr(): string;
  exited(): Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

/** A `weft shuffle-server` registered in the cluster's Redis. */
export interface ClusterShuffleServer {
  readonly host: string;
  readonly url: string;
  readonly serverId: string;
  readonly child: ChildProcess;
  exited(): Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

export class TestCluster implements AsyncDisposable {
  readonly executors: ClusterExecutor[] = [];
  readonly shuffleServers: ClusterShuffleServer[] = [];
  private constructor(
    private readonly redisServer: RedisServer | undefined,
    /** With `start({ sentinel: true })`: a primary, a replica and three Sentinels. */
    readonly sentinel: RedisSentinelGroup | undefined,
    readonly s3: S3Server,
    readonly dir: string,
  ) {}

  /** A plain redis-server, or with `sentinel` a Sentinel-managed one (every Redis URL is then `redis+sentinel://`). */
  static async start(options: { readonly sentinel?: boolean } = {}): Promise<TestCluster> {
    const [redis, s3] = await Promise.all([options.sentinel === true ? startRedisSentinelGroup({ replicas: 1, sentinels: 3 }) : startRedis({ persistent: false }), startS3Server({ buckets: ['weft-cluster'] })]);
    const dir = await mkdtemp(join(tmpdir(), 'weft-cluster-'));
    return 'primary' in redis ? new TestCluster(undefined, redis, s3, dir) : new TestCluster(redis, undefined, s3, dir);
  }

  /** The plain redis-server (not for a Sentinel cluster). */
  get redis(): RedisServer {
    if (this.redisServer === undefined) throw new Error('a Sentinel cluster has no single redis-server');
    return this.redisServer;
  }

  /** A Redis URL of database `db`: the plain server's, or the Sentinels'. */
  redisUrl(db: number): string {
    return this.sentinel !== undefined ? this.sentinel.url.replace(/\/0$/, `/${db}`) : `redis://127.0.0.1:${this.redis.port}/${db}`;
  }

  /** The cluster's Redis (registry) URL: database 1; metadata and the event log go to database 0. */
  get clusterUrl(): string {
    return this.redisUrl(1);
  }

  get env(): Record<string, string> {
    return { AWS_ENDPOINT_URL_S3: this.s3.endpoint, AWS_REGION: this.s3.region, AWS_ACCESS_KEY_ID: this.s3.accessKeyId, AWS_SECRET_ACCESS_KEY: this.s3.secretAccessKey, WEFT_SHUFFLE_SECRET: SECRET };
  }

  /** Starts `weft task-executor` on `host` and resolves once it printed that it registered. */
  async startExecutor(host: string, extra: readonly string[] = []): Promise<ClusterExecutor> {
    const dir = await mkdtemp(join(this.dir, `executor-${host}-`));
    const child = spawn(process.execPath, [...weftCommand, 'task-executor', '--cluster', this.clusterUrl, '--host', host, '--dir', dir, '--heartbeat-ms', '200', '--heartbeat-ttl-ms', '1500', ...extra], {
      cwd: dir,
      env: { ...process.env, ...this.env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stderr = '';
    child.stderr?.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    const exit = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => child.once('exit', (code, signal) => resolve({ code, signal })));
    const id = await new Promise<string>((resolve, reject) => {
      const lines = createInterface({ input: child.stdout! });
      lines.on('line', (line) => {
        const match = /^task executor (\S+) registered$/.exec(line);
        if (match !== null) resolve(match[1] as string);
      });
      void exit.then(({ code, signal }) => reject(new Error(`task executor on ${host} exited (${signal ?? code}) before it registered: ${stderr}`)));
    });
    const executor: ClusterExecutor = { host, dir, id, child, stderr: () => stderr, exited: () => exit };
    this.executors.push(executor);
    return executor;
  }

  /**
   * Starts `weft shuffle-server` on `host`, registered in the cluster's Redis (`--redis` = the cluster
   * URL), and resolves once it listens.
   */
  async startShuffleServer(host: string): Promise<ClusterShuffleServer> {
    const dir = await mkdtemp(join(this.dir, `shuffle-server-${host}-`));
    const port = await freePort(host);
    const child = spawn(process.execPath, [...weftCommand, 'shuffle-server', '--host', host, '--port', String(port), '--dir', dir, '--redis', this.clusterUrl, '--heartbeat-ms', '200', '--json'], {
      cwd: dir,
      env: { ...process.env, ...this.env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stderr = '';
    child.stderr?.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    const exit = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => child.once('exit', (code, signal) => resolve({ code, signal })));
    const listening = await new Promise<{ listening: string; serverId: string }>((resolve, reject) => {
      createInterface({ input: child.stdout! }).on('line', (line) => {
        try {
          const parsed = JSON.parse(line) as { listening?: unknown; serverId?: unknown };
          if (typeof parsed.listening === 'string' && typeof parsed.serverId === 'string') resolve({ listening: parsed.listening, serverId: parsed.serverId });
        } catch {
          // not the listening line
        }
      });
      void exit.then(({ code, signal }) => reject(new Error(`shuffle server on ${host} exited (${signal ?? code}) before it listened: ${stderr}`)));
    });
    const server: ClusterShuffleServer = { host, url: listening.listening, serverId: listening.serverId, child, exited: () => exit };
    this.shuffleServers.push(server);
    return server;
  }

  /**
   * `weft run <job> --cluster … --store s3://… --meta redis://… --json -- <jobArgs>` in the cluster's directory
   * (`direct`: without the shim); the store is a fresh S3 prefix unless `store` names one (runs of one job id).
   */
  run(job: string, args: readonly string[], jobArgs: readonly string[], onStart?: (child: ChildProcess) => void, direct = false, store?: string): Promise<RunResult> {
    return this.#run(job, ['--store', store ?? `s3://weft-cluster/${Math.random().toString(36).slice(2)}`, '--meta', this.redisUrl(0)], args, jobArgs, onStart, direct);
  }

  /**
   * `weft run <job> --cluster … --shuffle-servers <the cluster URL> --json -- <jobArgs>`: blocking partitions on
   * the shuffle servers registered in the cluster's Redis, the event log in that Redis too.
   */
  runOnShuffleServers(job: string, args: readonly string[], jobArgs: readonly string[], onStart?: (child: ChildProcess) => void, direct = false): Promise<RunResult> {
    return this.#run(job, ['--shuffle-servers', this.clusterUrl], args, jobArgs, onStart, direct);
  }

  #run(job: string, shuffle: readonly string[], args: readonly string[], jobArgs: readonly string[], onStart: ((child: ChildProcess) => void) | undefined, direct: boolean): Promise<RunResult> {
    return new Promise((resolve) => {
      const child = execFile(
        process.execPath,
        // direct: the job master's own process (no bin/weft.js shim), so a test can kill exactly it
        [...(direct ? weftCommand : [bin]), 'run', join(root, 'examples', job), '--cluster', this.clusterUrl, ...shuffle, '--json', ...args, '--', ...jobArgs],
        { cwd: this.dir, maxBuffer: 256 * 1024 * 1024, env: { ...process.env, ...this.env } },
        (error, stdout, stderr) => resolve({ code: error === null ? 0 : typeof error.code === 'number' ? error.code : null, stdout, stderr }),
      );
      onStart?.(child);
    });
  }

  async [Symbol.asyncDispose](): Promise<void> {
    for (const e of [...this.executors, ...this.shuffleServers]) if (e.child.exitCode === null && e.child.signalCode === null) e.child.kill('SIGKILL');
    await Promise.all([...this.executors, ...this.shuffleServers].map((e) => e.exited()));
    await Promise.allSettled([this.redisServer?.[Symbol.asyncDispose](), this.sentinel?.close(), this.s3[Symbol.asyncDispose]()]);
    await rm(this.dir, { recursive: true, force: true });
  }
}
