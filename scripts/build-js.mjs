// Builds each package directory named on the command line with tsup's API and the package's own
// tsup.config.ts, but without declarations (`dts: false`: esbuild only, seconds instead of minutes) —
// the JavaScript `weft` runs when its build is fresh (packages/cli/bin/built-code.js). Used by
// scripts/test.mjs before the tests, and by the CLI tests' built copy (helpers/built-tree.ts).
// tsup reads its config, package.json and tsconfig from the working directory, so each build runs with
// the directory as cwd — in a child process of its own, never in a test's process — and esbuild, which
// takes its working directory once, when loaded, is told it per build.
// Prints nothing on success; a failed build exits 1 with tsup's error.
import { resolve } from 'node:path';
import { build } from 'tsup';

for (const dir of process.argv.slice(2).map((arg) => resolve(arg))) {
  process.chdir(dir);
  await build({
    dts: false,
    silent: true,
    esbuildOptions(options) {
      options.absWorkingDir = dir;
    },
  });
}
