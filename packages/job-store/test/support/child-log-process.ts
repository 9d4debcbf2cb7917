import { type ChildProcess, spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';

/** A log-child.ts process: `next()` resolves with its next stdout line. Killed by `kill()` or at exit. */
export interface ChildLogProcess extends AsyncDisposable {
  readonly process: ChildProcess;
  next(): Promise<string>;
  send(line: string): void;
  kill(signal?: NodeJS.Signals): Promise<void>;
}

const script = fileURLToPath(new URL('./log-child.ts', import.meta.url));

export function startChildLog(request: { url: string; jobId: string; keyPrefix: string }): ChildLogProcess {
  const child = spawn(process.execPath, ['--conditions=source', '--import', 'tsx', script, request.url, request.jobId, request.keyPrefix], {
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  const lines: string[] = [];
  const waiting: ((line: string) => void)[] = [];
  let buffered = '';
  let stderr = '';
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  child.stdout.on('data', (chunk: Buffer) => {
    buffered += chunk.toString();
    for (let i = buffered.indexOf('\n'); i !== -1; i = buffered.indexOf('\n')) {
      const line = buffered.slice(0, i);
      buffered = buffered.slice(i + 1);
      const waiter = waiting.shift();
      if (waiter === undefined) lines.push(line);
      else waiter(line);
    }
  });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const killAtExit = (): void => void child.kill('SIGKILL');
  process.once('exit', killAtExit);
  const kill = async (signal: NodeJS.Signals = 'SIGKILL'): Promise<void> => {
    if (child.exitCode === null && child.signalCode === null) child.kill(signal);
    await exited;
    process.off('exit', killAtExit);
  };
  return {
    process: child,
    next: () => {
      const line = lines.shift();
      if (line !== undefined) return Promise.resolve(line);
      return Promise.race([
        new Promise<string>((resolve) => waiting.push(resolve)),
        exited.then(() => new Promise<string>((_, reject) => setImmediate(() => reject(new Error(`log child exited (${child.exitCode ?? child.signalCode}): ${stderr}`))))),
      ]);
    },
    send: (line) => void child.stdin.write(`${line}\n`),
    kill,
    [Symbol.asyncDispose]: () => kill(),
  };
}
