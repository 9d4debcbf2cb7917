import { type ChildProcess, spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';

const FIXTURE = fileURLToPath(new URL('../fixtures/shuffle-process.ts', import.meta.url));

/** A line of JSON a fixture process printed. */
export type FixtureEvent = { readonly event: string } & Record<string, unknown>;

/**
 * A fixture process (`node --conditions=source --import tsx fixtures/shuffle-process.ts <command> <json>`)
 * that prints one JSON event per line. Killed on dispose if still running.
 */
export interface FixtureProcess extends AsyncDisposable {
  readonly child: ChildProcess;
  /** The next event (skipping others) named `name`; rejects if the process exits first. */
  until(name: string): Promise<FixtureEvent>;
  /** Writes a line to its stdin. */
  send(line: string): void;
  kill(signal?: NodeJS.Signals): Promise<void>;
  /** Resolves with the exit code once it exits. */
  exited(): Promise<number | null>;
}

export function startFixture(command: string, args: unknown): FixtureProcess {
  const child = spawn(process.execPath, ['--conditions=source', '--import', 'tsx', FIXTURE, command, JSON.stringify(args)], {
    stdio: ['pipe', 'pipe', 'pipe'],
    env: { ...process.env, AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true' },
  });
  const events: FixtureEvent[] = [];
  const waiters: { name: string; resolve: (e: FixtureEvent) => void; reject: (e: Error) => void }[] = [];
  let stderr = '';
  child.stderr!.on('data', (d: Buffer) => {
    stderr += d.toString();
  });
  const exit = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  createInterface({ input: child.stdout! }).on('line', (line) => {
    let event: FixtureEvent;
    try {
      event = JSON.parse(line) as FixtureEvent;
    } catch {
      return;
    }
    const at = waiters.findIndex((w) => w.name === event.event);
    if (at >= 0) waiters.splice(at, 1)[0]!.resolve(event);
    else events.push(event);
  });
  void exit.then((code) => {
    for (const w of waiters.splice(0)) w.reject(new Error(`fixture ${command} exited (${code}) before "${w.name}":\n${stderr}`));
  });
  const kill = async (signal: NodeJS.Signals = 'SIGKILL'): Promise<void> => {
    if (child.exitCode === null && child.signalCode === null) child.kill(signal);
    await exit;
  };
  return {
    child,
    until(name) {
      const at = events.findIndex((e) => e.event === name);
      if (at >= 0) return Promise.resolve(events.splice(at, 1)[0]!);
      if (child.exitCode !== null || child.signalCode !== null) return Promise.reject(new Error(`fixture ${command} already exited:\n${stderr}`));
      return new Promise((resolve, reject) => waiters.push({ name, resolve, reject }));
    },
    send(line) {
      child.stdin!.write(`${line}\n`);
    },
    kill,
    exited: () => exit,
    [Symbol.asyncDispose]: () => kill(),
  };
}
