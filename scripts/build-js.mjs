// Builds each package directory named on the command line with tsup's API and the package's own
// tsup.config.ts, but without declarations (`dts: false`: esbuild only, seconds instead of minutes) —
// the JavaScript `weft` runs when its build is fresh (packages/cli/bin/built-code.js). Used by
// scripts/test.mjs before the tests, and by the CLI tests' built copy (helpers/built-tree.ts).
// tsup reads its config, package.json and tsconfig from the working directory, so each build runs with
// the directory as cwd — in a child process of its own, never in a test's process — and esbuild, which
// takes its working directory once, when loaded, is told it per build.
// Each built .js file is dated to the newest source the build began with, not to when it was written: a
// source saved while the build runs is then newer than the build, so the build counts as stale (a build
// dated by its writing would hide an edit esbuild had not read). Prints nothing on success; a failed
// build exits 1 with tsup's error.
import { readdirSync, utimesSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { build } from 'tsup';
import { newestSourceMtime } from '@weft/cli/built-code';

for (const dir of process.argv.slice(2).map((arg) => resolve(arg))) {
  const sourcesAt = newestSourceMtime(dir);
  process.chdir(dir);
  await build({
    dts: false,
    silent: true,
    esbuildOptions(options) {
      options.absWorkingDir = dir;
    },
  });
  if (sourcesAt !== undefined) dateBuild(join(dir, 'dist'), sourcesAt);
}

/**
 * Sets the modification time of every .js file under `dist` to just after `ms`: file times are set in
 * whole milliseconds and read back a microsecond off, so one millisecond more keeps a build exactly as
 * new as its sources counted fresh (access time: now).
 */
function dateBuild(dist, ms) {
  const at = new Date(Math.ceil(ms) + 1);
  for (const entry of readdirSync(dist, { withFileTypes: true, recursive: true })) {
    if (entry.isFile() && entry.name.endsWith('.js')) utimesSync(join(entry.parentPath ?? entry.path, entry.name), new Date(), at);
  }
}
