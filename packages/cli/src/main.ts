// The `weft` process entry point (bin/weft.js runs this file, or dist/main.js once built).
import { runCli } from './cli.js';
import { exitWithShim } from './exit-with-shim.js';

exitWithShim(process.env['WEFT_SHIM_PID'], process.stderr);

// The pinned AWS SDK (3.1175.0, package-lock.json) warns on every Node 20 process that creates an S3
// client — the job master and each worker — that SDK versions from 2027 on will need Node 22. Weft runs on
// Node 20 with that pinned version, so the 8-line warning is noise in every run; off unless the user set it.
process.env['AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED'] ??= 'true';

process.exitCode = await runCli(process.argv.slice(2), {
  stdout: process.stdout,
  stderr: process.stderr,
  cwd: process.cwd(),
  env: process.env,
});
