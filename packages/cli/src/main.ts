// The `weft` process entry point (bin/weft.js runs this file, or dist/main.js once built).
import { runCli } from './cli.js';
import { exitWithShim } from './exit-with-shim.js';

exitWithShim(process.env['WEFT_SHIM_PID'], process.stderr);

process.exitCode = await runCli(process.argv.slice(2), {
  stdout: process.stdout,
  stderr: process.stderr,
  cwd: process.cwd(),
  env: process.env,
});
