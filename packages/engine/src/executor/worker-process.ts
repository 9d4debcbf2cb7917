import { type ChildProcess, fork } from 'node:child_process';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

/** Forks a worker process (worker-main) with `execArgv`, in `cwd`, speaking the IPC protocol with structured clone. */
export function forkWorker(execArgv: readonly string[], cwd: string, env?: NodeJS.ProcessEnv): ChildProcess {
  return fork(workerEntry(), [], {
    execArgv: absoluteExecArgv(execArgv),
    cwd,
    serialization: 'advanced',
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    ...(env === undefined ? {} : { env }),
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
