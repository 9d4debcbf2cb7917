// Producer processes for the cross-process tests: each runs fixtures/producer-process.ts, a network shuffle
// environment of its own on the loopback address it is given (as on another host), driven by messages.
import { type ChildProcess, fork } from 'node:child_process';
import { once } from 'node:events';
import { fileURLToPath } from 'node:url';
import type { TaskExecutorAddress } from '@weft/shuffle-network';

const CHILD = fileURLToPath(new URL('../fixtures/producer-process.ts', import.meta.url));

export interface Producer {
  readonly child: ChildProcess;
  readonly address: TaskExecutorAddress;
  next(op: string): Promise<Record<string, unknown>>;
  stop(): Promise<void>;
}

/** Starts a producer process on `host` as task executor `id`; resolves once its environment listens. */
export async function startProducer(host: string, id: string): Promise<Producer> {
  const child = fork(CHILD, [host, id], { execArgv: ['--conditions=source', '--import', 'tsx'], stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  const inbox: Record<string, unknown>[] = [];
  const waiters: (() => void)[] = [];
  child.on('message', (message: Record<string, unknown>) => {
    inbox.push(message);
    waiters.splice(0).forEach((wake) => wake());
  });
  const next = async (op: string): Promise<Record<string, unknown>> => {
    for (;;) {
      const index = inbox.findIndex((m) => m['op'] === op || m['op'] === 'error');
      if (index >= 0) {
        const [message] = inbox.splice(index, 1);
        if (message!['op'] === 'error') throw new Error(`producer process: ${String(message!['message'])}`);
        return message!;
      }
      if (child.exitCode !== null || child.signalCode !== null) throw new Error(`producer process exited (${child.exitCode ?? child.signalCode})`);
      await Promise.race([new Promise<void>((resolve) => waiters.push(resolve)), once(child, 'exit')]);
    }
  };
  const { address } = (await next('address')) as unknown as { address: TaskExecutorAddress };
  return {
    child,
    address,
    next,
    async stop() {
      if (child.exitCode !== null || child.signalCode !== null) return;
      const exited = once(child, 'exit');
      child.kill('SIGKILL');
      await exited;
    },
  };
}
