import type { ChildProcess } from 'node:child_process';
import { EngineError } from '../errors/engine-error.js';
import { defaultExecArgv, forkWorker } from './worker-process.js';

export interface PrestartWorkersOptions {
  readonly workers: number;
  readonly cwd: string;
  /** @defaultValue process.execArgv without test-runner and inspector flags */
  readonly execArgv?: readonly string[];
  /** Modules (specifiers or file URLs: the job module, the shuffle modules) each worker starts importing at once. */
  readonly preload?: readonly string[];
}

/**
 * Worker processes forked ahead of a job, so their start-up (Node, the TypeScript loader, the engine, the
 * shuffle modules, the job module) overlaps the job master's own. Hand them to `runJob({ prestartedWorkers })`,
 * which takes them over, or `close()` them.
 */
export class PrestartedWorkers implements AsyncDisposable {
  readonly #children: ChildProcess[];
  #taken = false;

  constructor(options: PrestartWorkersOptions) {
    const env = { ...process.env, WEFT_WORKER_PRELOAD: JSON.stringify(options.preload ?? []) };
    this.#children = Array.from({ length: options.workers }, () => forkWorker(options.execArgv ?? defaultExecArgv(), options.cwd, env));
  }

  get count(): number {
    return this.#children.length;
  }

  /** @internal — the pool takes the processes; they are then closed with the job. */
  take(): ChildProcess[] {
    if (this.#taken) throw new EngineError('WEFT_ERR_ILLEGAL_STATE', 'prestarted workers were already used by a job');
    this.#taken = true;
    return this.#children;
  }

  /** Kills the processes unless a job took them. Idempotent. */
  async close(): Promise<void> {
    if (this.#taken) return;
    this.#taken = true;
    await Promise.all(
      this.#children.map((child) => {
        if (child.exitCode !== null || child.signalCode !== null) return undefined;
        const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
        child.kill('SIGKILL');
        return exited;
      }),
    );
  }

  async [Symbol.asyncDispose](): Promise<void> {
    await this.close();
  }
}

/** Forks worker processes ahead of a job (see PrestartedWorkers). */
export function prestartWorkers(options: PrestartWorkersOptions): PrestartedWorkers {
  return new PrestartedWorkers(options);
}
