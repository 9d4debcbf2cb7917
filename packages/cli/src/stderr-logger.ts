import type { LogFields, Logger } from '@weft/shuffle-api';
import type { CliIo } from './command.js';

/** A logger writing one JSON line per entry to stderr; debug/info only with --verbose. */
export function stderrLogger(io: CliIo, verbose: boolean, bindings: LogFields = {}): Logger {
  const write = (level: string) => (fieldsOrMessage: LogFields | string, message?: string) => {
    const fields = typeof fieldsOrMessage === 'string' ? {} : fieldsOrMessage;
    const msg = typeof fieldsOrMessage === 'string' ? fieldsOrMessage : (message ?? '');
    io.stderr.write(`${JSON.stringify({ time: new Date().toISOString(), level, msg, ...bindings, ...fields })}\n`);
  };
  const quiet = (): void => {};
  return {
    debug: verbose ? write('debug') : quiet,
    info: verbose ? write('info') : quiet,
    warn: write('warn'),
    error: write('error'),
    child: (more) => stderrLogger(io, verbose, { ...bindings, ...more }),
  };
}

/** Resolves on the first SIGTERM or SIGINT; `dispose()` removes the handlers. */
export function untilSignal(): { readonly received: Promise<NodeJS.Signals>; dispose(): void } {
  const signals: NodeJS.Signals[] = ['SIGTERM', 'SIGINT'];
  let on: (signal: NodeJS.Signals) => void = () => {};
  const dispose = (): void => {
    for (const s of signals) process.off(s, on);
  };
  const received = new Promise<NodeJS.Signals>((resolvePromise) => {
    on = (signal) => {
      dispose();
      resolvePromise(signal);
    };
  });
  for (const s of signals) process.on(s, on);
  return { received, dispose };
}

