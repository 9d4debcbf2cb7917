import { type ChildProcess, spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const bin = fileURLToPath(new URL('../../bin/weft.js', import.meta.url));

/** A `weft …` process started by a test: its output so far, a wait for a line, its exit. */
export interface WeftProcess extends AsyncDisposable {
  readonly child: ChildProcess;
  stdout(): string;
  stderr(): string;
  /** Resolves with the first match of `pattern` in stdout + stderr (waiting for it), rejects if the process exits first. */
  waitFor(pattern: RegExp): Promise<RegExpMatchArray>;
  /** The exit code (null when killed by a signal). */
  readonly exited: Promise<number | null>;
}

/** Starts `weft <args>` (the bin shim, as a user runs it) in `cwd`. Disposing kills it if it still runs. */
export function startWeft(args: readonly string[], options: { cwd: string; env?: NodeJS.ProcessEnv }): WeftProcess {
  const child = spawn(process.execPath, [bin, ...args], { cwd: options.cwd, env: { ...process.env, ...options.env }, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  let err = '';
  const waiters = new Set<() => void>();
  const wake = (): void => {
    for (const w of [...waiters]) w();
  };
  child.stdout?.setEncoding('utf8').on('data', (t: string) => ((out += t), wake()));
  child.stderr?.setEncoding('utf8').on('data', (t: string) => ((err += t), wake()));
  let done = false;
  const exited = new Promise<number | null>((resolve) =>
    child.once('exit', (code) => {
      done = true;
      wake();
      resolve(code);
    }),
  );
  return {
    child,
    stdout: () => out,
    stderr: () => err,
    exited,
    waitFor(pattern) {
      return new Promise((resolve, reject) => {
        const check = (): void => {
          const match = (out + err).match(pattern);
          if (match !== null) {
            waiters.delete(check);
            resolve(match);
          } else if (done) {
            waiters.delete(check);
            reject(new Error(`weft ${args.join(' ')} exited before printing ${pattern}:\n${out}\n${err}`));
          }
        };
        waiters.add(check);
        check();
      });
    },
    async [Symbol.asyncDispose]() {
      if (!done) {
        child.kill('SIGKILL');
        await exited;
      }
    },
  };
}
