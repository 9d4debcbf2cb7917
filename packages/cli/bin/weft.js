#!/usr/bin/env node
// The `weft` command. Runs the built code (dist/main.js, with plain node: no TypeScript loader) when every
// workspace package the CLI loads is built and its build is not older than its sources; otherwise re-runs
// itself on the TypeScript sources through tsx (resolved from this package, so it works from any
// directory), with stdio inherited and the child's exit code or signal passed on. So `npx weft …` works
// right after `npm ci`, with no build step, and a stale build never runs. WEFT_FROM_SOURCE=1 forces the
// sources.
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { useBuiltCode } from './built-code.js';

if (process.env.WEFT_FROM_SOURCE !== '1' && useBuiltCode(fileURLToPath(new URL('..', import.meta.url)))) {
  await import(new URL('../dist/main.js', import.meta.url).href);
} else {
  const main = fileURLToPath(new URL('../src/main.ts', import.meta.url));
  const tsx = import.meta.resolve('tsx');
  // Handlers go in before the child exists, so no signal can find the shim without them; a handler runs
  // on the event loop, after spawn() returned, so `child` is always set by then.
  const forwarded = ['SIGINT', 'SIGTERM', 'SIGHUP'];
  let child;
  const forward = (signal) => {
    child?.kill(signal);
  };
  for (const signal of forwarded) process.on(signal, forward);
  // WEFT_SHIM_PID: the child stops itself if this shim dies without passing a signal on (SIGKILL), so
  // no job master is left running behind a command its user believes killed.
  child = spawn(process.execPath, ['--conditions=source', '--import', tsx, main, ...process.argv.slice(2)], {
    stdio: 'inherit',
    env: { ...process.env, WEFT_SHIM_PID: String(process.pid) },
  });
  child.on('error', (error) => {
    process.stderr.write(`weft: cannot start ${process.execPath}: ${error.message}\n`);
    process.exitCode = 1;
  });
  child.on('exit', (code, signal) => {
    for (const s of forwarded) process.off(s, forward);
    if (signal !== null) {
      process.kill(process.pid, signal);
      return;
    }
    process.exitCode = code ?? 1;
  });
}
