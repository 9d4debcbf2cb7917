import { type ChildProcess, spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import type { ShuffleServerOptions } from '@weft/shuffle-remote/server';

const FIXTURE = fileURLToPath(new URL('../fixtures/server-process.ts', import.meta.url));

export interface ServerProcess extends AsyncDisposable {
  readonly child: ChildProcess;
  readonly url: string;
  readonly serverId: string;
  /** Kills it (SIGKILL by default: a crash) and waits for the exit. */
  kill(signal?: NodeJS.Signals): Promise<number | null>;
}

/** A shuffle server in a child process (fixtures/server-process.ts); resolves once it listens. */
export async function startServerProcess(options: Omit<ShuffleServerOptions, 'logger'>): Promise<ServerProcess> {
  const child = spawn(process.execPath, ['--conditions=source', '--import', 'tsx', FIXTURE, JSON.stringify(options)], {
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true' },
  });
  let stderr = '';
  child.stderr!.on('data', (d: Buffer) => {
    stderr += d.toString();
  });
  const exit = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  const started = await new Promise<{ url: string; serverId: string }>((resolve, reject) => {
    createInterface({ input: child.stdout! }).on('line', (line) => {
      try {
        const event = JSON.parse(line) as { event?: string; url: string; serverId: string };
        if (event.event === 'listening') resolve(event);
      } catch {
        // not ours
      }
    });
    void exit.then((code) => reject(new Error(`the server process exited (${code}) before listening:\n${stderr}`)));
  });
  const kill = async (signal: NodeJS.Signals = 'SIGKILL'): Promise<number | null> => {
    if (child.exitCode === null && child.signalCode === null) child.kill(signal);
    return exit;
  };
  return { child, ...started, kill, [Symbol.asyncDispose]: async () => void (await kill()) };
}
