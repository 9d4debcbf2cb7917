import { type ChildProcess, fork } from 'node:child_process';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

/**
 * The size (MiB) of V8's semi-spaces (the young generation is two of them) a worker process gets unless
 * its Node options set `--max-semi-space-size` (in `execArgv` or in NODE_OPTIONS — then theirs is used).
 * Node's default on 64-bit, 16 MiB, keeps 32 MiB of young generation resident in every worker: measured
 * in bench/README.md (spill.bench.ts), a third of the fixed overhead the task memory budget does not
 * cover. The old generation is not bounded (user code may keep a large heap); only how much young
 * garbage piles up between scavenges.
 */
export const WORKER_MAX_SEMI_SPACE_MIB = 2;

const SEMI_SPACE_FLAG = /--max[-_]semi[-_]space[-_]size/;

/** `execArgv` with `--max-semi-space-size=WORKER_MAX_SEMI_SPACE_MIB` first, unless it or `nodeOptions` already sets one. */
export function withWorkerHeapFlags(execArgv: readonly string[], nodeOptions: string | undefined): string[] {
  if (execArgv.some((a) => SEMI_SPACE_FLAG.test(a)) || SEMI_SPACE_FLAG.test(nodeOptions ?? '')) return [...execArgv];
  return [`--max-semi-space-size=${WORKER_MAX_SEMI_SPACE_MIB}`, ...execArgv];
}

/**
 * glibc's mmap threshold (bytes) a worker process gets unless its environment sets
 * MALLOC_MMAP_THRESHOLD_. By default glibc raises the threshold to the size of each mmapped block it
 * frees (up to 32 MiB): after the first 4 MiB shuffle read buffer is freed, the task's 256 KiB shuffle
 * blocks and 1 MiB sort pages come from the malloc heap, whose freed memory is not given back — the RSS
 * of a sort stayed at its high-water mark (~120 MiB over the live ArrayBuffers, bench/README.md's spill
 * section). A fixed threshold keeps every buffer from 128 KiB on in its own mapping, returned when freed.
 */
export const WORKER_MALLOC_MMAP_THRESHOLD_BYTES = 128 * 1024;

/** `env` with MALLOC_MMAP_THRESHOLD_ set to WORKER_MALLOC_MMAP_THRESHOLD_BYTES unless it sets one. */
export function withWorkerMallocEnv(env: NodeJS.ProcessEnv): NodeJS.ProcessEnv {
  if (env['MALLOC_MMAP_THRESHOLD_'] !== undefined) return env;
  return { ...env, MALLOC_MMAP_THRESHOLD_: String(WORKER_MALLOC_MMAP_THRESHOLD_BYTES) };
}

/**
 * Forks a worker process (worker-main) with `execArgv` (plus withWorkerHeapFlags' default), in `cwd`,
 * with `env` (default: this process's, plus withWorkerMallocEnv's default), speaking the IPC protocol
 * with structured clone.
 */
export function forkWorker(execArgv: readonly string[], cwd: string, env?: NodeJS.ProcessEnv): ChildProcess {
  const workerEnv = withWorkerMallocEnv(env ?? process.env);
  return fork(workerEntry(), [], {
    execArgv: withWorkerHeapFlags(absoluteExecArgv(execArgv), workerEnv['NODE_OPTIONS']),
    cwd,
    serialization: 'advanced',
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    env: workerEnv,
  });
}

/** The worker's entry file: the TypeScript source when running from source, the built file otherwise. */
function workerEntry(): string {
  const ext = import.meta.url.endsWith('.ts') ? '.ts' : '.js';
  return fileURLToPath(new URL(`./worker-main${ext}`, import.meta.url));
}

/** This process's Node options without test-runner and inspector flags: what workers get by default. */
export function defaultExecArgv(): string[] {
  return process.execArgv.filter((a) => !a.startsWith('--test') && !a.startsWith('--inspect') && !a.startsWith('--experimental-test'));
}

const PRELOAD_FLAGS = new Set(['--import', '--require', '-r', '--loader', '--experimental-loader']);

/**
 * Workers may run in another directory than this process, so bare preload specifiers (`--import tsx`)
 * are resolved here, from this process's directory, to absolute file URLs.
 */
function absoluteExecArgv(execArgv: readonly string[]): string[] {
  const require = createRequire(join(process.cwd(), 'noop.js'));
  const absolute = (specifier: string): string => {
    if (/^(\.|\/|file:|node:|data:)/.test(specifier)) return specifier;
    try {
      return pathToFileURL(require.resolve(specifier)).href;
    } catch {
      return specifier;
    }
  };
  const out: string[] = [];
  for (let i = 0; i < execArgv.length; i++) {
    const arg = execArgv[i] as string;
    const eq = arg.indexOf('=');
    if (eq > 0 && PRELOAD_FLAGS.has(arg.slice(0, eq))) out.push(`${arg.slice(0, eq)}=${absolute(arg.slice(eq + 1))}`);
    else if (PRELOAD_FLAGS.has(arg) && i + 1 < execArgv.length) out.push(arg, absolute(execArgv[++i] as string));
    else out.push(arg);
  }
  return out;
}
